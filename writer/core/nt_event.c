/*
 * nt_event.c - the event path: per-thread chunk state and record encoding.
 *
 * Fast paths: the call site's cached state matches the session tag, the thread is current
 * with the TSC as the session's clock (one compare: fast_tag), its chunk has room and the
 * tick delta fits. Then an event without arguments (nt_emit_) is one clock read and one
 * store, and one with 1 to 4 fixed-size arguments (nt_emit_fixedN_) a clock read and a store
 * per value. Everything else (first event of a thread or call site, full chunk, long gap,
 * strings and other arguments) goes through write_event().
 *
 * Compact records (format/nt_record.h): the fast paths write an event as a 4-byte head and
 * 4-byte values when its call site index is at most 1023, its delta under 2^14 ticks and,
 * with arguments, the site's CallSiteArgs record (nt_intern.c) declares the types this call
 * passes and every value fits 32 bits; otherwise as before, 8-byte word 0 and ArgHeaders.
 * Only the 4-byte store of a compact head publishes at a 4-byte boundary: every longer record
 * starts 8-aligned (a Pad fills the gap), so one aligned store publishes it as before.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nt_internal.h"
#include "format/nt_arg_encode.h"

typedef struct nt_thread_state {
	uint8_t *cur; /* next record */
	uint8_t *end; /* end of the owned chunk; cur == end == NULL when none */
	uint64_t last_ticks;
	nt_chunk_header *chunk;
	uint32_t events;      /* events in the owned chunk */
	uint32_t index;       /* ThreadRecord.index in the session `tag` */
	uint32_t tag;
	uint32_t fast_tag;    /* `tag` when the fast paths may write (the session's clock is the
				 TSC), else 0: one compare tests both */
	uint64_t chunk_first; /* this thread's event ordinal at the owned chunk's first event */
	uint64_t dropped;     /* events dropped since then, not yet covered by a chunk */
	uint32_t clears;      /* nt_S.rolling_clears when the ordinals last restarted */
	char name[32];        /* set by nt_thread_set_name: kept for later sessions */
	nt_block_tally blocked; /* waits for the saver not yet in a BlockedRecord */
	/* Nonzero while reserve_record changes chunks (closes, claims, waits for the saver): an
	 * event a signal handler makes meanwhile is dropped, not recorded in the closed chunk
	 * or in one of its own that the interrupted claim would then orphan. */
	volatile sig_atomic_t changing_chunk;
} nt_thread_state;

/* initial-exec: a TLS access is one %fs-relative load, no __tls_get_addr call. */
static __thread nt_thread_state nt_T __attribute__((tls_model("initial-exec")));

/* The fast path's clock: the TSC when the session uses it; a session without it takes the
 * slow path, which reads the session's clock itself. Tested before the read, not as a zero
 * reading after it: one test and branch fewer on every event. */
static inline int fast_clock_ok(void)
{
#if NT_HAVE_TSC
	return __builtin_expect(nt_clock_use_tsc_, 1);
#else
	return 1;
#endif
}

static inline uint64_t fast_ticks(void)
{
#if NT_HAVE_TSC
	return __rdtsc();
#else
	return nt_clock_ticks();
#endif
}

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void release_owned_chunk(nt_thread_state *t)
{
	if (t->chunk != NULL && t->tag == nt_load_32(&nt_session_tag_))
		nt_chunk_close(t->chunk, t->events);
	t->chunk = NULL;
	t->cur = t->end = NULL;
	t->events = 0;
}

void nt_thread_release(void)
{
	release_owned_chunk(&nt_T);
}

