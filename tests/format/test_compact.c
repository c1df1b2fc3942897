/*
 * test_compact.c - compact records (format 2, format/nt_record.h) end to end: the fast paths
 * write 4-byte events and values-only arguments exactly when the call site, delta and values
 * fit, and the old encoding otherwise; every longer record stays 8-aligned behind a Pad;
 * what is read back is what was recorded, whatever the encoding; a hostile CallSiteArgs or
 * compact record is damage the reader reports, never a crash or a wrong value.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "tests/support/nt_cmocka.h"
#include "format/nt_record.h"
#include "tests/support/nt_test_util.h"

/* What a walk of an uncompressed Stream archive's chunks found. */
typedef struct census {
	uint64_t compact_events, wide_events, pads, misaligned;
	uint64_t record_bytes; /* every record inside the chunks, Pads included */
	uint64_t callsite_args;
} census;

/* The top level after the header: durable records and Chunk records (no CompressedChunk:
 * the sessions here save uncompressed, so that the records are what the writer wrote). */
static census take_census(const uint8_t *data, size_t size, uint64_t data_offset)
{
	census c = { 0 };
	uint64_t off = data_offset, rec;
	while (off < size && nt_top_record_frame(data, size, off, &rec) ==
				     NT_FRAME_OK) {
		unsigned kind = data[off];
		assert_int_not_equal(kind, NT_KIND_ZCHUNK);
		c.callsite_args += kind == NT_KIND_CALLSITE_ARGS;
		if (kind == NT_KIND_CHUNK) {
			const uint8_t *payload = data + off + sizeof(nt_chunk_header);
			uint64_t len = rec - sizeof(nt_chunk_header), p = 0, r;
			while (nt_chunk_record_frame(payload + p, len - p, &r) == NT_FRAME_OK) {
				uint32_t head = nt_record_head_at(payload + p);
				if (nt_head_is_compact(head)) {
					c.pads += nt_compact_kind(head) == NT_KIND_PADDING;
					c.compact_events += nt_record_is_event_at(payload + p);
				} else {
					c.wide_events += nt_record_is_event_at(payload + p);
					c.misaligned += p % 8 != 0;
				}
				c.record_bytes += r;
				p += r;
			}
		}
		off += rec;
	}
	return c;
}

static void start_plain(void)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.clock = NT_CLOCK_USE_TSC; /* the fast paths, which write compact records, need it */
	cfg.compression_level = NT_COMPRESSION_OFF;
	if (nt_start(&cfg) != NT_OK) {
		print_message("SKIP: no invariant TSC here: no fast path, no compact record\n");
		skip();
	}
}

/* Finishes the session, reads the archive back (no damage allowed) and takes its census. */
static census finish_and_count(const char *tag, test_trace *t)
{
	char path[256];
	test_tmp_path(path, sizeof(path), tag);
	assert_int_equal(nt_finish(path), NT_OK);
	assert_int_equal(test_read(path, NT_ORDER_STREAM, t), 0);
	assert_msg(t->errors == 0, "%s: %s", tag, t->first_error);
	size_t size;
	uint8_t *data = test_slurp(path, &size);
	assert_non_null(data);
	census c = take_census(data, size, t->info.data_offset);
	free(data);
	unlink(path);
	return c;
}

/* The mixed shape: Begin, Instant with two integers, End. Compact, all but the first
 * event of a call site and of a chunk, at 8 bytes per event or less (LTTng-UST: 11.34). */
