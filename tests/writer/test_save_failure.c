/*
 * test_save_failure.c - issue 15's I/O-error rule, without root: a write that fails with
 * EFBIG (RLIMIT_FSIZE, SIGXFSZ ignored) stands for any failed write (ENOSPC is the same
 * path; tests/writer/test_disk_full.py meets a real full tmpfs as root). Every write path of
 * the library: nt_finish() of an arena in memory (the archive is cut at the last whole
 * record, its header says why and counts the rest as not saved; a later nt_finish() once
 * the limit is gone writes everything), nt_finish() of a file-backed arena (the arena is
 * kept as recorded, with the reason in its header), and the streaming saver (the file
 * fills mid-run: the archive is the saved stream, the events it lacks counted as
 * DROPPED_UNSAVED, not as truncation). Each time nt_last_error() names the path and the
 * reason, and the reader's account is exact: decoded + dropped + overwritten == made.
 * Lying headers (more unsaved than dropped, unsaved without a reason, a reason that is no
 * errno) are damage at byte 0, and the same values told truthfully are not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "format/nt_archive_header_encode.h"
#include "tests/support/nt_cmocka.h"
#include "tests/support/nt_test_util.h"
#include "tests/support/nt_finish_test.h"
#include "tests/support/nt_stream_header_test.h"

/* Events made by emit(): one Instant each, with an argument (so pieces hold many). */
static void emit(uint64_t n, int paced)
{
	for (uint64_t i = 0; i < n; i++) {
		if (paced && i % 200 == 0)
			usleep(200); /* a streaming saver keeps up: its drops are the failure's */
		NT_INSTANT("save", "tick", NT_I64("i", (int64_t)i), NT_STR("s", "some text"));
	}
}

