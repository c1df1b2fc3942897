/* test_writer.c - the writer's API contract, checked by reading archives back. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "tests/support/nt_cmocka.h"
#include "tests/support/nt_finish_test.h"

static nt_config small_config(int mode)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	return cfg;
}

static void finish_and_read(const char *tag, test_trace *t)
{
	assert_msg(test_finish_and_read(tag, NT_ORDER_TIME, t) == 0, "%s: %s", tag,
		   nt_last_error());
}

static void config_errors_name_the_field(void **state)
{
	(void)state;
	assert_int_equal(nt_start(NULL), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "cfg is NULL"));

	nt_config cfg = small_config(NT_MODE_ONESHOT);
	cfg.buffer_size = 1000;
	assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "buffer_size 1000"));

	cfg = small_config(NT_MODE_ONESHOT);
	cfg.chunk_size = 5000;
	assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "chunk_size 5000"));

	cfg = small_config(7);
	assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "mode 7"));

	cfg = small_config(NT_MODE_STREAMING); /* streaming saves to a file */
	assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "cfg.path"));

	cfg = small_config(NT_MODE_ONESHOT);
	cfg.path = "/nonexistent-dir/arena.ntrace";
	assert_int_equal(nt_start(&cfg), NT_ERR_IO);
	assert_non_null(strstr(nt_last_error(), "/nonexistent-dir/arena.ntrace"));

	cfg = small_config(NT_MODE_ONESHOT);
	cfg.buffer_size = 64 * 1024;
	cfg.chunk_size = 65536; /* no room for two chunks per half */
	assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "fewer than 2 chunks"));
	assert_false(nt_is_recording());
}

static void lifecycle_state_errors(void **state)
{
	(void)state;
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	assert_int_equal(nt_start(&cfg), NT_OK);
	assert_true(nt_is_recording());
	assert_int_equal(nt_start(&cfg), NT_ERR_STATE);
	NT_INSTANT("t", "kept");

	/* An unwritable path fails with its name, stops recording, and keeps the data. */
	assert_int_equal(nt_finish("/nonexistent-dir/x.ntrace"), NT_ERR_IO);
	assert_non_null(strstr(nt_last_error(), "/nonexistent-dir/x.ntrace"));
	assert_false(nt_is_recording());
	assert_int_equal(nt_finish(NULL), NT_ERR_INVALID_ARGUMENT);
	test_trace t;
	finish_and_read("lifecycle", &t);
	assert_int_equal(t.n, 1);
	assert_string_equal(t.ev[0].name, "kept");
	test_trace_free(&t);
}

