/*
 * test_import_bounds - trace-import never reads past its input and never needs a NUL it did
 * not put there (issue 15): every input here ends on the last byte of a mapped page whose
 * next page is PROT_NONE, so one byte read past the end is a SIGSEGV in every build, with
 * or without ASan.
 *
 *  1. Every prefix of a sample of Git EVENT lines (a line without its final newline, a time
 *     field cut at each of its 27 bytes, an escape, a number, a literal or an object cut
 *     short) imports or is refused with a message naming line and column; a complete last
 *     line without "\n" imports exactly as with it.
 *  2. The same prefixes as the second of two streams (nt_trace2_import_many), whose lines'
 *     times are read first to merge them.
 *  3. Times are read by position: Git's 27-byte form with any one byte replaced, and time
 *     strings of 26 and 28 bytes, are refused for a known event (kept for an unknown one),
 *     and dates around leap days and up to the last microsecond int64 nanoseconds hold
 *     import as timegm() counts them; times before 1970 or past 2262 are refused (they
 *     would wrap).
 * Each numbered part is a cmocka test.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nanotrace/nanotrace_reader.h>
#include "tests/support/nt_cmocka.h"

#define SID "20261121T230246.920813Z-H0a7c9cdf-P00006430"
static const char sample[] =
	"{\"event\":\"version\",\"sid\":\"" SID "\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.920892Z\",\"file\":\"common-main.c\",\"line\":50,\"evt\":\"3\",\"exe\":\"2.39.5\"}\n"
	"{\"event\":\"start\",\"sid\":\"" SID "\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.920913Z\",\"file\":\"common-main.c\",\"line\":51,\"t_abs\":0.000239,\"argv\":[\"git\",\"a\\u00e9b\\\\\",\"\"]}\n"
	"{\"event\":\"data\",\"sid\":\"" SID "\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.921000Z\",\"file\":\"a.c\",\"line\":7,\"repo\":1,\"t_abs\":0.1,\"t_rel\":0.2,\"nesting\":1,\"category\":\"c\",\"key\":\"k\",\"value\":\"-12\"}\n"
	"{\"event\":\"x_future\",\"sid\":\"" SID "\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.921100Z\",\"ok\":true,\"no\":false,\"nil\":null,\"n\":-0.5e-3}\n"
	"{\"event\":\"atexit\",\"sid\":\"" SID "\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.941000Z\",\"file\":\"trace2/tr2_tgt_event.c\",\"line\":204,\"t_abs\":0.020100,\"code\":0}\n";

/* `n` bytes of `data`, placed so that the last one is the last byte before a PROT_NONE
 * page. Returns the copy's start; guard_free() with the same n unmaps it. */
static const char *guarded(const void *data, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = (n + page - 1) / page + 1;
	uint8_t *map = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	assert_msg(map != MAP_FAILED, "mmap");
	uint8_t *guard = map + (pages - 1) * page;
	assert_msg(mprotect(guard, page, PROT_NONE) == 0, "mprotect");
	memcpy(guard - n, data, n);
	return (const char *)guard - n;
}

static void guard_free(const char *p, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t guard = (uintptr_t)p + n;
	size_t pages = (n + page - 1) / page + 1;
	munmap((void *)(guard - (pages - 1) * page), pages * page);
}

static int count_event(void *ctx, const nt_reader_event *e)
{
	(void)e;
	++*(uint64_t *)ctx;
	return 0;
}

/* Imports [p, p + n) alone (second == NULL) or after `first`; returns the result and checks
 * that a refusal says where and why. *events: events of the archive (on success). */
static int import_guarded(const char *first, size_t first_n, const char *p, size_t n,
			  uint64_t *events)
{
	nt_trace2_input in[2] = { { "first", first, first_n }, { "cut", p, n } };
	void *archive = NULL;
	size_t size = 0;
	nt_trace2_import_error err;
	int rc = first != NULL ? nt_trace2_import_many(in, 2, &archive, &size, &err)
			       : nt_trace2_import(p, n, &archive, &size, &err);
	if (rc != 0) {
		assert_msg(strstr(err.message, "line ") != NULL && err.line > 0,
			   "a refusal of %zu bytes names no line: '%s'", n, err.message);
		return rc;
	}
	nt_reader_error rerr;
	nt_reader *r = nt_reader_open_memory(archive, size, "import", &rerr);
	assert_msg(r != NULL, "the import of %zu bytes does not open: %s", n, rerr.message);
	nt_reader_callbacks cb = { .on_event = count_event };
	*events = 0;
	assert_int_equal(nt_reader_visit(r, &cb, events, NT_ORDER_STREAM, NT_ON_CORRUPT_STOP), 0);
	nt_reader_close(r);
	free(archive);
	return 0;
}