static void on_thread_exit(void *unused)
{
	(void)unused;
	/* A thread that exits must close its chunk, or circular mode could never reuse the
	 * slot. */
	release_owned_chunk(&nt_T);
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

/* Writes a Thread record for `index`; caller holds intern_lock. */
static int write_thread_record(uint32_t index, const char *name)
{
	size_t len = strnlen(name, NT_MAX_THREAD_NAME_LENGTH);
	uint32_t words = 3 + nt_words_for_bytes((uint32_t)len);
	nt_thread_record *rec = nt_durable_reserve(words * 8);
	if (rec == NULL)
		return 0;
	/* Only the words after the first are written here: the first (kind, size, name
	 * length, index) is stored once, to publish the record. */
	rec->pid = (uint32_t)getpid();
	rec->tid = (uint32_t)syscall(SYS_gettid);
	rec->process = 0;
	rec->reserved0 = 0;
	memcpy(rec + 1, name, len);
	nt_publish_word(rec, nt_record_word(NT_KIND_THREAD, words, (uint32_t)len, index));
	return 1;
}

static int register_thread(nt_thread_state *t, uint32_t tag)
{
	char name[32] = { 0 };
	if (t->name[0] != '\0')
		memcpy(name, t->name, sizeof(name));
	else if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0)
		strcpy(name, "thread");
	pthread_once(&exit_key_once, make_exit_key);

	pthread_mutex_lock(&nt_S.intern_lock);
	uint32_t index = nt_S.next_thread + 1;
	int ok = write_thread_record(index, name);
	if (ok)
		nt_S.next_thread = index;
	pthread_mutex_unlock(&nt_S.intern_lock);
	if (!ok)
		return 0;
	pthread_setspecific(exit_key, t);
	t->index = index;
	t->tag = tag;
	t->fast_tag = fast_clock_ok() ? tag : 0;
	t->chunk = NULL;
	t->cur = t->end = NULL;
	t->events = 0;
	t->chunk_first = 0;
	t->dropped = 0;
	t->clears = nt_S.rolling_clears;
	t->blocked = (nt_block_tally){ 0 };
	t->changing_chunk = 0; /* a fork() child of a thread a signal interrupted there */
	return 1;
}

/* Makes the thread current for `tag`: a new generation registers it again; a new run of the
 * same generation keeps its Thread record and forgets the chunk it held (the start closed
 * it), continuing its event ordinals unless the run cleared the events. */
static int thread_join(nt_thread_state *t, uint32_t tag)
{
	if (t->index == 0 || t->tag == 0 ||
	    (t->tag >> NT_TAG_GEN_SHIFT) != (tag >> NT_TAG_GEN_SHIFT))
		return register_thread(t, tag);
	if (t->clears != nt_S.rolling_clears) {
		t->chunk_first = 0;
		t->dropped = 0;
		t->clears = nt_S.rolling_clears;
		t->blocked = (nt_block_tally){ 0 };
	} else {
		t->chunk_first += t->events;
	}
	t->events = 0;
	t->chunk = NULL;
	t->cur = t->end = NULL;
	t->tag = tag;
	t->fast_tag = fast_clock_ok() ? tag : 0;
	return 1;
}

int nt_write_process_record(const char *sid, uint32_t flags, uint64_t start_ticks,
			    int32_t utc_offset)
{
	uint32_t tag = nt_load_acquire_32(&nt_session_tag_);
	if (tag == 0 || tag == NT_TAG_HALTED || tag == NT_TAG_FORKED)
		return 0;
	size_t len = strnlen(sid, NT_MAX_SID_LENGTH);
	uint32_t words = 4 + nt_words_for_bytes((uint32_t)len);
	pthread_mutex_lock(&nt_S.intern_lock);
	nt_process_record *rec = nt_durable_reserve(words * 8);
	if (rec != NULL) {
		rec->pid = (uint32_t)getpid();
		rec->flags = flags;
		rec->start_ticks = start_ticks;
		rec->utc_offset = utc_offset;
		rec->reserved0 = 0;
		memcpy(rec + 1, sid, len);
		nt_publish_word(rec, nt_record_word(NT_KIND_PROCESS, words, (uint32_t)len, 0));
	}
	pthread_mutex_unlock(&nt_S.intern_lock);
	return rec != NULL;
}

void nt_thread_set_name(const char *name)
{
	nt_thread_state *t = &nt_T;
	uint32_t tag = nt_load_acquire_32(&nt_session_tag_);
	if (name == NULL || name[0] == '\0')
		return;
	snprintf(t->name, sizeof(t->name), "%s", name);
	if (tag == 0 || tag == NT_TAG_HALTED || tag == NT_TAG_FORKED)
		return; /* a fork() child's pending session names the thread when it joins */
	if (t->tag != tag && !thread_join(t, tag))
		return;
	pthread_mutex_lock(&nt_S.intern_lock);
	write_thread_record(t->index, name);
	pthread_mutex_unlock(&nt_S.intern_lock);
}

/* After a compact record the thread's next record is 4 bytes past a word: a record of 8
 * bytes or more starts 8-aligned behind a Pad (format/nt_record.h). The pad bytes that
 * `p` needs; the caller checks its room for them and then calls put_pad. */
static inline uintptr_t pad_before(const uint8_t *p)
{
	return (uintptr_t)p & 4u;
}

static inline uint8_t *put_pad(uint8_t *p, uintptr_t pad)
{
	if (pad != 0)
		nt_store_release_32((uint32_t *)(void *)p, NT_COMPACT_PAD);
	return p + pad;
}

