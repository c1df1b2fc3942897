/*
 * nt_intern.c - interning: strings and call sites get small indices once, in the durable
 * region, so events carry a 16-bit call-site reference instead of names.
 *
 * Strings are keyed by content in a ck_hs set whose keys are the StringRecords themselves
 * (header + bytes, in the durable region), so the table owns no string memory. The set is
 * sized at nt_start() for the most strings the durable region can hold, so it never grows
 * (and never allocates) while recording. Every insert happens under intern_lock; lookups
 * also take the lock: interning is a first-use slow path, and the event path never looks a
 * string up.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "nt_internal.h"

static unsigned long string_record_hash(const void *key, unsigned long seed)
{
	/* FNV-1a: interning is off the hot path and strings are short; a good spread over
	 * identifiers and paths is all that matters. */
	const nt_string_record *r = key;
	const uint8_t *p = (const uint8_t *)(r + 1);
	uint64_t h = 1469598103934665603ull ^ seed;
	for (uint32_t i = 0; i < r->length; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return (unsigned long)h;
}

static bool string_record_equal(const void *a, const void *b)
{
	const nt_string_record *x = a, *y = b;
	return x->length == y->length && memcmp(x + 1, y + 1, x->length) == 0;
}

static void *hs_malloc(size_t n)
{
	return malloc(n);
}

static void hs_free(void *p, size_t n, bool defer)
{
	(void)n;
	(void)defer; /* no concurrent readers: every access holds intern_lock */
	free(p);
}

static struct ck_malloc hs_allocator = { .malloc = hs_malloc, .free = hs_free };

nt_result nt_intern_init(void)
{
	if (nt_S.strings_ready) {
		ck_hs_destroy(&nt_S.strings);
		nt_S.strings_ready = 0;
	}
	unsigned long max_strings = nt_S.durable_size / 16; /* smallest StringRecord */
	if (max_strings > NT_MAX_STRING_INDEX)
		max_strings = NT_MAX_STRING_INDEX;
	/* ck_hs grows once it is half full: four times the entries keeps it from growing. */
	if (!ck_hs_init(&nt_S.strings, CK_HS_MODE_OBJECT | CK_HS_MODE_SPMC, string_record_hash,
			string_record_equal, &hs_allocator, max_strings * 4, 0x6e74u)) {
		nt_set_error("nt_start: cannot allocate the string table (%lu entries)",
			     max_strings * 4);
		return NT_ERR_NO_MEMORY;
	}
	nt_S.strings_ready = 1;
	nt_S.next_string = 0;
	nt_S.next_callsite = 0;
	return NT_OK;
}

uint32_t nt_intern_string(const char *s)
{
	if (s == NULL)
		s = "(null)";
	size_t len = strnlen(s, NT_MAX_STRING_LENGTH);
	union {
		nt_string_record rec;
		uint8_t bytes[sizeof(nt_string_record) + NT_MAX_STRING_LENGTH];
	} key;
	key.rec.kind = NT_KIND_STRING;
	key.rec.length = (uint16_t)len;
	key.rec.index = 0;
	memcpy(key.bytes + sizeof(nt_string_record), s, len);

	unsigned long hash = CK_HS_HASH(&nt_S.strings, string_record_hash, &key.rec);
	const nt_string_record *found = ck_hs_get(&nt_S.strings, hash, &key.rec);
	if (found != NULL)
		return found->index;

	if (nt_S.next_string >= NT_MAX_STRING_INDEX) {
		nt_add_64(nt_S.durable_dropped, 1);
		nt_session_halt(NT_FINAL_INDEX_FULL);
		return 0;
	}
	uint32_t words = 1 + nt_words_for_bytes((uint32_t)len);
	nt_string_record *rec = nt_durable_reserve(words * 8);
	if (rec == NULL)
		return 0;
	memcpy(rec + 1, s, len); /* the region is zeroed, so the tail padding already is */
	uint32_t index = ++nt_S.next_string;
	/* length and index live in the first word, which is stored once, to publish. */
	nt_publish_word(rec, nt_record_word(NT_KIND_STRING, words, (uint32_t)len, index));
	ck_hs_put(&nt_S.strings, hash, rec);
	return index;
}