static void mixed_shape_is_compact(void **state)
{
	(void)state;
	start_plain();
	const unsigned iterations = 20000;
	for (unsigned i = 0; i < iterations; i++) {
		NT_BEGIN("cmp", "zone");
		NT_INSTANT("cmp", "tick", NT_I64("i", (int64_t)i - 10000), NT_U64("u", i * 3u));
		NT_END("cmp", "zone");
	}
	test_trace t;
	census c = finish_and_count("compact-mixed", &t);
	assert_int_equal(t.n, 3 * iterations);
	for (unsigned i = 0; i < iterations; i++) {
		const test_event *e = &t.ev[3 * i + 1];
		assert_int_equal(e->kind, NT_KIND_INSTANT);
		assert_int_equal(e->nargs, 2);
		assert_string_equal(e->names[0], "i");
		assert_true(e->args[0].value.i64 == (int64_t)i - 10000);
		assert_int_equal(e->args[1].value.u64, i * 3u);
		assert_int_equal(t.ev[3 * i].kind, NT_KIND_BEGIN);
		assert_int_equal(t.ev[3 * i + 2].kind, NT_KIND_END);
	}
	assert_int_equal(c.compact_events + c.wide_events, 3 * iterations);
	/* A long stall (a page fault, a preemption) may make a few deltas too long. */
	assert_msg(c.wide_events < 3 * iterations / 100, "%llu of %u events not compact",
		   (unsigned long long)c.wide_events, 3 * iterations);
	assert_int_equal(c.misaligned, 0);
	assert_int_equal(c.callsite_args, 1);
	double per_event = (double)c.record_bytes / (3.0 * iterations);
	print_message("mixed shape: %.3f record bytes per event, %llu wide, %llu pads\n", per_event,
		      (unsigned long long)c.wide_events, (unsigned long long)c.pads);
	assert_true(per_event <= 8.0 * 1.02);
	test_trace_free(&t);
}

/* Values past 32 bits (signed: past int32), a delta of 2^14 ticks or more, a Complete event
 * (16 bytes, never compact): the old encoding, 8-aligned behind a Pad, and every value read
 * back exactly. */
static void what_does_not_fit_is_wide(void **state)
{
	(void)state;
	start_plain();
	static const int64_t edges[] = { INT32_MIN, INT32_MAX, (int64_t)INT32_MAX + 1,
					  (int64_t)INT32_MIN - 1, -1, INT64_MIN };
	static const uint64_t uedges[] = { UINT32_MAX, (uint64_t)UINT32_MAX + 1, 0, UINT64_MAX };
	const unsigned rounds = 6 * 4 * 10;
	for (unsigned k = 0; k < rounds; k++) {
		NT_BEGIN("cmp", "edge");
		NT_INSTANT("cmp", "v", NT_I64("i", edges[k % 6]), NT_U64("u", uedges[k % 4]),
			   NT_BOOL("b", k % 3));
		uint64_t start = nt_now();
		NT_COMPLETE("cmp", "whole", start);
		NT_END("cmp", "edge");
		if (k % 40 == 39) { /* a gap of at least 2^14 ticks: 20 us at any TSC rate */
			struct timespec a, b;
			clock_gettime(CLOCK_MONOTONIC, &a);
			do
				clock_gettime(CLOCK_MONOTONIC, &b);
			while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 20000);
		}
	}
	test_trace t;
	census c = finish_and_count("compact-edges", &t);
	assert_int_equal(t.n, 4 * rounds);
	uint64_t gaps_seen = 0;
	for (unsigned k = 0; k < rounds; k++) {
		const test_event *e = &t.ev[4 * k + 1];
		assert_int_equal(e->nargs, 3);
		int64_t want = edges[k % 6];
		assert_true(e->args[0].value.i64 == want);
		assert_int_equal(e->args[0].type, want == (int32_t)want ? NT_ARG_INT32 : NT_ARG_INT64);
		uint64_t uwant = uedges[k % 4];
		assert_true(e->args[1].value.u64 == uwant);
		assert_int_equal(e->args[1].type, uwant <= UINT32_MAX ? NT_ARG_UINT32 : NT_ARG_UINT64);
		assert_int_equal(e->args[2].type, NT_ARG_BOOL);
		assert_int_equal(e->args[2].value.u64 != 0, k % 3 != 0);
		assert_int_equal(t.ev[4 * k + 2].kind, NT_KIND_COMPLETE);
		if (k % 40 == 0 && k > 0)
			gaps_seen += t.ev[4 * k].time_ns - t.ev[4 * k - 1].time_ns >= 20000;
	}
	assert_int_equal(gaps_seen, rounds / 40 - 1);
	assert_int_equal(c.misaligned, 0);
	/* Compact: Begin, End, and the Instants whose values fit; wide: the Completes, the rest
	 * of the Instants, and the events after a gap. */
	assert_true(c.wide_events >= rounds + rounds / 2);
	assert_true(c.compact_events >= rounds * 2);
	assert_true(c.pads > 0);
	test_trace_free(&t);
}