static void events_round_trip(void **state)
{
	(void)state;
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	assert_int_equal(nt_start(&cfg), NT_OK);
	nt_thread_set_name("tester");
	int line_begin = __LINE__ + 1;
	NT_BEGIN("io", "read", NT_I64("fd", -3), NT_STR("path", "/etc/hosts"));
	NT_INSTANT("io", "mark", NT_U64("big", 1ull << 40), NT_F64("ratio", 0.25),
		   NT_BOOL("ok", 1), NT_PTR("p", (void *)0x1234), NT_I64("neg64", -(1ll << 40)));
	NT_COUNTER("mem", "heap", NT_U32("bytes", 4096));
	uint64_t t0 = nt_now();
	NT_COMPLETE("db", "query", t0, NT_STR("sql", NULL));
	{
		NT_SCOPE("cpu", "scoped");
	}
	NT_END("io", "read");
	test_trace t;
	finish_and_read("roundtrip", &t);
	assert_int_equal(t.errors, 0);
	assert_int_equal(t.n, 7);

	test_event *e = t.ev;
	assert_int_equal(e[0].kind, NT_KIND_BEGIN);
	assert_string_equal(e[0].category, "io");
	assert_string_equal(e[0].name, "read");
	assert_int_equal(e[0].line, line_begin);
	assert_non_null(strstr(e[0].file, "test_writer.c"));
	assert_string_equal(e[0].thread_name, "tester");
	assert_int_equal(e[0].tid, (uint32_t)gettid());
	assert_int_equal(e[0].nargs, 2);
	assert_string_equal(e[0].args[0].name, "fd");
	assert_int_equal(e[0].args[0].type, NT_ARG_INT32);
	assert_int_equal(e[0].args[0].value.i64, -3);
	assert_int_equal(e[0].args[1].type, NT_ARG_STRING);
	assert_string_equal(e[0].args[1].value.str.ptr, "/etc/hosts");

	assert_int_equal(e[1].kind, NT_KIND_INSTANT);
	assert_int_equal(e[1].nargs, 5);
	assert_int_equal(e[1].args[0].type, NT_ARG_UINT64);
	assert_true(e[1].args[0].value.u64 == (1ull << 40));
	assert_int_equal(e[1].args[1].type, NT_ARG_DOUBLE);
	assert_true(e[1].args[1].value.f64 == 0.25);
	assert_int_equal(e[1].args[2].type, NT_ARG_BOOL);
	assert_int_equal(e[1].args[2].value.u64, 1);
	assert_int_equal(e[1].args[3].type, NT_ARG_POINTER);
	assert_int_equal(e[1].args[3].value.u64, 0x1234);
	assert_int_equal(e[1].args[4].type, NT_ARG_INT64);
	assert_true(e[1].args[4].value.i64 == -(1ll << 40));

	assert_int_equal(e[2].kind, NT_KIND_COUNTER);
	assert_int_equal(e[2].args[0].type, NT_ARG_UINT32);
	assert_int_equal(e[2].args[0].value.u64, 4096);

	assert_int_equal(e[3].kind, NT_KIND_COMPLETE);
	assert_string_equal(e[3].args[0].value.str.ptr, "(null)");
	assert_true(e[3].time_ns >= e[2].time_ns);

	assert_int_equal(e[4].kind, NT_KIND_BEGIN);
	assert_string_equal(e[4].name, "scoped");
	assert_int_equal(e[5].kind, NT_KIND_END);
	assert_string_equal(e[5].name, "scoped");
	assert_int_equal(e[6].kind, NT_KIND_END);
	for (size_t i = 1; i < t.n; i++)
		assert_true(e[i].time_ns >= e[i - 1].time_ns);
	/* Times are inside the session and wall-clock time follows CLOCK_MONOTONIC. */
	assert_true(e[0].time_ns >= (int64_t)t.info.start_monotonic_ns);
	assert_true(e[6].time_ns <= (int64_t)t.info.finish_monotonic_ns);
	assert_int_equal(t.info.final_state, NT_FINAL_FINISHED);
	assert_int_equal(t.info.events_written, 7);
	assert_int_equal(t.info.events_dropped, 0);
	test_trace_free(&t);
}

static void long_strings_are_truncated_to_fit(void **state)
{
	(void)state;
	static char big[5000];
	memset(big, 'x', sizeof(big) - 1);
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	assert_int_equal(nt_start(&cfg), NT_OK);
	NT_INSTANT("s", "big", NT_I32("before", 1), NT_STR("text", big), NT_I32("after", 2));
	test_trace t;
	finish_and_read("bigstr", &t);
	assert_int_equal(t.errors, 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.ev[0].nargs, 3);
	uint32_t len = (uint32_t)strlen(t.ev[0].strs[1]);
	/* Event (8) + two int args (16) + string header (8) leave 2008 bytes of the 2040. */
	assert_int_equal(len, NT_MAX_RECORD_BYTES - 32);
	assert_int_equal(t.ev[0].args[2].value.i64, 2);
	test_trace_free(&t);
}

static void category_patterns_filter(void **state)
{
	(void)state;
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	cfg.categories = "io,net:*";
	assert_int_equal(nt_start(&cfg), NT_OK);
	assert_true(nt_category_enabled("io"));
	assert_true(nt_category_enabled("net:tcp"));
	assert_false(nt_category_enabled("db"));
	assert_false(nt_category_enabled("iox"));
	assert_false(nt_category_enabled(NULL));
	for (int i = 0; i < 3; i++) {
		NT_INSTANT("io", "a");
		NT_INSTANT("db", "b");
		NT_INSTANT("net:tcp", "c");
		NT_INSTANT("netx", "d");
	}
	test_trace t;
	finish_and_read("cats", &t);
	assert_int_equal(t.n, 6);
	for (size_t i = 0; i < t.n; i++)
		assert_true(strcmp(t.ev[i].name, "a") == 0 || strcmp(t.ev[i].name, "c") == 0);
	assert_int_equal(t.info.events_dropped, 0); /* filtered is not dropped */
	test_trace_free(&t);
	assert_false(nt_category_enabled("io")); /* not recording */
}