/* The characters a category pattern may hold besides a final '*': those of the category
 * names the matcher compares byte for byte. Anything else (a space, a second '*', an empty
 * item from ",,") is a typo that would silently select nothing, so it is refused. */
static int category_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("_-.:/+", c) != NULL;
}

nt_result nt_category_patterns_check(const char *who, const char *patterns)
{
	if (patterns == NULL || patterns[0] == '\0')
		return NT_OK; /* no list: nt_config's "" selects nothing, an extra "" adds nothing */
	const char *item = patterns;
	for (const char *p = patterns;; p++) {
		if (*p == ',' || *p == '\0') {
			if (p == item) {
				nt_set_error("%s: category pattern \"%s\" has an empty item at position "
					     "%zu", who, patterns, (size_t)(p - patterns));
				return NT_ERR_INVALID_ARGUMENT;
			}
			if (*p == '\0')
				return NT_OK;
			item = p + 1;
		} else if (*p == '*' ? p[1] != ',' && p[1] != '\0' : !category_char_ok(*p)) {
			nt_set_error("%s: category pattern \"%s\" has '%c' at position %zu: an item is "
				     "a name of letters, digits and _-.:/+, optionally ending in '*', "
				     "or '*' alone", who, patterns, *p, (size_t)(p - patterns));
			return NT_ERR_INVALID_ARGUMENT;
		}
	}
}