/* Call sites past index 1023 cannot be named by a compact head: their events are wide. */
#define MANY_SITES 1100
static uint16_t site_names[MANY_SITES][1];
static nt_callsite sites[MANY_SITES];

static void sites_past_1023_are_wide(void **state)
{
	(void)state;
	start_plain();
	for (unsigned s = 0; s < MANY_SITES; s++) {
		sites[s] = (nt_callsite){ .category = "many", .name = "site", .file = __FILE__,
					  .line = s + 1, .arg_names = site_names[s], .arg_count = 1 };
		for (unsigned r = 0; r < 3; r++) {
			nt_arg a = nt_arg_u64("s", s);
			if (nt_emit_fixed1_(&sites[s], nt_fixed_desc_(NT_KIND_INSTANT, &a, 1), s) != 0)
				nt_emit_args_(&sites[s], NT_KIND_INSTANT, &a, 1);
		}
	}
	test_trace t;
	census c = finish_and_count("compact-sites", &t);
	assert_int_equal(t.n, 3 * MANY_SITES);
	for (unsigned i = 0; i < t.n; i++) {
		assert_int_equal(t.ev[i].line, i / 3 + 1);
		assert_int_equal(t.ev[i].args[0].value.u64, i / 3);
	}
	/* Only the first 1023 sites have CallSiteArgs records (the lines are 1-based, so is the
	 * index: the archive's other sites are none). */
	assert_int_equal(c.callsite_args, NT_COMPACT_MAX_CALLSITE);
	assert_true(c.wide_events >= (MANY_SITES - NT_COMPACT_MAX_CALLSITE) * 3);
	assert_int_equal(c.misaligned, 0);
	test_trace_free(&t);
}

/* ---- hostile input ---------------------------------------------------------------------- */

/* An archive whose one Instant site has a CallSiteArgs record, and where it is. */
static uint8_t *archive_with_args(size_t *size, uint64_t *args_at)
{
	start_plain();
	for (unsigned i = 0; i < 16; i++)
		NT_INSTANT("cmp", "h", NT_I64("a", i), NT_BOOL("b", 1));
	char path[256];
	test_tmp_path(path, sizeof(path), "compact-hostile");
	assert_int_equal(nt_finish(path), NT_OK);
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	uint64_t off = t.info.data_offset, rec;
	test_trace_free(&t);
	uint8_t *data = test_slurp(path, size);
	assert_non_null(data);
	unlink(path);
	*args_at = 0;
	while (off < *size && nt_top_record_frame(data, *size, off, &rec) ==
				      NT_FRAME_OK) {
		if (data[off] == NT_KIND_CALLSITE_ARGS)
			*args_at = off;
		off += rec;
	}
	assert_int_not_equal(*args_at, 0);
	return data;
}

typedef struct lie {
	const char *what;
	size_t at; /* bytes from the CallSiteArgs record */
	uint8_t value;
	const char *message; /* in the first error */
} lie;

/* Each lie about a CallSiteArgs record is damage where it stands; the site's compact events,
 * now without a description that matches, are damage too, each at its own offset. */