/* At the start of a chunk just claimed (8-aligned, `room` bytes free): the thread's waits
 * for the saver since its last BlockedRecord, when there were any and the record leaves
 * `need` bytes for the event. Returns where the event goes. */
static uint8_t *put_blocked(nt_thread_state *t, uint8_t *p, uintptr_t room, uint32_t need)
{
	if (t->blocked.waits == 0 || room < sizeof(nt_blocked_record) + need)
		return p;
	nt_blocked_record *b = (nt_blocked_record *)(void *)p;
	b->timeouts = t->blocked.timeouts;
	b->reserved1 = 0;
	b->blocked_ns = t->blocked.ns;
	/* Word 0 holds kind, size and `waits`: its store publishes the record. */
	nt_publish_word(b, nt_record_word(NT_KIND_BLOCKED, sizeof(*b) / 8, 0, t->blocked.waits));
	t->blocked = (nt_block_tally){ 0 };
	return p + sizeof(*b);
}

/* Makes room for `bytes` (plus a Timestamp escape if the delta does not fit) in the thread's
 * chunk, claiming a new chunk when needed. Returns where the record goes and sets *delta,
 * or NULL when the event must be dropped, with *reason set to the drop counter to charge. */
static uint8_t *reserve_record(nt_thread_state *t, uint32_t tag, uint32_t bytes, uint64_t now,
			       uint32_t *delta, uint64_t **reason)
{
	if (__builtin_expect(t->changing_chunk, 0)) {
		/* A signal handler's event while this thread changes chunks (a blocking wait
		 * lasts up to its timeout): dropped and counted; its ordinal goes with
		 * t->dropped into the next chunk's first. */
		t->dropped++;
		*reason = nt_S.dropped_rolling_full;
		return NULL;
	}
	if (t->tag != tag && !thread_join(t, tag)) {
		*reason = nt_S.dropped_durable_full;
		return NULL;
	}
	uint64_t d = now - t->last_ticks;
	uint32_t pad = (uint32_t)pad_before(t->cur);
	uint32_t need = pad + bytes + (d > UINT32_MAX ? (uint32_t)sizeof(nt_timestamp_record) : 0);
	if (t->cur == NULL || (uintptr_t)t->end - (uintptr_t)t->cur < need) {
		t->changing_chunk = 1;
		nt_chunk_header *old = t->chunk;
		t->chunk = NULL;
		t->cur = t->end = NULL;
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* a handler sees no chunk from here */
		if (old != NULL)
			nt_chunk_close(old, t->events);
		/* The new chunk's first event is this one: every event before it, recorded or
		 * dropped, has an ordinal below, so the reader sees each loss as a gap. */
		uint64_t first = t->chunk_first + t->events + t->dropped;
		t->chunk_first = first;
		t->events = 0;
		t->dropped = 0;
		nt_chunk_header *h = nt_chunk_claim(t->index, now, first);
		if (h == NULL && nt_S.block_timeout_ns != 0)
			h = nt_chunk_claim_wait(t->index, now, first, tag, &t->blocked);
		if (h == NULL) {
			t->dropped++; /* this event */
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			t->changing_chunk = 0;
			*reason = nt_no_chunk_reason();
			return NULL;
		}
		t->chunk = h;
		t->end = (uint8_t *)h + nt_S.chunk_size;
		t->cur = (uint8_t *)(h + 1);
		if (__builtin_expect(t->blocked.waits != 0, 0))
			t->cur = put_blocked(t, t->cur, (uintptr_t)(t->end - t->cur), need);
		t->last_ticks = now;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->changing_chunk = 0;
		d = 0;
		pad = 0;
	}
	t->cur = put_pad(t->cur, pad);
	if (d > UINT32_MAX) {
		nt_timestamp_record *ts = (nt_timestamp_record *)(void *)t->cur;
		ts->ticks = now;
		nt_publish_word(ts, nt_record_word(NT_KIND_TIMESTAMP, 2, 0, 0));
		t->cur += sizeof(*ts);
		d = 0;
	}
	*delta = (uint32_t)d;
	return t->cur;
}

static void commit_record(nt_thread_state *t, uint8_t *rec, uint32_t bytes, uint64_t now,
			  uint64_t first_word)
{
	t->cur = rec + bytes;
	t->last_ticks = now;
	t->events++;
	nt_publish_word(rec, first_word);
}

static uint64_t event_word(unsigned kind, uint32_t words, uint32_t site_state, uint32_t delta)
{
	return nt_record_word(kind, words, site_state & NT_SITE_INDEX_MASK, delta);
}

