/* nt_render_ctf_meta.c - the CTF export's event classes and its TSDL metadata.
 *
 * A nanotrace call site has a fixed kind, name, category and argument names and types, so
 * one CTF event class per distinct such tuple is what a CTF reader expects (Trace2 messages
 * of one call site may carry different keys: each shape is a class of its own). Classes
 * are found by content, so the same call site in several processes of a bundle is one
 * class; a cache keyed by the reader's pointers skips building the content key for an
 * event whose call site was seen before. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "nt_render_ctf.h"
#include "nt_render_util.h"
#include "reader/common/nt_grow.h"

ctf_arg_kind ctf_arg_kind_of(uint8_t t)
{
	switch (t) {
	case NT_ARG_INT32: return CTF_ARG_I32;
	case NT_ARG_UINT32: return CTF_ARG_U32;
	case NT_ARG_INT64: return CTF_ARG_I64;
	case NT_ARG_UINT64: return CTF_ARG_U64;
	case NT_ARG_POINTER: return CTF_ARG_HEX64;
	case NT_ARG_DOUBLE: return CTF_ARG_DOUBLE;
	case NT_ARG_BOOL: return CTF_ARG_BOOL;
	case NT_ARG_STRING_LIST: return CTF_ARG_LIST;
	default: return CTF_ARG_STRING; /* strings, JSON text, and "?" for unknown types */
	}
}

/* The reader's pointers for an event: a call site's strings are the archive's own, so equal
 * pointers mean an equal class. */