/* RLIMIT_FSIZE's soft limit: `bytes`, or back to the hard limit (0). */
static void limit_file_size(rlim_t bytes)
{
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = bytes ? bytes : rl.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

static off_t file_size(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* nt_last_error() names `path`, strerror(err) and `what`. */
static void assert_error_says(const char *path, int err, const char *what)
{
	const char *msg = nt_last_error();
	if (strstr(msg, path) == NULL || strstr(msg, strerror(err)) == NULL ||
	    strstr(msg, what) == NULL)
		fail_msg("nt_last_error() does not name '%s', '%s' and '%s': %s", path,
			 strerror(err), what, msg);
}

/* The archive at `path` reads without damage, says saving stopped on `err`, and accounts
 * for all `made` events; returns the events decoded. */
static uint64_t assert_exact_account(const char *path, int err, uint64_t made)
{
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	if (t.errors != 0)
		fail_msg("%lu problems reading '%s', the first %s", t.errors, path, t.first_error);
	assert_int_equal(t.info.save_errno, (uint32_t)err);
	if (t.n + t.info.events_dropped + t.info.events_overwritten != made)
		fail_msg("decoded %zu + dropped %llu + overwritten %llu != made %llu", t.n,
			 (unsigned long long)t.info.events_dropped,
			 (unsigned long long)t.info.events_overwritten, (unsigned long long)made);
	assert_true(t.info.dropped_unsaved <= t.info.events_dropped);
	char line[256];
	assert_non_null(nt_render_save_stopped(&t.info, line, sizeof(line)));
	char want[256];
	snprintf(want, sizeof(want), "saving stopped: %s; %llu events not saved", strerror(err),
		 (unsigned long long)t.info.dropped_unsaved);
	assert_string_equal(line, want);
	uint64_t n = t.n;
	test_trace_free(&t);
	return n;
}

/* nt_finish() of an arena in memory into `path`, whose write fails with `err` (EFBIG past a
 * `limit` set here, or ENOSPC on the full file system `path` is on: limit 0). */
static void memory_arena_finish(const char *path, rlim_t limit, int err)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = 4u << 20;
	cfg.chunk_size = 16384;
	cfg.compression_level = NT_COMPRESSION_OFF; /* plain pieces: the limit falls mid-archive */
	assert_int_equal(nt_start(&cfg), NT_OK);
	const uint64_t made = 60000;
	emit(made, 0);
	nt_stats st;
	nt_get_stats(&st);
	assert_int_equal(st.events_dropped, 0);
	if (limit)
		limit_file_size(limit);
	int rc = nt_finish(path);
	limit_file_size(0);
	assert_int_equal(rc, NT_ERR_IO);
	assert_error_says(path, err, "not saved");
	/* Cut at the last whole piece on disk (a piece is at most a chunk), never further back. */
	assert_true(limit == 0 || file_size(path) <= (off_t)limit);
	assert_true(limit == 0 || file_size(path) + (off_t)cfg.chunk_size > (off_t)limit);
	uint64_t kept = assert_exact_account(path, err, made);
	assert_true(kept > 0 && kept < made);
	printf("nt_finish into '%s': %s\n", path, nt_last_error());
}

static void test_memory_arena_finish(void **state)
{
	(void)state;
	char path[256];
	test_tmp_path(path, sizeof(path), "save-mem");
	memory_arena_finish(path, 256 * 1024, EFBIG); /* about a fifth of the archive */
	/* The arena still holds everything: once the limit is gone, nt_finish() saves it all. */
	const uint64_t made = 60000;
	assert_int_equal(nt_finish(path), NT_OK);
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	assert_int_equal(t.errors, 0);
	assert_int_equal(t.n, made);
	assert_int_equal(t.info.save_errno, 0);
	assert_int_equal(t.info.dropped_unsaved, 0);
	test_trace_free(&t);
	unlink(path);
}

static void test_file_arena_finish(void **state)
{
	(void)state;
	char path[256];
	test_tmp_path(path, sizeof(path), "save-file");
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = 1u << 20;
	cfg.chunk_size = 16384;
	cfg.path = path;
	assert_int_equal(nt_start(&cfg), NT_OK);
	const uint64_t made = 20000;
	emit(made, 0);
	limit_file_size(8192); /* the arena exists; the compacted copy beside it does not fit */
	int rc = nt_finish(NULL);
	limit_file_size(0);
	assert_int_equal(rc, NT_ERR_IO);
	assert_error_says(path, EFBIG, "arena as recorded");
	/* Every event is in the kept arena; none is counted as not saved. */
	assert_int_equal(assert_exact_account(path, EFBIG, made), made);
	unlink(path);
}

/* `blocking_us`: writers may wait for the saver (nt_config.blocking_timeout_us); once its
 * write fails they no longer do (nothing would free a chunk): the run ends as without. */
static void streaming_saver(long long blocking_us)
{
	char path[256];
	test_tmp_path(path, sizeof(path), "save-stream");
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = 256 * 1024;
	cfg.chunk_size = 16384;
	cfg.mode = NT_MODE_STREAMING;
	cfg.compression_level = NT_COMPRESSION_OFF;
	cfg.blocking_timeout_us = blocking_us;
	cfg.path = path;
	assert_int_equal(nt_start(&cfg), NT_OK);
	/* The saved stream may grow 256 KiB past the arena: the file fills mid-run. */
	const rlim_t limit = (rlim_t)file_size(path) + 256 * 1024;
	limit_file_size(limit);
	const uint64_t made = 200000;
	emit(made, 1);
	int rc = nt_finish(NULL);
	limit_file_size(0);
	assert_int_equal(rc, NT_ERR_IO);
	assert_error_says(path, EFBIG, "not saved");
	assert_true(file_size(path) <= (off_t)limit);
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	assert_true(t.info.dropped_unsaved > 0);
	assert_int_equal(t.info.layout, NT_LAYOUT_STREAM);
	test_trace_free(&t);
	uint64_t kept = assert_exact_account(path, EFBIG, made);
	assert_true(kept > 0 && kept < made);
	unlink(path);
}

static void test_streaming_saver(void **state)
{
	(void)state;
	streaming_saver(NT_BLOCKING_OFF);
}

static void test_streaming_saver_blocking(void **state)
{
	(void)state;
	streaming_saver(NT_BLOCKING_TIMEOUT_MAX_US);
}

/* A Stream archive of the header alone with these counts. */
static nt_reader *forged(uint64_t dropped, uint64_t unsaved, uint32_t err, uint8_t *buf,
			 size_t cap)
{
	nt_archive_info in;
	test_stream_header(&in);
	in.events_dropped = dropped;
	in.dropped_unsaved = unsaved;
	in.save_errno = err;
	size_t n = nt_header_encode_stream(&in, buf, cap);
	assert_true(n > 0);
	nt_reader_error e;
	nt_reader *r = nt_reader_open_memory(buf, n, "forged", &e);
	if (r == NULL)
		fail_msg("a forged header did not open: %s", e.message);
	return r;
}

/* The damage a visit of `r` reports first ("" when none); closes r. */
static void first_damage(nt_reader *r, char *out, size_t cap)
{
	test_trace t;
	assert_int_equal(test_read_reader(r, NULL, NT_ORDER_STREAM, &t), 0);
	snprintf(out, cap, "%s", t.errors ? t.first_error : "");
	test_trace_free(&t);
}

static void test_forged_headers(void **state)
{
	(void)state;
	static uint8_t buf[1024];
	char why[600], line[256];
	static const struct {
		uint64_t dropped, unsaved;
		uint32_t err;
		const char *damage; /* NULL: none */
	} cases[] = {
		{ 5, UINT64_MAX, ENOSPC, "more than the 5 it counts dropped" },
		{ 0, 1, ENOSPC, "more than the 0 it counts dropped" },
		{ 7, 7, 0, "no reason saving stopped" },
		{ 7, 3, 70000, "is no errno" },
		{ UINT64_MAX, UINT64_MAX, EIO, NULL },
		{ 9, 4, ENOSPC, NULL },
		{ 9, 0, 0, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		nt_reader *r = forged(cases[i].dropped, cases[i].unsaved, cases[i].err, buf,
				      sizeof(buf));
		const char *said = nt_render_save_stopped(nt_reader_info(r), line, sizeof(line));
		assert_true((said != NULL) == (cases[i].err != 0));
		first_damage(r, why, sizeof(why));
		if (cases[i].damage == NULL ? why[0] != '\0'
					    : strstr(why, cases[i].damage) == NULL ||
						      strncmp(why, "byte 0: ", 8) != 0)
			fail_msg("case %zu: damage '%s', expected %s", i, why,
				 cases[i].damage ? cases[i].damage : "none");
	}
	/* Bad arguments: NULL, and buf untouched. */
	strcpy(line, "untouched");
	assert_null(nt_render_save_stopped(NULL, line, sizeof(line)));
	nt_archive_info stopped = { .save_errno = ENOSPC };
	assert_null(nt_render_save_stopped(&stopped, line, 0));
	assert_null(nt_render_save_stopped(&stopped, NULL, sizeof(line)));
	assert_string_equal(line, "untouched");
}

/* NT_SAVE_FAILURE_FULL_DIR=<a directory on a full file system> (test_disk_full.py, as
 * root): the same nt_finish() of an arena in memory meets ENOSPC there. */
static void test_memory_arena_finish_full_disk(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof(path), "%s/mem.ntrace", getenv("NT_SAVE_FAILURE_FULL_DIR"));
	memory_arena_finish(path, 0, ENOSPC);
}

int main(void)
{
	signal(SIGXFSZ, SIG_IGN); /* a write past the limit fails with EFBIG instead */
	if (getenv("NT_SAVE_FAILURE_FULL_DIR") != NULL) {
		const struct CMUnitTest full[] = {
			cmocka_unit_test(test_memory_arena_finish_full_disk),
		};
		return cmocka_run_group_tests(full, NULL, NULL);
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_arena_finish),
		cmocka_unit_test(test_file_arena_finish),
		cmocka_unit_test(test_streaming_saver),
		cmocka_unit_test(test_streaming_saver_blocking),
		cmocka_unit_test(test_forged_headers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