static int fits_int32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* Bytes each argument takes; strings get what is left of the record budget, in order. */
static uint32_t size_args(const nt_arg *args, uint32_t n, uint32_t head, uint32_t *str_len,
			  int *truncated)
{
	uint32_t fixed = head;
	for (uint32_t i = 0; i < n; i++) {
		switch (args[i].type) {
		case NT_ARG_INT64:
			fixed += fits_int32(args[i].value.i64) ? 8 : 16;
			break;
		case NT_ARG_UINT64:
			fixed += args[i].value.u64 <= UINT32_MAX ? 8 : 16;
			break;
		case NT_ARG_DOUBLE:
		case NT_ARG_POINTER:
			fixed += 16;
			break;
		default: /* bool, string header, and unknown types recorded as None */
			fixed += 8;
			break;
		}
	}
	uint32_t budget = fixed < NT_MAX_RECORD_BYTES ? NT_MAX_RECORD_BYTES - fixed : 0;
	uint32_t total = fixed;
	for (uint32_t i = 0; i < n; i++) {
		if (args[i].type == NT_ARG_STRING_LIST) {
			/* Whole elements while they fit; str_len is the payload bytes kept. */
			const char *const *v = args[i].value.ptr;
			uint32_t used = 0;
			for (; v != NULL && *v != NULL; v++) {
				uint32_t len = (uint32_t)strnlen(*v, budget);
				if (nt_words_for_bytes(used + 4 + len) * 8 > budget) {
					*truncated = 1; /* this and later elements do not fit */
					break;
				}
				used += 4 + len;
			}
			uint32_t padded = nt_words_for_bytes(used) * 8;
			str_len[i] = used;
			budget -= padded;
			total += padded;
			continue;
		}
		if (args[i].type != NT_ARG_STRING)
			continue;
		const char *s = args[i].value.str ? args[i].value.str : "(null)";
		uint32_t len = (uint32_t)strnlen(s, budget);
		uint32_t padded = nt_words_for_bytes(len) * 8;
		if (padded > budget) { /* keep whole words inside the budget */
			len = budget & ~7u;
			padded = len;
		}
		if (s[len] != '\0')
			*truncated = 1;
		str_len[i] = len;
		budget -= padded;
		total += padded;
	}
	return total;
}

/* A string-list argument at p (the generic path only): its items up to `bytes`, zero
 * padding to a whole word. Returns the byte after it. */
static uint8_t *put_string_list_arg(uint8_t *p, uint32_t name, const char *const *v,
				    uint32_t bytes)
{
	uint32_t padded = nt_words_for_bytes(bytes) * 8, count = 0;
	uint8_t *at = p + 8;
	for (; v != NULL && *v != NULL && (uint32_t)(at - (p + 8)) < bytes; v++, count++)
		at = nt_arg_put_item(at, *v, (uint32_t)strlen(*v));
	memset(at, 0, padded - (uint32_t)(at - (p + 8)));
	*(uint64_t *)(void *)p = nt_arg_string_list_head(name, count, bytes);
	return p + 8 + padded;
}

static uint8_t *encode_args(uint8_t *p, const nt_callsite *site, const nt_arg *args, uint32_t n,
			    const uint32_t *str_len)
{
	for (uint32_t i = 0; i < n; i++) {
		const nt_arg *a = &args[i];
		uint64_t *q = (uint64_t *)(void *)p;
		if (a->type == NT_ARG_STRING) {
			const char *s = a->value.str ? a->value.str : "(null)";
			p = (uint8_t *)nt_arg_put_string(q, site->arg_names[i], s, str_len[i]);
		} else if (a->type == NT_ARG_STRING_LIST) {
			p = put_string_list_arg(p, site->arg_names[i], a->value.ptr, str_len[i]);
		} else {
			p = (uint8_t *)nt_arg_put_fixed(q, a->type, site->arg_names[i], a->value.u64);
		}
	}
	return p;
}

/* Every event with arguments, every Complete event, and every fast-path miss. The clock is
 * read here, once the event is known to be recorded, unless the caller (Complete) already
 * read it: `now` is then that reading, else 0. `word1` is the second word of a 16-byte head
 * (nt_event_head_bytes): a Complete's duration, an async or flow event's id. */