struct ctf_fast_slot {
	uint64_t hash;
	const char *name, *category;
	const char **arg_names;
	uint8_t *arg_types;
	uint32_t nargs, section, callsite, class_index;
	uint8_t kind, used;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t fast_hash(const nt_reader_event *e)
{
	uint64_t h = mix(e->kind, e->callsite);
	h = mix(h, e->thread->section);
	h = mix(h, (uintptr_t)e->name);
	h = mix(h, (uintptr_t)e->category);
	h = mix(h, e->arg_count);
	for (uint32_t i = 0; i < e->arg_count; i++)
		h = mix(mix(h, (uintptr_t)e->args[i].name), e->args[i].type);
	return h;
}

static int fast_equal(const ctf_fast_slot *s, uint64_t h, const nt_reader_event *e)
{
	if (s->hash != h || s->kind != e->kind || s->callsite != e->callsite ||
	    s->section != e->thread->section || s->name != e->name ||
	    s->category != e->category || s->nargs != e->arg_count)
		return 0;
	for (uint32_t i = 0; i < s->nargs; i++)
		if (s->arg_names[i] != e->args[i].name || s->arg_types[i] != e->args[i].type)
			return 0;
	return 1;
}

static uint64_t bytes_hash(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	return h;
}

/* kind, category NUL, name NUL, then per argument: type, name NUL. */
static char *content_key(const nt_reader_event *e, size_t *len)
{
	const char *cat = nt_event_display_category(e), *name = nt_event_display_name(e);
	size_t n = 1 + strlen(cat) + 1 + strlen(name) + 1;
	for (uint32_t i = 0; i < e->arg_count; i++)
		n += 1 + strlen(e->args[i].name) + 1;
	char *k = malloc(n), *p = k;
	if (k == NULL)
		return NULL;
	*p++ = (char)e->kind;
	p = stpcpy(p, cat) + 1;
	p = stpcpy(p, name) + 1;
	for (uint32_t i = 0; i < e->arg_count; i++) {
		*p++ = (char)e->args[i].type;
		p = stpcpy(p, e->args[i].name) + 1;
	}
	*len = n;
	return k;
}

/* TSDL's identifiers that start with an underscore. */
static int is_keyword(const char *s)
{
	return strcmp(s, "_Bool") == 0 || strcmp(s, "_Complex") == 0 ||
	       strcmp(s, "_Imaginary") == 0;
}

static int name_taken(const ctf_class *k, uint32_t upto, const char *s)
{
	if (strcmp(s, "_nt_kind") == 0 || strcmp(s, "_nt_duration_ns") == 0 ||
	    strcmp(s, "_nt_id") == 0 || is_keyword(s))
		return 1;
	for (uint32_t i = 0; i < upto; i++)
		if (strcmp(k->fields[i].name, s) == 0 ||
		    (k->fields[i].len_name && strcmp(k->fields[i].len_name, s) == 0))
			return 1;
	return 0;
}

/* "_" + the name with bytes outside [A-Za-z0-9_] as '_', then "_2", "_3" ... until unique
 * among the fields before field `upto` (and the class's own fields). */
static char *field_name(const ctf_class *k, uint32_t upto, const char *raw, const char *suffix)
{
	size_t n = strlen(raw), sl = strlen(suffix);
	char *s = malloc(n + sl + 2 + 24);
	if (s == NULL)
		return NULL;
	s[0] = '_';
	for (size_t i = 0; i < n; i++) {
		char c = raw[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '_';
		s[1 + i] = ok ? c : '_';
	}
	memcpy(s + 1 + n, suffix, sl + 1);
	size_t base = 1 + n + sl;
	for (unsigned dup = 2; name_taken(k, upto, s); dup++)
		snprintf(s + base, 24, "_%u", dup);
	return s;
}

static int fill_fields(ctf_class *k, const nt_reader_event *e)
{
	k->fields = calloc(e->arg_count ? e->arg_count : 1, sizeof(*k->fields));
	if (k->fields == NULL)
		return 0;
	k->nargs = e->arg_count;
	for (uint32_t i = 0; i < e->arg_count; i++) {
		const nt_reader_arg *a = &e->args[i];
		ctf_field *f = &k->fields[i];
		f->nt_type = a->type;
		f->name = field_name(k, i, a->name[0] ? a->name : "arg", "");
		if (f->name == NULL)
			return 0;
		if (ctf_arg_kind_of(a->type) == CTF_ARG_LIST) {
			/* named after the list, and unique counting the list's own name */
			f->len_name = field_name(k, i + 1, a->name[0] ? a->name : "arg", "_count");
			if (f->len_name == NULL)
				return 0;
		}
	}
	return 1;
}

static void class_free(ctf_class *k)
{
	for (uint32_t i = 0; k->fields && i < k->nargs; i++) {
		free(k->fields[i].name);
		free(k->fields[i].len_name);
	}
	free(k->fields);
	free(k->category);
	free(k->name);
	free(k->key);
}

/* Doubles the content table when half full; 0 when memory runs out. */
static int rehash_keys(ctf_classes *c)
{
	if ((c->n + 1) * 2 <= c->key_slots)
		return 1;
	size_t slots = c->key_slots ? c->key_slots * 2 : 64;
	uint32_t *t = calloc(slots, sizeof(*t));
	if (t == NULL)
		return 0;
	for (size_t i = 0; i < c->n; i++) {
		size_t j = c->v[i].hash & (slots - 1);
		while (t[j])
			j = (j + 1) & (slots - 1);
		t[j] = (uint32_t)i + 1;
	}
	free(c->by_key);
	c->by_key = t;
	c->key_slots = slots;
	return 1;
}

static int64_t new_class(ctf_classes *c, const nt_reader_event *e, char *key, size_t len,
			 uint64_t h)
{
	if (c->n >= UINT32_MAX - 1 || !rehash_keys(c) || !nt_grow(&c->v, &c->cap, c->n + 1,
								  sizeof(*c->v)))
		return -1;
	ctf_class *k = &c->v[c->n];
	memset(k, 0, sizeof(*k));
	k->id = (uint32_t)c->n;
	k->kind = e->kind;
	k->key = key;
	k->key_len = len;
	k->hash = h;
	k->category = strdup(nt_event_display_category(e));
	k->name = strdup(nt_event_display_name(e));
	if (k->category == NULL || k->name == NULL || !fill_fields(k, e)) {
		k->key = NULL; /* the caller frees it */
		class_free(k);
		return -1;
	}
	size_t j = h & (c->key_slots - 1);
	while (c->by_key[j])
		j = (j + 1) & (c->key_slots - 1);
	c->by_key[j] = (uint32_t)c->n + 1;
	return (int64_t)c->n++;
}

/* By content: an existing class, or a new one. */
static int64_t class_by_content(ctf_classes *c, const nt_reader_event *e)
{
	size_t len;
	char *key = content_key(e, &len);
	if (key == NULL)
		return -1;
	uint64_t h = bytes_hash(key, len);
	for (size_t j = c->key_slots ? h & (c->key_slots - 1) : 0; c->key_slots && c->by_key[j];
	     j = (j + 1) & (c->key_slots - 1)) {
		const ctf_class *k = &c->v[c->by_key[j] - 1];
		if (k->hash == h && k->key_len == len && memcmp(k->key, key, len) == 0) {
			free(key);
			return (int64_t)(c->by_key[j] - 1);
		}
	}
	int64_t idx = new_class(c, e, key, len, h);
	if (idx < 0)
		free(key);
	return idx;
}

static void fast_slot_free(ctf_fast_slot *s)
{
	free(s->arg_names);
	free(s->arg_types);
}

/* Doubles the pointer cache when half full; 0 when memory runs out. */
static int rehash_fast(ctf_classes *c)
{
	if ((c->fast_used + 1) * 2 <= c->fast_slots)
		return 1;
	size_t slots = c->fast_slots ? c->fast_slots * 2 : 256;
	ctf_fast_slot *t = calloc(slots, sizeof(*t));
	if (t == NULL)
		return 0;
	for (size_t i = 0; i < c->fast_slots; i++) {
		if (!c->fast[i].used)
			continue;
		size_t j = c->fast[i].hash & (slots - 1);
		while (t[j].used)
			j = (j + 1) & (slots - 1);
		t[j] = c->fast[i];
	}
	free(c->fast);
	c->fast = t;
	c->fast_slots = slots;
	return 1;
}

static int remember(ctf_classes *c, uint64_t h, const nt_reader_event *e, uint32_t idx)
{
	if (!rehash_fast(c))
		return 0;
	ctf_fast_slot s = { .hash = h, .name = e->name, .category = e->category,
			    .nargs = e->arg_count, .section = e->thread->section,
			    .callsite = e->callsite, .class_index = idx, .kind = e->kind, .used = 1 };
	size_t n = e->arg_count ? e->arg_count : 1;
	s.arg_names = malloc(n * sizeof(*s.arg_names));
	s.arg_types = malloc(n);
	if (s.arg_names == NULL || s.arg_types == NULL) {
		fast_slot_free(&s);
		return 0;
	}
	for (uint32_t i = 0; i < e->arg_count; i++) {
		s.arg_names[i] = e->args[i].name;
		s.arg_types[i] = e->args[i].type;
	}
	size_t j = h & (c->fast_slots - 1);
	while (c->fast[j].used)
		j = (j + 1) & (c->fast_slots - 1);
	c->fast[j] = s;
	c->fast_used++;
	return 1;
}

int64_t ctf_class_of(ctf_classes *c, const nt_reader_event *e)
{
	uint64_t h = fast_hash(e);
	if (c->fast_slots)
		for (size_t j = h & (c->fast_slots - 1); c->fast[j].used;
		     j = (j + 1) & (c->fast_slots - 1))
			if (fast_equal(&c->fast[j], h, e))
				return c->fast[j].class_index;
	int64_t idx = class_by_content(c, e);
	if (idx < 0 || !remember(c, h, e, (uint32_t)idx))
		return -1;
	return idx;
}

void ctf_classes_free(ctf_classes *c)
{
	for (size_t i = 0; i < c->n; i++)
		class_free(&c->v[i]);
	for (size_t i = 0; i < c->fast_slots; i++)
		if (c->fast[i].used)
			fast_slot_free(&c->fast[i]);
	free(c->v);
	free(c->by_key);
	free(c->fast);
	memset(c, 0, sizeof(*c));
}

/* ---- TSDL ------------------------------------------------------------------------------ */

/* A TSDL string literal: quotes, backslashes and control bytes escaped (octal, as in C);
 * other bytes, UTF-8 included, as they are. */
static void tsdl_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\%03o", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void tsdl_uuid(FILE *out, const uint8_t u[16])
{
	for (int i = 0; i < 16; i++)
		fprintf(out, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", u[i]);
}

static const char *const field_types[] = {
	[CTF_ARG_I32] = "int32_t", [CTF_ARG_U32] = "uint32_t", [CTF_ARG_I64] = "int64_t",
	[CTF_ARG_U64] = "uint64_t", [CTF_ARG_HEX64] = "nt_hex64_t", [CTF_ARG_DOUBLE] = "double",
	[CTF_ARG_BOOL] = "nt_bool_t", [CTF_ARG_STRING] = "string",
};

/* The kinds' labels: what a viewer needs to pair Begins with Ends. */
static void write_kind_enum(FILE *out)
{
	fputs("enum nt_kind_t : uint8_t {\n\t\"begin\" = 16, \"end\" = 17, \"instant\" = 18, "
	      "\"complete\" = 19, \"counter\" = 20", out);
	for (unsigned i = 0; i < NT_T2_EVENT_COUNT; i++)
		fprintf(out, ",\n\t\"trace2_%s\" = %u", nt_t2_event_names[i], NT_KIND_T2_FIRST + i);
	/* Async spans and flows: process-scoped ids, then global ones (NT_KIND_ID_GLOBAL). */
	static const char *const id_kinds[] = { "async_begin", "async_instant", "async_end",
						"flow_begin", "flow_step", "flow_end" };
	for (unsigned g = 0; g < 2; g++)
		for (unsigned i = 0; i < 6; i++)
			fprintf(out, ",\n\t\"%s%s\" = %u", id_kinds[i], g ? "_global" : "",
				(NT_KIND_ASYNC_BEGIN + i) | (g ? NT_KIND_ID_GLOBAL : 0));
	fputs("\n};\n\n", out);
}

static void write_types(FILE *out)
{
	fputs("typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	      "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	      "typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
	      "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	      "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
	      "typealias integer { size = 64; align = 8; signed = false; base = hex; } "
	      ":= nt_hex64_t;\n"
	      "typealias floating_point { exp_dig = 11; mant_dig = 53; align = 8; } := double;\n"
	      "typealias enum : uint8_t { \"false\" = 0, \"true\" = 1 } := nt_bool_t;\n"
	      "typealias integer { size = 64; align = 8; signed = false; "
	      "map = clock.monotonic.value; } := uint64_clock_t;\n\n", out);
	write_kind_enum(out);
}

static void write_env(FILE *out, const ctf_trace_facts *f)
{
	const nt_archive_info *h = f->info;
	fputs("env {\n\tdomain = \"nanotrace\";\n\ttracer_name = \"nanotrace\";\n", out);
	fprintf(out, "\ttracer_major = %d;\n\ttracer_minor = %d;\n\ttracer_patch = %d;\n",
		NT_VERSION_MAJOR, NT_VERSION_MINOR, NT_VERSION_PATCH);
	fputs("\tproducer = ", out);
	tsdl_string(out, h->producer);
	fprintf(out, ";\n\tstart_monotonic_ns = %" PRIu64 ";\n\tstart_realtime_ns = %" PRIu64,
		h->start_monotonic_ns, h->start_realtime_ns);
	fputs(";\n\tarchive = ", out);
	tsdl_string(out, f->archive);
	fprintf(out, ";\n\tprocesses = %" PRIu32 ";\n\tevents = %" PRIu64 ";\n"
		     "\tevents_lost_in_gaps = %" PRIu64 ";\n\tevents_dropped = %" PRIu64 ";\n"
		     "\tevents_overwritten = %" PRIu64 ";\n\twraps = %" PRIu64 ";\n"
		     "\tdamage_reports = %" PRIu64 ";\n\ttimestamps_clamped = %" PRIu64 ";\n"
		     "\tnul_bytes_replaced = %" PRIu64 ";\n",
		f->processes, f->events, f->gap_events, h->events_dropped, h->events_overwritten,
		h->wraps, f->damage_reports, f->clamped, f->nul_bytes);
	fprintf(out, "\tevents_dropped_rolling_full = %" PRIu64 ";\n\tevents_dropped_durable_full = %"
		     PRIu64 ";\n\tevents_dropped_stopped = %" PRIu64 ";\n\tevents_not_saved = %"
		     PRIu64 ";\n\tevents_lost_at_stream_ends = %" PRIu64 ";\n",
		h->dropped_rolling_full, h->dropped_durable_full, h->dropped_stopped,
		h->dropped_unsaved, f->header_losses);
	if (h->blocked_waits != 0) /* streaming writers waited for the saver */
		fprintf(out, "\tblocked_waits = %" PRIu64 ";\n\tblocked_timeouts = %" PRIu64
			     ";\n\tblocked_ns = %" PRIu64 ";\n",
			h->blocked_waits, h->blocked_timeouts, h->blocked_ns);
	char stopped[256];
	if (nt_render_save_stopped(h, stopped, sizeof(stopped)) != NULL) {
		fputs("\tsaving_stopped = ", out);
		tsdl_string(out, stopped);
		fputs(";\n", out);
	}
	fputs("};\n\n", out);
}

/* The clock is CLOCK_MONOTONIC in ns (what trace-dump's times are); its offset makes
 * viewers show wall-clock times. */
static void write_clock(FILE *out, const ctf_trace_facts *f)
{
	int64_t s = f->clock_offset_ns / 1000000000, ns = f->clock_offset_ns % 1000000000;
	if (ns < 0)
		s -= 1, ns += 1000000000;
	fputs("clock {\n\tname = \"monotonic\";\n\tuuid = \"", out);
	tsdl_uuid(out, f->uuid);
	fprintf(out, "\";\n\tdescription = \"CLOCK_MONOTONIC, ns\";\n\tfreq = 1000000000;\n"
		     "\tprecision = 1;\n\toffset_s = %" PRId64 ";\n\toffset = %" PRId64 ";\n"
		     "\tabsolute = TRUE;\n};\n\n", s, ns);
}

static void write_trace_and_stream(FILE *out, const ctf_trace_facts *f)
{
	fputs("trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"", out);
	tsdl_uuid(out, f->uuid);
	fprintf(out, "\";\n\tbyte_order = %s;\n",
		__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "le" : "be");
	fputs("\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
	      "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n\n", out);
	write_env(out, f);
	write_clock(out, f);
	fputs("stream {\n\tid = 0;\n\tpacket.context := struct {\n"
	      "\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
	      "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
	      "\t\tuint64_t packet_seq_num;\n\t\tuint64_t events_discarded;\n"
	      "\t\tuint32_t pid;\n\t\tuint32_t tid;\n\t\tstring procname;\n"
	      "\t\tstring thread_name;\n\t};\n"
	      "\tevent.header := struct {\n\t\tuint32_t id;\n\t\tuint64_clock_t timestamp;\n\t};\n"
	      "\tevent.context := struct {\n\t\tint32_t _vpid;\n\t\tint32_t _vtid;\n\t};\n};\n\n",
	      out);
}

static void write_class(FILE *out, const ctf_class *k)
{
	fputs("event {\n\tname = ", out);
	/* "category:name", as LTTng names events "provider:event" */
	size_t n = strlen(k->category) + strlen(k->name) + 2;
	char *full = malloc(n);
	if (full != NULL) {
		snprintf(full, n, "%s:%s", k->category, k->name);
		tsdl_string(out, full);
		free(full);
	} else {
		tsdl_string(out, k->name);
	}
	fprintf(out, ";\n\tid = %" PRIu32 ";\n\tstream_id = 0;\n\tfields := struct {\n"
		     "\t\tenum nt_kind_t _nt_kind;\n", k->id);
	if (k->kind == NT_KIND_COMPLETE)
		fputs("\t\tuint64_t _nt_duration_ns;\n", out);
	if (nt_kind_id_scope(k->kind) != NT_ID_NONE) /* the async or flow id, in hex */
		fputs("\t\tnt_hex64_t _nt_id;\n", out);
	for (uint32_t i = 0; i < k->nargs; i++) {
		const ctf_field *f = &k->fields[i];
		ctf_arg_kind ak = ctf_arg_kind_of(f->nt_type);
		if (ak == CTF_ARG_LIST)
			fprintf(out, "\t\tuint32_t %s;\n\t\tstring %s[%s];\n", f->len_name, f->name,
				f->len_name);
		else
			fprintf(out, "\t\t%s %s;\n", field_types[ak], f->name);
	}
	fputs("\t};\n};\n\n", out);
}

int ctf_write_metadata(FILE *out, const ctf_classes *c, const ctf_trace_facts *f)
{
	fputs("/* CTF 1.8 */\n\n/* Written by nanotrace's trace-dump --format ctf. */\n\n", out);
	write_types(out);
	write_trace_and_stream(out, f);
	for (size_t i = 0; i < c->n; i++)
		write_class(out, &c->v[i]);
	if (fflush(out) != 0 || ferror(out)) {
		if (errno == 0)
			errno = EIO;
		return -1;
	}
	return 0;
}