/* A 64 KiB arena of 4 KiB chunks, sent `emitted` sequence-numbered instants. */
static void fill_small_arena(int mode, uint64_t emitted)
{
	nt_config cfg = small_config(mode);
	cfg.buffer_size = 64 * 1024;
	cfg.chunk_size = 4096;
	assert_int_equal(nt_start(&cfg), NT_OK);
	for (uint64_t i = 0; i < emitted; i++)
		NT_INSTANT("fill", "e", NT_U64("seq", i));
}

static void oneshot_full_counts_every_drop(void **state)
{
	(void)state;
	const uint64_t emitted = 20000;
	fill_small_arena(NT_MODE_ONESHOT, emitted);
	nt_stats st;
	nt_get_stats(&st);
	assert_true(st.events_dropped > 0);
	test_trace t;
	finish_and_read("oneshot", &t);
	assert_int_equal(t.errors, 0);
	assert_int_equal(t.n + t.info.events_dropped, emitted);
	for (size_t i = 0; i < t.n; i++) /* oneshot keeps the oldest: a gap-free prefix */
		assert_int_equal(t.ev[i].args[0].value.u64, i);
	assert_int_equal(t.gaps, 0);
	assert_int_equal(t.info.dropped_rolling_full, t.info.events_dropped);
	test_trace_free(&t);
}

static void circular_keeps_newest_and_counts(void **state)
{
	(void)state;
	const uint64_t emitted = 50000;
	fill_small_arena(NT_MODE_CIRCULAR, emitted);
	test_trace t;
	finish_and_read("circular", &t);
	assert_int_equal(t.errors, 0);
	assert_true(t.info.wraps > 0);
	assert_int_equal(t.info.events_dropped, 0);
	assert_int_equal(t.n + t.info.events_overwritten, emitted);
	/* One thread: the reader sees exactly the overwritten events as one gap before the
	 * oldest surviving chunk. */
	assert_int_equal(t.gaps, 1);
	assert_int_equal(t.gap_events, t.info.events_overwritten);
	/* The newest events survive, contiguous up to the last one. */
	assert_int_equal(t.ev[t.n - 1].args[0].value.u64, emitted - 1);
	for (size_t i = 1; i < t.n; i++)
		assert_int_equal(t.ev[i].args[0].value.u64, t.ev[i - 1].args[0].value.u64 + 1);
	test_trace_free(&t);
}

static void durable_full_stops_and_is_recorded(void **state)
{
	(void)state;
	static char name[2000];
	memset(name, 'n', sizeof(name) - 1);
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	cfg.buffer_size = 64 * 1024; /* durable region: 4 KiB */
	cfg.chunk_size = 4096;
	assert_int_equal(nt_start(&cfg), NT_OK);
	NT_INSTANT("d", "before");
	for (int i = 0; i < 3; i++)
		nt_thread_set_name(name);
	assert_false(nt_is_recording());
	for (int i = 0; i < 10; i++)
		NT_INSTANT("d", "after");
	test_trace t;
	finish_and_read("durable", &t);
	assert_int_equal(t.info.final_state, NT_FINAL_DURABLE_FULL);
	assert_true(t.info.durable_dropped >= 1);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.info.events_dropped, 10);
	test_trace_free(&t);
}

static void *thread_body(void *arg)
{
	for (int i = 0; i < 100; i++)
		NT_INSTANT("mt", "x", NT_I32("i", i));
	return arg;
}

static void exiting_threads_close_their_chunks(void **state)
{
	(void)state;
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	assert_int_equal(nt_start(&cfg), NT_OK);
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thread_body, NULL), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	test_trace t;
	finish_and_read("threads", &t);
	assert_int_equal(t.n, 300);
	test_trace_free(&t);
}