static void write_event(nt_callsite *site, unsigned kind, uint64_t now, uint64_t word1,
			const nt_arg *args, uint32_t n)
{
	uint32_t st = nt_load_acquire_32(&site->state);
	uint32_t tag = nt_load_acquire_32(&nt_session_tag_);
	/* Tag 0 (not recording) must go through resolve too: a never-registered site's state 0
	 * would otherwise look current and write into an arena that no session owns. */
	if (tag == 0 || tag == NT_TAG_HALTED || !nt_site_current(st, tag)) {
		st = nt_callsite_resolve(site, args);
		if (!(st & NT_SITE_ENABLED))
			return; /* disabled category, or dropped and counted */
		tag = nt_load_acquire_32(&nt_session_tag_); /* a fork() child's just started */
	}
	if (now == 0)
		now = nt_clock_ticks();
	uint32_t head = nt_event_head_bytes(kind);
	uint32_t str_len[n > 0 ? n : 1];
	int truncated = 0;
	uint32_t bytes = n ? size_args(args, n, head, str_len, &truncated) : head;
	nt_thread_state *t = &nt_T;
	if (bytes > NT_MAX_RECORD_BYTES) {
		/* More fixed-size arguments than one record holds: no room, like a full buffer. */
		nt_count_drop(nt_S.dropped_rolling_full, 1);
		if (t->tag == tag)
			t->dropped++;
		return;
	}
	uint32_t delta;
	uint64_t *reason = NULL;
	uint8_t *rec = reserve_record(t, tag, bytes, now, &delta, &reason);
	if (rec == NULL) {
		nt_count_drop(reason, 1);
		return;
	}
	if (head == 16)
		memcpy(rec + 8, &word1, 8);
	if (n)
		encode_args(rec + head, site, args, n, str_len);
	commit_record(t, rec, bytes, now, event_word(kind, bytes / 8, st, delta));
	if (truncated)
		nt_add_64(nt_S.values_truncated, 1);
}

/* Everything but the fast path, out of line: a tail call from nt_emit_, so the fast path
 * needs no stack frame and saves no register (it would, for a call it returns from, or for
 * clock_gettime's fallback inlined beside it). */
static __attribute__((noinline, cold)) void emit_slow(nt_callsite *site, unsigned kind)
{
	if (nt_kind_is_plain_event(kind))
		write_event(site, kind, 0, 0, NULL, 0);
}

/* An event without arguments that is not compact (a site past 1023, a gap of 2^14 ticks or
 * more, a kind no compact code carries, or after the chunk's last 4 bytes), read at `now`
 * with site state `st` by nt_emit_: one 8-byte store (behind a Pad after a compact record)
 * when it can, else the generic path. Out of line, so that nt_emit_'s compact path saves
 * fewer registers; it reads no clock again (the clock read is most of an event's cost). */
static __attribute__((noinline)) void emit_wide(nt_callsite *site, unsigned kind, uint32_t st,
						uint64_t now)
{
	if (!nt_kind_is_plain_event(kind))
		return;
	nt_thread_state *t = &nt_T;
	uint8_t *p = t->cur;
	uint64_t delta = now - t->last_ticks;
	uintptr_t pad = pad_before(p);
	if ((uintptr_t)t->end - (uintptr_t)p >= pad + 8 && delta <= UINT32_MAX) {
		p = put_pad(p, pad);
		t->cur = p + 8;
		t->last_ticks = now;
		t->events++;
		/* A one-word record is published by this single store. */
		nt_store_release_64((uint64_t *)(void *)p, event_word(kind, 1, st, (uint32_t)delta));
		return;
	}
	emit_slow(site, kind);
}

/* The thread, when an event of `site` (its state in *st) may take a fast path: the site and
 * the thread are current in this session, whose clock is the TSC; else NULL. */
static inline __attribute__((always_inline)) nt_thread_state *fast_thread(const nt_callsite *site,
									  uint32_t *st)
{
	uint32_t tag = nt_load_acquire_32(&nt_session_tag_);
	*st = nt_load_acquire_32(&site->state);
	nt_thread_state *t = &nt_T;
	return nt_site_current(*st, tag) && t->fast_tag == tag ? t : NULL;
}

static inline __attribute__((always_inline)) void emit_plain(nt_callsite *site, unsigned kind)
{
	/* The compact path takes the kinds with a compact code only; emit_wide and emit_slow
	 * refuse a kind that is no event (recording it would break every walker's count). */
	uint32_t st;
	nt_thread_state *t = fast_thread(site, &st);
	if (__builtin_expect(t != NULL, 1)) {
		uint64_t now = fast_ticks();
		uint8_t *p = t->cur;
		uint64_t delta = now - t->last_ticks;
		uint32_t idx = st & NT_SITE_INDEX_MASK;
		/* One test for both ranges: a site index past 1023 or a delta of 2^14 or more
		 * leaves bits set above them. */
		if (__builtin_expect(((delta >> NT_COMPACT_DELTA_BITS) |
				      (idx >> NT_COMPACT_CALLSITE_BITS)) == 0 &&
					     (uintptr_t)p + 4 <= (uintptr_t)t->end &&
					     nt_kind_has_compact(kind),
				     1)) {
			t->cur = p + 4;
			t->last_ticks = now;
			t->events++;
			nt_store_release_32((uint32_t *)(void *)p,
					    nt_compact_head(kind, 0, idx, (uint32_t)delta));
			return;
		}
		emit_wide(site, kind, st, now);
		return;
	}
	emit_slow(site, kind);
}