static void hostile_callsite_args(void **state)
{
	(void)state;
	static const lie lies[] = {
		{ "a type no compact value has", 8 + 2, NT_ARG_STRING, "type no compact value" },
		{ "an undefined name", 8 + 1, 0xEE, "never defined" },
		{ "no arguments", 4, 0, "0 or more than 7" },
		{ "eight arguments", 4, 8, "0 or more than 7" },
		{ "an undefined call site", 2, 0xEE, "not defined before it" },
	};
	size_t size;
	uint64_t at;
	uint8_t *orig = archive_with_args(&size, &at), *copy = malloc(size);
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		memcpy(copy, orig, size);
		copy[at + lies[i].at] = lies[i].value;
		test_trace t;
		assert_int_equal(test_read_memory(copy, size, NT_ORDER_STREAM, &t), 0);
		assert_msg(t.errors >= 1, "%s: no damage reported", lies[i].what);
		assert_msg(strstr(t.first_error, lies[i].message) != NULL, "%s: %s", lies[i].what,
			   t.first_error);
		for (size_t e = 0; e < t.n; e++) /* what is delivered is what was recorded */
			assert_true(t.ev[e].nargs == 0 || t.ev[e].args[1].value.u64 == 1);
		test_trace_free(&t);
	}
	/* A compact event whose value count is not its site's: damage at the event. */
	memcpy(copy, orig, size);
	test_trace t;
	assert_int_equal(test_read_memory(orig, size, NT_ORDER_STREAM, &t), 0);
	uint64_t ev = 0;
	for (size_t e = 1; e < t.n && ev == 0; e++) /* a long delta may make one wide */
		if (nt_head_is_compact(nt_record_head_at(copy + t.ev[e].offset)))
			ev = t.ev[e].offset;
	test_trace_free(&t);
	assert_int_not_equal(ev, 0);
	uint32_t head = nt_record_head_at(copy + ev);
	head = (head & ~(7u << 3)) | 1u << 3; /* one value, where the site has two */
	memcpy(copy + ev, &head, 4);
	assert_int_equal(test_read_memory(copy, size, NT_ORDER_STREAM, &t), 0);
	assert_true(t.errors >= 1);
	assert_non_null(strstr(t.first_error, "value count differs"));
	test_trace_free(&t);
	free(orig);
	free(copy);
}

/* A killed streaming process's saved stream repeats its arena's durable records, and its
 * last save may hold a CallSite record without the CallSiteArgs published after that save:
 * the repeated definition must keep the arguments already known, or every compact event of
 * the site reads as damage (crash_test's streaming kills hit it, 1 in 100 under TSan). */
static void a_repeated_callsite_keeps_its_arguments(void **state)
{
	(void)state;
	size_t size;
	uint64_t at;
	uint8_t *orig = archive_with_args(&size, &at);
	uint64_t site_at = 0, off = at, rec; /* its CallSite record precedes it */
	test_trace t;
	assert_int_equal(test_read_memory(orig, size, NT_ORDER_STREAM, &t), 0);
	for (off = t.info.data_offset; off < at && nt_top_record_frame(orig, size, off, &rec) ==
							NT_FRAME_OK; off += rec)
		if (orig[off] == NT_KIND_CALLSITE)
			site_at = off;
	size_t events = t.n;
	test_trace_free(&t);
	assert_int_not_equal(site_at, 0);
	assert_int_equal(nt_top_record_frame(orig, size, site_at, &rec), NT_FRAME_OK);
	uint8_t *copy = malloc(size + rec);
	memcpy(copy, orig, size);
	memcpy(copy + size, orig + site_at, rec);
	assert_int_equal(test_read_memory(copy, size + rec, NT_ORDER_STREAM, &t), 0);
	assert_msg(t.errors == 0, "%s", t.first_error);
	assert_int_equal(t.n, events);
	for (size_t e = 0; e < t.n; e++)
		if (t.ev[e].nargs != 0) /* the Instants, with both values */
			assert_int_equal(t.ev[e].args[1].value.u64, 1);
	test_trace_free(&t);
	/* A different definition of the index forgets them: its compact events are damage. */
	((nt_callsite_record *)(void *)(copy + size))->line ^= 1;
	assert_int_equal(test_read_memory(copy, size + rec, NT_ORDER_STREAM, &t), 0);
	assert_true(t.errors >= 1);
	assert_non_null(strstr(t.first_error, "value count differs"));
	test_trace_free(&t);
	free(orig);
	free(copy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mixed_shape_is_compact),
		cmocka_unit_test(what_does_not_fit_is_wide),
		cmocka_unit_test(sites_past_1023_are_wide),
		cmocka_unit_test(hostile_callsite_args),
		cmocka_unit_test(a_repeated_callsite_keeps_its_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