static void restart_after_finish(void **state)
{
	(void)state;
	for (int round = 0; round < 3; round++) {
		nt_config cfg = small_config(round % 2 ? NT_MODE_CIRCULAR : NT_MODE_ONESHOT);
		cfg.buffer_size = (size_t)(1 + round) << 20;
		assert_int_equal(nt_start(&cfg), NT_OK);
		for (int i = 0; i <= round; i++)
			NT_INSTANT("r", "ev", NT_I32("round", round));
		test_trace t;
		finish_and_read("restart", &t);
		assert_int_equal(t.n, (size_t)round + 1);
		assert_int_equal(t.ev[0].args[0].value.i64, round);
		test_trace_free(&t);
	}
}

/* A call site first used after nt_finish() through the emit entry point (as Trace2's atexit
 * message does; the macros skip it when tracing is off) records nothing and counts the event
 * as made while stopped: it must not write into the finished session's arena. */
static void first_use_after_finish_is_counted_not_written(void **state)
{
	(void)state;
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	assert_int_equal(nt_start(&cfg), NT_OK);
	NT_INSTANT("late", "before");
	test_trace t;
	finish_and_read("late", &t);
	test_trace_free(&t);
	nt_stats before, after;
	nt_get_stats(&before);
	static uint16_t names[1];
	static nt_callsite site = { .category = "late", .name = "never-used-before",
				    .file = __FILE__, .line = __LINE__, .arg_names = names,
				    .arg_count = 1 };
	nt_arg a = NT_I32("x", 1);
	nt_emit_args_(&site, NT_KIND_INSTANT, &a, 1);
	nt_get_stats(&after);
	assert_int_equal(after.dropped_stopped, before.dropped_stopped + 1);
	assert_int_equal(after.events_dropped, before.events_dropped + 1);
}

static void long_gap_uses_timestamp_escape(void **state)
{
	(void)state;
	/* 2^32 ticks of CLOCK_MONOTONIC is 4.29 s: the only way to force the escape for real. */
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	cfg.clock = NT_CLOCK_USE_MONOTONIC;
	assert_int_equal(nt_start(&cfg), NT_OK);
	NT_INSTANT("gap", "before");
	usleep(4400000);
	NT_INSTANT("gap", "after");
	test_trace t;
	finish_and_read("gap", &t);
	assert_int_equal(t.n, 2);
	assert_true(t.ev[1].time_ns - t.ev[0].time_ns >= 4400000000ll);
	assert_true(t.ev[1].time_ns - t.ev[0].time_ns < 6000000000ll);
	test_trace_free(&t);
}

/* A second nt_finish() after one that wrote the archive is a mistake, reported: the header
 * promises NT_ERR_STATE, and the archive written first stays as it was. */
static void second_finish_is_a_state_error(void **state)
{
	(void)state;
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	assert_int_equal(nt_start(&cfg), NT_OK);
	NT_INSTANT("t", "once");
	char path[256];
	test_tmp_path(path, sizeof(path), "second-finish");
	assert_int_equal(nt_finish(path), NT_OK);
	assert_int_equal(nt_finish(path), NT_ERR_STATE);
	assert_non_null(strstr(nt_last_error(), "already finished"));
	assert_int_equal(nt_finish(NULL), NT_ERR_STATE);
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_TIME, &t), 0);
	assert_int_equal(t.n, 1);
	test_trace_free(&t);
	unlink(path);
	/* A new session finishes normally again. */
	assert_int_equal(nt_start(&cfg), NT_OK);
	test_trace t2;
	finish_and_read("second-finish-new", &t2);
	test_trace_free(&t2);
}

/* A malformed pattern would silently select nothing: it is refused, with the pattern and
 * the position of its first mistake, by nt_start and by nt_provider_start alike. */