void nt_emit_(nt_callsite *site, unsigned kind)
{
	emit_plain(site, kind);
}

void nt_emit_begin_(nt_callsite *site)
{
	emit_plain(site, NT_KIND_BEGIN);
}

void nt_emit_end_(nt_callsite *site)
{
	emit_plain(site, NT_KIND_END);
}

void nt_emit_instant_(nt_callsite *site)
{
	emit_plain(site, NT_KIND_INSTANT);
}

/* The fast path for n = 1 to NT_FAST_ARGS_MAX fixed-size arguments (nanotrace.h:
 * nt_fixed_desc_ builds `desc` at compile time), inlined into one exported function per n so
 * that each keeps its values in registers. Like nt_emit_, a leaf with no stack frame:
 * anything it does not handle (first use, a chunk without room for the longest encoding, a
 * long gap, no TSC, a descriptor it does not expect) returns 1 before any store, and the
 * macro sends the event down the generic path. */
/* Argument types 8 to 15 (a string, and types no macro passes) have bit 3 set: one test
 * finds them all in the descriptor. */
#define FIXED_TYPES_HIGH 0x88880000u
static int emit_fixed_strings(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1,
			      uint64_t v2, uint64_t v3);

static inline __attribute__((always_inline)) int emit_fixed(nt_callsite *site, uint32_t desc,
							    uint32_t n, uint64_t v0, uint64_t v1,
							    uint64_t v2, uint64_t v3)
{
	unsigned kind = desc & 0xffu;
	if (__builtin_expect(!nt_kind_is_plain_event(kind), 0))
		return 1; /* not from nt_fixed_desc_: the generic path judges it */
	/* The count is the function's own (n), not the descriptor's: no test needed. A string
	 * takes the path that measures it, out of line, so this one stays a leaf; it gets n in
	 * the descriptor (a tail call with the same six register arguments). */
	if (__builtin_expect((desc & FIXED_TYPES_HIGH) != 0, 0))
		return emit_fixed_strings(site, (desc & ~0x700u) | n << 8, v0, v1, v2, v3);
	uint32_t tag = nt_load_acquire_32(&nt_session_tag_);
	uint32_t st = nt_load_acquire_32(&site->state);
	nt_thread_state *t = &nt_T;
	if (__builtin_expect(!nt_site_current(st, tag) || t->fast_tag != tag, 0))
		return 1;
	uint64_t now = fast_ticks();
	uint8_t *p = t->cur;
	uint64_t delta = now - t->last_ticks;
	uintptr_t room = (uintptr_t)t->end - (uintptr_t)p;
	uint32_t idx = st & NT_SITE_INDEX_MASK;
	/* Compact: the site declared exactly these types (its entry is read within bounds even
	 * for a site past 1023, which the range test then refuses), every value fits 32 bits
	 * (a signed one once biased by 2^31), the delta 14 and the site 10. */
	uint32_t sig = nt_S.compact_args[idx & NT_COMPACT_MAX_CALLSITE];
	uint32_t sign = sig >> NT_COMPACT_SITE_SIGNED_SHIFT;
	uint64_t wide = (v0 + ((uint64_t)(sign & 1u) << 31)) |
			(n > 1 ? v1 + ((uint64_t)(sign & 2u) << 30) : 0) |
			(n > 2 ? v2 + ((uint64_t)(sign & 4u) << 29) : 0) |
			(n > 3 ? v3 + ((uint64_t)(sign & 8u) << 28) : 0);
	/* The types of this function's n arguments (whatever else the descriptor says) are
	 * exactly the site's: the same types and the same count. */
	uint32_t types = (desc >> 16) & ((1u << (4 * n)) - 1u);
	if (__builtin_expect((sig & (NT_COMPACT_SITE_VALID | 0xffffu)) ==
					     (NT_COMPACT_SITE_VALID | types) &&
				     (wide >> 32 | delta >> NT_COMPACT_DELTA_BITS | idx >> NT_COMPACT_CALLSITE_BITS) == 0 &&
				     room >= 4u + 4u * n && nt_kind_has_compact(kind),
			     1)) {
		uint32_t *q32 = (uint32_t *)(void *)(p + 4);
		q32[0] = (uint32_t)v0;
		if (n > 1)
			q32[1] = (uint32_t)v1;
		if (n > 2)
			q32[2] = (uint32_t)v2;
		if (n > 3)
			q32[3] = (uint32_t)v3;
		t->cur = p + 4 + 4 * n;
		t->last_ticks = now;
		t->events++;
		/* The values are written: the head's store publishes the record. */
		nt_store_release_32((uint32_t *)(void *)p,
				    nt_compact_head(kind, n, idx, (uint32_t)delta));
		return 0;
	}
	/* Room for the longest encoding (16 bytes an argument), whatever the descriptor says,
	 * at an 8-byte boundary (after a compact record, behind a Pad). */
	uintptr_t pad = pad_before(p);
	if (__builtin_expect(room < pad + 8u + 16u * n || (delta >> 32) != 0, 0))
		return 1;
	p = put_pad(p, pad);
	t->last_ticks = now;
	t->events++;
	uint64_t w0 = event_word(kind, 0, st, (uint32_t)delta);
	/* arg_names[] was filled before the state that made the site current (acquire). */
	const uint16_t *names = site->arg_names;
	uint64_t *q = (uint64_t *)(void *)(p + 8);
	q = nt_arg_put_fixed(q, (desc >> 16) & 15u, names[0], v0);
	if (n > 1)
		q = nt_arg_put_fixed(q, (desc >> 20) & 15u, names[1], v1);
	if (n > 2)
		q = nt_arg_put_fixed(q, (desc >> 24) & 15u, names[2], v2);
	if (n > 3)
		q = nt_arg_put_fixed(q, (desc >> 28) & 15u, names[3], v3);
	t->cur = (uint8_t *)q;
	/* The body is written: the store of word 0 (its size in words at bits 8..15) publishes
	 * the whole record. */
	nt_store_release_64((uint64_t *)(void *)p, w0 | (uint64_t)((uint8_t *)q - p) << 5);
	return 0;
}