/* Every prefix of the sample, as the only stream or as the second of two. */
static void every_prefix(int as_second)
{
	size_t n = strlen(sample);
	const char *first = NULL;
	size_t first_n = 0;
	if (as_second) {
		first_n = (size_t)(strchr(sample, '\n') - sample); /* one line, no newline */
		first = guarded(sample, first_n);
	}
	int imported = 0, refused = 0;
	for (size_t len = 0; len <= n; len++) {
		const char *p = guarded(sample, len);
		uint64_t events;
		if (import_guarded(first, first_n, p, len, &events) == 0)
			imported++;
		else
			refused++;
		guard_free(p, len);
	}
	/* Whole lines import (with or without their "\n"); a line cut inside is refused. */
	assert_msg(imported >= 10 && refused > 0, "%d imported, %d refused", imported, refused);
	uint64_t with_nl, without_nl;
	const char *p = guarded(sample, n);
	assert_int_equal(import_guarded(first, first_n, p, n, &with_nl), 0);
	guard_free(p, n);
	p = guarded(sample, n - 1);
	assert_int_equal(import_guarded(first, first_n, p, n - 1, &without_nl), 0);
	guard_free(p, n - 1);
	assert_msg(with_nl == without_nl && with_nl == 5 + (as_second ? 1 : 0),
		   "%llu events with the final newline, %llu without", (unsigned long long)with_nl,
		   (unsigned long long)without_nl);
	if (first != NULL)
		guard_free(first, first_n);
}

static void test_prefixes_one_stream(void **state)
{
	(void)state;
	every_prefix(0);
}

static void test_prefixes_second_stream(void **state)
{
	(void)state;
	every_prefix(1);
}

/* One version line whose time string (between the quotes) is `t` of `tn` bytes, unknown
 * event or not. Returns the import's result; *us its time in microseconds on success. */
static int import_time(const char *t, size_t tn, int unknown, int64_t *us)
{
	char line[512];
	int len = snprintf(line, sizeof(line),
			   "{\"event\":\"%s\",\"sid\":\"" SID "\",\"thread\":\"main\",\"time\":\"%.*s\"}",
			   unknown ? "x_new" : "version", (int)tn, t);
	const char *p = guarded(line, (size_t)len);
	void *archive = NULL;
	size_t size = 0;
	nt_trace2_import_error err;
	int rc = nt_trace2_import(p, (size_t)len, &archive, &size, &err);
	guard_free(p, (size_t)len);
	if (rc == 0) {
		nt_reader_error rerr;
		nt_reader *r = nt_reader_open_memory(archive, size, "t", &rerr);
		assert_msg(r != NULL, "%s", rerr.message);
		*us = nt_reader_info(r)->start_realtime_ns / 1000;
		nt_reader_close(r);
		free(archive);
	} else {
		assert_msg(strstr(err.message, "\"time\"") != NULL, "'%.*s': %s", (int)tn, t,
			   err.message);
	}
	return rc;
}

static void test_time_by_position(void **state)
{
	(void)state;
	const char good[] = "2026-11-21T23:02:46.881067Z";
	int64_t us;
	assert_int_equal(import_time(good, 27, 0, &us), 0);
	assert_true(us == 1795302166881067LL);
	for (size_t i = 0; i < 27; i++) {
		const char subst[] = { ' ', '+', '-', '/', 'a', '9', ':', 'Z', '\0' };
		for (size_t k = 0; k < sizeof(subst); k++) {
			char t[28];
			memcpy(t, good, 28);
			if (t[i] == subst[k] || (subst[k] == '9' && t[i] >= '0' && t[i] <= '9'))
				continue; /* a digit for a digit is still a time */
			t[i] = subst[k];
			assert_msg(import_time(t, 27, 0, &us) == -1, "'%.27s' was taken as a time", t);
			assert_msg(import_time(t, 27, 1, &us) == 0, "'%.27s' refused in an unknown event", t);
		}
	}
	assert_int_equal(import_time(good, 26, 0, &us), -1);
	assert_int_equal(import_time("2026-11-21T23:02:46.8810670Z", 28, 0, &us), -1);
	/* Days and leap days counted as timegm() counts them (values from `date -u -d ... +%s`). */
	const struct { const char *t; int64_t secs; } dates[] = {
		{ "1970-01-01T00:00:00.000000Z", 0 },
		{ "2000-02-29T12:00:00.000001Z", 951825600 },
		{ "2024-03-01T00:00:00.000000Z", 1709251200 },
		{ "2100-03-01T00:00:00.000000Z", 4107542400 },
		{ "2262-04-11T23:47:16.854775Z", 9223372036 }, /* the last microsecond of int64 ns */
	};
	for (size_t i = 0; i < sizeof(dates) / sizeof(dates[0]); i++) {
		assert_int_equal(import_time(dates[i].t, 27, 0, &us), 0);
		assert_msg(us / 1000000 == dates[i].secs, "%s: %lld s, not %lld", dates[i].t,
			   (long long)(us / 1000000), (long long)dates[i].secs);
	}
	/* Before 1970, or past what int64 nanoseconds hold, a known event's time is refused (it
	 * would wrap). */
	assert_int_equal(import_time("1969-12-31T23:59:59.000000Z", 27, 0, &us), -1);
	assert_int_equal(import_time("2262-04-11T23:47:16.854776Z", 27, 0, &us), -1);
	assert_int_equal(import_time("9999-12-31T23:59:59.999999Z", 27, 0, &us), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefixes_one_stream),
		cmocka_unit_test(test_prefixes_second_stream),
		cmocka_unit_test(test_time_by_position),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