static void malformed_category_patterns_are_refused(void **state)
{
	(void)state;
	static const struct {
		const char *pattern;
		const char *position;
	} bad[] = {
		{ "io,,bad pattern*x", "position 3" }, { ",io", "position 0" },
		{ "io,", "position 3" },               { "io, db", "position 3" },
		{ "a*b", "position 1" },               { "**", "position 0" },
		{ "io\tx", "position 2" },             { "na\xc3\xafve", "position 2" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nt_config cfg = small_config(NT_MODE_ONESHOT);
		cfg.categories = bad[i].pattern;
		assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
		char shown[64]; /* nt_last_error() is one line: a control character is a '?' */
		snprintf(shown, sizeof(shown), "%s", bad[i].pattern);
		for (char *c = shown; *c != '\0'; c++)
			if ((unsigned char)*c < 0x20)
				*c = '?';
		assert_msg(strstr(nt_last_error(), shown) != NULL &&
				   strstr(nt_last_error(), bad[i].position) != NULL,
			   "pattern '%s': %s", bad[i].pattern, nt_last_error());
		assert_false(nt_is_recording());
	}
	static const char *const good[] = { "*", "io", "net:*", "a.b/c-d_e+f,x*", "" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		nt_config cfg = small_config(NT_MODE_ONESHOT);
		cfg.categories = good[i];
		assert_msg(nt_start(&cfg) == NT_OK, "'%s': %s", good[i], nt_last_error());
		test_trace t;
		finish_and_read("good-pattern", &t);
		test_trace_free(&t);
	}
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	assert_int_equal(nt_provider_initialize(&cfg), NT_OK);
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_ENTIRE, "db*x"), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "nt_provider_start"));
	assert_false(nt_is_recording());
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_ENTIRE, ""), NT_OK);
	test_trace t;
	finish_and_read("provider-pattern", &t);
	test_trace_free(&t);
}

/* nt_config grows at its end: a caller built against an older header (a smaller
 * struct_size) gets defaults for what it lacks; one never initialized is told to call
 * nt_config_init(); a newer caller's unknown field is refused unless it is zero. */
static void config_struct_size_is_checked(void **state)
{
	(void)state;
	struct {
		nt_config cfg;
		uint64_t newer_field;
	} big;
	memset(&big, 0, sizeof(big));
	nt_config_init(&big.cfg);
	assert_int_equal(big.cfg.struct_size, sizeof(nt_config));

	nt_config cfg = big.cfg;
	cfg.struct_size = 0;
	assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "nt_config_init()"));
	cfg.struct_size = 3;
	assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
	cfg.struct_size = (size_t)1 << 40;
	assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);

	/* A newer program whose extra field holds its default (zero) works ... */
	big.cfg.struct_size = sizeof(big);
	assert_int_equal(nt_start(&big.cfg), NT_OK);
	test_trace t;
	finish_and_read("size-newer", &t);
	test_trace_free(&t);
	/* ... one that sets it is told this library does not know it. */
	big.newer_field = 1;
	assert_int_equal(nt_start(&big.cfg), NT_ERR_UNSUPPORTED);
	assert_non_null(strstr(nt_last_error(), "does not know"));

	/* Smaller than the first nt_config: garbage, not an older program (later versions
	 * accept every earlier size and give the fields it lacks their defaults). */
	cfg = big.cfg;
	cfg.struct_size = offsetof(nt_config, path) + sizeof(cfg.path);
	assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
	assert_false(nt_is_recording());
}

/* The streaming session's blocking timeout as its archive's header records it, for `cfg`
 * (its struct_size as given). */
static uint64_t recorded_blocking_us(nt_config *cfg, const char *tag)
{
	char path[256];
	test_tmp_path(path, sizeof(path), tag);
	cfg->mode = NT_MODE_STREAMING;
	cfg->path = path;
	assert_msg(nt_start(cfg) == NT_OK, "%s", nt_last_error());
	NT_INSTANT("blocking", "ev");
	assert_msg(nt_finish(NULL) == NT_OK, "%s", nt_last_error());
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	uint64_t us = t.info.blocking_timeout_us;
	assert_int_equal(t.info.blocked_waits, 0); /* one event never fills a 16 MiB arena */
	test_trace_free(&t);
	unlink(path);
	return us;
}