/* The fast path with one or more NT_STR among the arguments (n in the descriptor, from
 * emit_fixed): the strings are measured first, and an event that would not fit one record
 * whole (its fixed arguments counted at their longest) is left to the generic path, which
 * truncates and counts it; otherwise the bytes are exactly the generic path's. A NULL
 * string is "(null)". Measuring and copying call strnlen and memcpy: no lock, no system
 * call, no allocation. */
static __attribute__((noinline)) int emit_fixed_strings(nt_callsite *site, uint32_t desc,
							 uint64_t v0, uint64_t v1, uint64_t v2,
							 uint64_t v3)
{
	const uint64_t v[NT_FAST_ARGS_MAX] = { v0, v1, v2, v3 };
	uint32_t n = (desc >> 8) & 7u, len[NT_FAST_ARGS_MAX] = { 0 }, max_bytes = 8;
	uint32_t tag = nt_load_acquire_32(&nt_session_tag_);
	uint32_t st = nt_load_acquire_32(&site->state);
	nt_thread_state *t = &nt_T;
	if (n > NT_FAST_ARGS_MAX || !nt_site_current(st, tag) || t->fast_tag != tag)
		return 1;
	for (uint32_t i = 0; i < n; i++) {
		if (((desc >> (16 + 4 * i)) & 15u) != NT_ARG_STRING) {
			max_bytes += 16;
			continue;
		}
		const char *s = v[i] ? (const char *)(uintptr_t)v[i] : "(null)";
		len[i] = (uint32_t)strnlen(s, NT_MAX_STRING_LENGTH + 1);
		max_bytes += 8 + nt_words_for_bytes(len[i]) * 8;
	}
	if (max_bytes > NT_MAX_RECORD_BYTES)
		return 1;
	uint64_t now = fast_ticks();
	uint8_t *p = t->cur;
	uint64_t delta = now - t->last_ticks;
	uintptr_t pad = pad_before(p);
	if ((uintptr_t)t->end - (uintptr_t)p < pad + max_bytes || (delta >> 32) != 0)
		return 1;
	p = put_pad(p, pad);
	t->last_ticks = now;
	t->events++;
	const uint16_t *names = site->arg_names;
	uint64_t *q = (uint64_t *)(void *)(p + 8);
	for (uint32_t i = 0; i < n; i++) {
		unsigned type = (desc >> (16 + 4 * i)) & 15u;
		if (type == NT_ARG_STRING)
			q = nt_arg_put_string(q, names[i],
					   v[i] ? (const char *)(uintptr_t)v[i] : "(null)", len[i]);
		else
			q = nt_arg_put_fixed(q, type, names[i], v[i]);
	}
	t->cur = (uint8_t *)q;
	nt_store_release_64((uint64_t *)(void *)p, event_word(desc & 0xffu, 0, st, (uint32_t)delta) |
							   (uint64_t)((uint8_t *)q - p) << 5);
	return 0;
}