int nt_category_matches(const char *category)
{
	const char *p = nt_S.categories;
	if (p == NULL)
		return 1;
	if (category == NULL)
		category = "(null)";
	size_t clen = strlen(category);
	while (*p != '\0') {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == 1 && p[0] == '*')
			return 1;
		if (n > 0 && p[n - 1] == '*') {
			if (clen >= n - 1 && memcmp(category, p, n - 1) == 0)
				return 1;
		} else if (n == clen && memcmp(category, p, n) == 0) {
			return 1;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* What a CallSiteArgs record would declare for `site` (nt_internal.h: NT_COMPACT_SITE_*), or
 * 0 when its events cannot be compact: more arguments than the fast path takes, or a type
 * whose value is not an integer or a bool. */
static uint32_t compact_signature(const nt_callsite *site, const nt_arg *args)
{
	if (site->arg_count == 0 || site->arg_count > NT_FAST_ARGS_MAX)
		return 0;
	uint32_t types = 0, sign = 0;
	for (uint32_t i = 0; i < site->arg_count; i++) {
		uint32_t t = args[i].type;
		if (t != NT_ARG_INT64 && t != NT_ARG_UINT64 && t != NT_ARG_BOOL)
			return 0;
		types |= t << (4 * i);
		sign |= (uint32_t)(t == NT_ARG_INT64) << i;
	}
	return NT_COMPACT_SITE_VALID | sign << NT_COMPACT_SITE_SIGNED_SHIFT | types;
}

/* The CallSiteArgs record of call site `index` (after its CallSite record), and the table
 * entry that lets the fast path write its events compact. Returns 0 when the durable region
 * is full. */
static int write_callsite_args(const nt_callsite *site, const nt_arg *args, uint32_t index)
{
	uint32_t sig = index <= NT_COMPACT_MAX_CALLSITE ? compact_signature(site, args) : 0;
	if (index <= NT_COMPACT_MAX_CALLSITE)
		nt_S.compact_args[index] = 0;
	if (sig == 0)
		return 1;
	uint32_t n = site->arg_count;
	uint32_t words = 1 + nt_words_for_bytes(n * (uint32_t)sizeof(nt_arg_slot));
	nt_callsite_args_record *rec = nt_durable_reserve(words * 8);
	if (rec == NULL)
		return 0;
	nt_arg_slot *slot = (nt_arg_slot *)(void *)(rec + 1);
	for (uint32_t i = 0; i < n; i++) /* the region is zeroed: padding and reserved are 0 */
		slot[i] = (nt_arg_slot){ site->arg_names[i], args[i].type, 0 };
	nt_publish_word(rec, nt_record_word(NT_KIND_CALLSITE_ARGS, words, index, n));
	nt_S.compact_args[index] = sig;
	return 1;
}

static uint32_t register_callsite(nt_callsite *site, const nt_arg *args, uint32_t tag)
{
	tag &= ~(uint32_t)NT_TAG_EPOCH_MASK; /* the low bits of a site state hold its index */
	if (!site->always && !nt_category_matches(site->category))
		return tag & ~(uint32_t)NT_SITE_ENABLED;

	uint32_t category = nt_intern_string(site->category);
	uint32_t name = category ? nt_intern_string(site->name) : 0;
	uint32_t file = name ? nt_intern_string(site->file) : 0;
	if (file == 0)
		return 0;
	for (uint32_t i = 0; i < site->arg_count; i++) {
		/* Argument names are fixed per call site, so the first call's names are cached
		 * for all later calls. */
		uint32_t idx = nt_intern_string(args[i].name);
		if (idx == 0)
			return 0;
		site->arg_names[i] = (uint16_t)idx;
	}
	if (nt_S.next_callsite >= NT_MAX_CALLSITE_INDEX) {
		nt_add_64(nt_S.durable_dropped, 1);
		nt_session_halt(NT_FINAL_INDEX_FULL);
		return 0;
	}
	nt_callsite_record *rec = nt_durable_reserve(sizeof(*rec));
	if (rec == NULL)
		return 0;
	uint32_t index = ++nt_S.next_callsite;
	rec->category = category; /* index and line are in the first word, stored to publish */
	rec->name = name;
	rec->file = file;
	rec->repo = site->repo;
	nt_publish_word(rec, nt_record_word(NT_KIND_CALLSITE, 3, index, site->line));
	if (!write_callsite_args(site, args, index))
		return 0;
	return tag | index;
}

uint32_t nt_callsite_resolve(nt_callsite *site, const nt_arg *args)
{
	uint32_t tag = nt_load_acquire_32(&nt_session_tag_);
	uint32_t st = nt_load_acquire_32(&site->state);
	if (tag == NT_TAG_FORKED) {
		/* A fork() child's first event starts its own session (nt_fork.c); one that
		 * could not start counts the event as not recorded. */
		if (nt_fork_child_first_event() <= 0)
			return 0;
		tag = nt_load_acquire_32(&nt_session_tag_);
		st = nt_load_acquire_32(&site->state);
		if (tag == NT_TAG_FORKED)
			return 0;
	}
	if (tag == 0 || tag == NT_TAG_HALTED) {
		/* An event that raced nt_finish(), or came after recording halted. Before the
		 * first nt_start() there are no counters (and the macros never get here). */
		uint64_t *all = __atomic_load_n(&nt_S.events_dropped, __ATOMIC_ACQUIRE);
		if (all != NULL) {
			nt_add_64(tag == 0 ? nt_S.dropped_stopped : nt_S.dropped_durable_full, 1);
			nt_add_64(all, 1);
		}
		return 0;
	}
	if (nt_site_registered(st, tag))
		return st; /* registered in this generation (enabled or not) */

	pthread_mutex_lock(&nt_S.intern_lock);
	st = nt_load_32(&site->state);
	if (!nt_site_registered(st, tag)) {
		uint32_t prev = st;
		st = register_callsite(site, args, tag);
		if (st != 0) {
			if (prev == 0) { /* first success ever: listed for generation wraps */
				site->next_registered = nt_S.sites;
				nt_S.sites = site;
			}
			nt_store_release_32(&site->state, st); /* after arg_names[] */
		}
	}
	pthread_mutex_unlock(&nt_S.intern_lock);
	if (st == 0)
		nt_count_drop(nt_S.dropped_durable_full, 1);
	return st;
}