/* nt_config.blocking_timeout_us (after compression_level): out of range is refused naming
 * it; a value is recorded in streaming archives; a caller built before the field (a
 * struct_size that ends before it, garbage beyond) gets the default, never waiting. */
static void config_blocking_timeout_is_checked(void **state)
{
	(void)state;
	unsetenv("NANOTRACE_BLOCKING_TIMEOUT");
	nt_config cfg = small_config(NT_MODE_STREAMING);
	cfg.path = "/nonexistent/never-created.ntrace";
	const long long bad[] = { -2, -1000000, NT_BLOCKING_TIMEOUT_MAX_US + 1 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cfg.blocking_timeout_us = bad[i];
		assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
		assert_non_null(strstr(nt_last_error(), "blocking_timeout_us"));
	}
	cfg = small_config(NT_MODE_STREAMING);
	cfg.blocking_timeout_us = 1234;
	assert_int_equal(recorded_blocking_us(&cfg, "blocking-set"), 1234);
	cfg = small_config(NT_MODE_STREAMING);
	cfg.blocking_timeout_us = NT_BLOCKING_OFF;
	assert_int_equal(recorded_blocking_us(&cfg, "blocking-off"), 0);
	cfg = small_config(NT_MODE_STREAMING);
	assert_int_equal(recorded_blocking_us(&cfg, "blocking-default"), 0);
	/* An older caller: the field is past its struct_size, whatever the bytes there hold. */
	cfg = small_config(NT_MODE_STREAMING);
	cfg.struct_size = offsetof(nt_config, blocking_timeout_us);
	cfg.blocking_timeout_us = 999;
	assert_int_equal(recorded_blocking_us(&cfg, "blocking-older"), 0);
	/* The variable, for a config that leaves the field 0. */
	setenv("NANOTRACE_BLOCKING_TIMEOUT", "5000", 1);
	cfg = small_config(NT_MODE_STREAMING);
	assert_int_equal(recorded_blocking_us(&cfg, "blocking-env"), 5000);
	cfg = small_config(NT_MODE_STREAMING);
	cfg.blocking_timeout_us = NT_BLOCKING_OFF; /* the config's "never" wins */
	assert_int_equal(recorded_blocking_us(&cfg, "blocking-env-off"), 0);
	unsetenv("NANOTRACE_BLOCKING_TIMEOUT");
}

/* The version is meson's project() version, once: the macros agree with each other and
 * with what the library reports. */
static void version_is_one_fact(void **state)
{
	(void)state;
	char expect[64];
	snprintf(expect, sizeof(expect), "%d.%d.%d", NT_VERSION_MAJOR, NT_VERSION_MINOR,
		 NT_VERSION_PATCH);
	assert_string_equal(NT_VERSION_STRING, expect);
	assert_string_equal(nt_version(), NT_VERSION_STRING);
	assert_string_equal(nt_reader_version(), NT_VERSION_STRING);
	assert_int_equal(NT_VERSION_NUMBER,
			 NT_VERSION_MAJOR * 10000 + NT_VERSION_MINOR * 100 + NT_VERSION_PATCH);
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	assert_int_equal(nt_start(&cfg), NT_OK);
	test_trace t;
	finish_and_read("version", &t);
	char producer[64];
	snprintf(producer, sizeof(producer), "nanotrace %s", nt_version());
	assert_string_equal(t.info.producer, producer);
	test_trace_free(&t);
}

/* Runs `body` in a child whose stderr is captured, then exit(0): the atexit handlers run.
 * Returns what the child wrote on stderr (static storage). */