int nt_emit_fixed1_(nt_callsite *site, uint32_t desc, uint64_t v0)
{
	return emit_fixed(site, desc, 1, v0, 0, 0, 0);
}

int nt_emit_fixed2_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1)
{
	return emit_fixed(site, desc, 2, v0, v1, 0, 0);
}

int nt_emit_fixed3_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1, uint64_t v2)
{
	return emit_fixed(site, desc, 3, v0, v1, v2, 0);
}

int nt_emit_fixed4_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1, uint64_t v2,
		    uint64_t v3)
{
	return emit_fixed(site, desc, 4, v0, v1, v2, v3);
}

/* The same for NT_INSTANT, the kind most events with arguments have: its kind is known here,
 * so the tests of it fold away (whatever kind the descriptor names). */
int nt_emit_instant_fixed1_(nt_callsite *site, uint32_t desc, uint64_t v0)
{
	return emit_fixed(site, (desc & ~0xffu) | NT_KIND_INSTANT, 1, v0, 0, 0, 0);
}

int nt_emit_instant_fixed2_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1)
{
	return emit_fixed(site, (desc & ~0xffu) | NT_KIND_INSTANT, 2, v0, v1, 0, 0);
}

int nt_emit_instant_fixed3_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1,
			    uint64_t v2)
{
	return emit_fixed(site, (desc & ~0xffu) | NT_KIND_INSTANT, 3, v0, v1, v2, 0);
}

int nt_emit_instant_fixed4_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1,
			    uint64_t v2, uint64_t v3)
{
	return emit_fixed(site, (desc & ~0xffu) | NT_KIND_INSTANT, 4, v0, v1, v2, v3);
}

void nt_emit_args_(nt_callsite *site, unsigned kind, const nt_arg *args, uint32_t nargs)
{
	if (!nt_kind_is_plain_event(kind))
		return;
	write_event(site, kind, 0, 0, args, nargs);
}

/* nt_emit_id_'s generic path, out of line and tail-called like emit_slow: the fast path then
 * saves no register. */
static __attribute__((noinline, cold)) void emit_id_slow(nt_callsite *site, unsigned kind,
							  uint64_t id)
{
	if (nt_kind_has_id(kind))
		write_event(site, kind, 0, id, NULL, 0);
}

/* An async or flow event without arguments: like emit_wide, one 16-byte record (the id, then
 * word 0 published by its store) when the site and the thread are current on a TSC session,
 * the chunk has room and the delta fits 32 bits; else the generic path. */
void nt_emit_id_(nt_callsite *site, unsigned kind, uint64_t id)
{
	uint32_t st;
	nt_thread_state *t = fast_thread(site, &st);
	if (__builtin_expect(t != NULL, 1)) {
		uint64_t now = fast_ticks();
		uint8_t *p = t->cur;
		uint64_t delta = now - t->last_ticks;
		uintptr_t pad = pad_before(p);
		if (__builtin_expect((uintptr_t)t->end - (uintptr_t)p >= pad + 16 &&
					     (delta >> 32) == 0 && nt_kind_has_id(kind),
				     1)) {
			p = put_pad(p, pad);
			t->cur = p + 16;
			t->last_ticks = now;
			t->events++;
			((uint64_t *)(void *)p)[1] = id;
			nt_store_release_64((uint64_t *)(void *)p,
					    event_word(kind, 2, st, (uint32_t)delta));
			return;
		}
	}
	emit_id_slow(site, kind, id);
}

void nt_emit_id_args_(nt_callsite *site, unsigned kind, uint64_t id, const nt_arg *args,
		      uint32_t nargs)
{
	if (nt_kind_has_id(kind))
		write_event(site, kind, 0, id, args, nargs);
}

void nt_emit_complete_(nt_callsite *site, uint64_t start_ticks, const nt_arg *args,
		       uint32_t nargs)
{
	uint64_t now = nt_clock_ticks();
	write_event(site, NT_KIND_COMPLETE, now ? now : 1, now > start_ticks ? now - start_ticks : 0,
		    args, nargs);
}

uint64_t nt_now(void)
{
	return nt_clock_ticks();
}