static const char *stderr_at_exit_of(void (*body)(const char *), const char *path)
{
	static char buf[4096];
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		body(path);
		exit(0);
	}
	close(fds[1]);
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(buf) - 1 && (r = read(fds[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(fds[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return buf;
}

static void record_three(const char *path)
{
	nt_config cfg = small_config(NT_MODE_ONESHOT);
	cfg.path = path;
	if (nt_start(&cfg) != NT_OK)
		exit(3);
	for (int i = 0; i < 3; i++)
		NT_INSTANT("t", "lost");
}

static void record_and_finish(const char *path)
{
	record_three(NULL);
	if (nt_finish(path) != NT_OK)
		exit(4);
}

/* An anonymous arena still recording at exit takes its events with it: one line says so.
 * A finished session, and a file-backed one (finished by its own exit handler), are
 * silent. */
static void unfinished_session_is_reported_at_exit(void **state)
{
	(void)state;
	const char *err = stderr_at_exit_of(record_three, NULL);
	assert_msg(strncmp(err, "nanotrace: session started at ", 30) == 0 &&
			   strstr(err, " was never finished: 3 events not written; call "
				       "nt_finish()\n") != NULL &&
			   strchr(err, '\n') == err + strlen(err) - 1,
		   "stderr: '%s'", err);
	char path[256];
	test_tmp_path(path, sizeof(path), "exit-file");
	err = stderr_at_exit_of(record_three, path);
	assert_msg(err[0] == '\0', "file-backed: '%s'", err);
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_TIME, &t), 0);
	assert_int_equal(t.n, 3);
	test_trace_free(&t);
	err = stderr_at_exit_of(record_and_finish, path);
	assert_msg(err[0] == '\0', "finished: '%s'", err);
	unlink(path);
}

/* A streaming saver saves what the writers publish without waiting for a rolling half to
 * fill (runtime/nt_saver_pace.h): ten events in a 4 MiB arena reach the saved stream. */
static void streaming_saves_before_a_half_fills(void **state)
{
	(void)state;
	char path[256];
	test_tmp_path(path, sizeof(path), "stream-pace");
	nt_config cfg = small_config(NT_MODE_STREAMING);
	cfg.path = path;
	assert_int_equal(nt_start(&cfg), NT_OK);
	for (int i = 0; i < 10; i++)
		NT_INSTANT("pace", "ev", NT_I64("i", i));
	nt_archive_info info = { 0 };
	for (int tries = 0; tries < 300; tries++) { /* up to 3 s: the saver waits 1 ms */
		test_trace t;
		assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
		info = t.info;
		test_trace_free(&t);
		if (info.stream_end > info.stream_offset)
			break;
		usleep(10000);
	}
	assert_msg(info.stream_end > info.stream_offset, "nothing saved: stream %llu..%llu",
		   (unsigned long long)info.stream_offset, (unsigned long long)info.stream_end);
	/* No buffer_size: streaming's default arena, larger than the other modes' */
	assert_in_range(info.arena_size, NT_DEFAULT_STREAMING_BUFFER_BYTES,
			NT_DEFAULT_STREAMING_BUFFER_BYTES + (1u << 20)); /* + header, counters */
	nt_stats st;
	nt_get_stats(&st);
	assert_int_equal(st.wraps, 0);
	assert_int_equal(nt_finish(NULL), NT_OK);
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	assert_int_equal(t.n, 10);
	assert_int_equal(t.errors, 0);
	test_trace_free(&t);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(config_errors_name_the_field),
		cmocka_unit_test(lifecycle_state_errors),
		cmocka_unit_test(events_round_trip),
		cmocka_unit_test(long_strings_are_truncated_to_fit),
		cmocka_unit_test(category_patterns_filter),
		cmocka_unit_test(oneshot_full_counts_every_drop),
		cmocka_unit_test(circular_keeps_newest_and_counts),
		cmocka_unit_test(durable_full_stops_and_is_recorded),
		cmocka_unit_test(exiting_threads_close_their_chunks),
		cmocka_unit_test(restart_after_finish),
		cmocka_unit_test(first_use_after_finish_is_counted_not_written),
		cmocka_unit_test(long_gap_uses_timestamp_escape),
		cmocka_unit_test(second_finish_is_a_state_error),
		cmocka_unit_test(malformed_category_patterns_are_refused),
		cmocka_unit_test(config_struct_size_is_checked),
		cmocka_unit_test(config_blocking_timeout_is_checked),
		cmocka_unit_test(version_is_one_fact),
		cmocka_unit_test(unfinished_session_is_reported_at_exit),
		cmocka_unit_test(streaming_saves_before_a_half_fills),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
