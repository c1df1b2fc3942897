/* test_provider.c - the provider lifecycle rules of fuchsia.tracing.provider, one by one. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "tests/support/nt_test_util.h"

static void init(int mode, const char *categories)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	cfg.categories = categories;
	assert_int_equal(nt_provider_initialize(&cfg), NT_OK);
}

static void terminate_and_read(const char *tag, test_trace *t)
{
	char path[256];
	test_tmp_path(path, sizeof(path), tag);
	assert_int_equal(nt_provider_terminate(path), NT_OK);
	assert_int_equal(test_read(path, NT_ORDER_TIME, t), 0);
	unlink(path);
	assert_int_equal(t->errors, 0);
}

/* The same call sites in every run, so caches across runs are what is tested. */
static void emit_run(int run, int n)
{
	for (int i = 0; i < n; i++) {
		NT_BEGIN("lc", "work", NT_I32("run", run), NT_I32("i", i));
		NT_END("lc", "work");
	}
}

static void calls_out_of_order_are_rejected_or_ignored(void **state)
{
	(void)state;
	assert_int_equal(nt_provider_start(NT_BUFFER_RETAIN, NULL), NT_ERR_STATE);
	assert_int_equal(nt_provider_stop(), NT_ERR_STATE);
	init(NT_MODE_ONESHOT, NULL);
	nt_config cfg;
	nt_config_init(&cfg);
	assert_int_equal(nt_provider_initialize(&cfg), NT_ERR_STATE); /* ignored */
	assert_false(nt_is_recording());
	assert_int_equal(nt_provider_stop(), NT_OK); /* stop while stopped: ignored */
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_ENTIRE, NULL), NT_OK);
	emit_run(1, 10);
	/* start while started: ignored, and it must not clear anything */
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_ENTIRE, NULL), NT_OK);
	assert_true(nt_is_recording());
	emit_run(1, 10);
	assert_int_equal(nt_provider_start((nt_buffer_disposition)9, NULL), NT_OK); /* ignored too */
	assert_int_equal(nt_provider_stop(), NT_OK);
	assert_int_equal(nt_provider_stop(), NT_OK);
	assert_int_equal(nt_provider_start((nt_buffer_disposition)9, NULL), NT_ERR_INVALID_ARGUMENT);
	test_trace t;
	terminate_and_read("order", &t);
	assert_int_equal(t.n, 40);
	test_trace_free(&t);
}

static void retain_appends_runs_and_skips_stopped_time(void **state)
{
	(void)state;
	init(NT_MODE_ONESHOT, NULL);
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_ENTIRE, NULL), NT_OK);
	emit_run(1, 5);
	assert_int_equal(nt_provider_stop(), NT_OK);
	emit_run(99, 5); /* tracing is off: neither recorded nor counted */
	assert_int_equal(nt_provider_start(NT_BUFFER_RETAIN, NULL), NT_OK);
	emit_run(2, 5);
	assert_int_equal(nt_provider_stop(), NT_OK);
	assert_int_equal(nt_provider_start(NT_BUFFER_RETAIN, NULL), NT_OK);
	emit_run(3, 5);
	test_trace t;
	terminate_and_read("retain", &t);
	assert_int_equal(t.n, 30);
	for (size_t i = 0; i < t.n; i += 2)
		assert_int_equal(t.ev[i].args[0].value.i64, 1 + (int)(i / 10));
	assert_int_equal(t.gaps, 0); /* ordinals continue across runs */
	assert_int_equal(t.info.events_dropped, 0);
	assert_int_equal(t.callsites, 2); /* each site registered once for all runs */
	test_trace_free(&t);
}

static void clear_nondurable_keeps_references_valid(void **state)
{
	(void)state;
	init(NT_MODE_CIRCULAR, NULL);
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_ENTIRE, NULL), NT_OK);
	nt_thread_set_name("lc-main");
	emit_run(1, 50);
	assert_int_equal(nt_provider_stop(), NT_OK);
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_NONDURABLE, NULL), NT_OK);
	emit_run(2, 7);
	test_trace t;
	terminate_and_read("nondurable", &t);
	assert_int_equal(t.n, 14); /* run 1's events are gone */
	for (size_t i = 0; i < t.n; i++) {
		/* the cached call sites still resolve to their durable records */
		assert_string_equal(t.ev[i].category, "lc");
		assert_string_equal(t.ev[i].name, "work");
		assert_string_equal(t.ev[i].thread_name, "lc-main");
	}
	assert_int_equal(t.ev[0].args[0].value.i64, 2);
	assert_int_equal(t.gaps, 0); /* ordinals restarted with the cleared events */
	assert_int_equal(t.callsites, 2); /* no site registered twice */
	test_trace_free(&t);
}

static void clear_entire_invalidates_caches_safely(void **state)
{
	(void)state;
	init(NT_MODE_ONESHOT, NULL);
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_ENTIRE, NULL), NT_OK);
	nt_thread_set_name("before");
	emit_run(1, 3);
	NT_INSTANT("lc", "only-in-run-1");
	assert_int_equal(nt_provider_stop(), NT_OK);
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_ENTIRE, NULL), NT_OK);
	emit_run(2, 4);
	test_trace t;
	terminate_and_read("entire", &t);
	assert_int_equal(t.n, 8);
	for (size_t i = 0; i < t.n; i++) {
		assert_string_equal(t.ev[i].name, "work"); /* re-registered, not a stale index */
		assert_int_equal(t.ev[i].thread, 1);       /* the thread registered again */
	}
	assert_int_equal(t.callsites, 2); /* only run 2's sites exist now */
	test_trace_free(&t);
}

static void additional_categories_apply_to_their_run(void **state)
{
	(void)state;
	init(NT_MODE_ONESHOT, "base");
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_ENTIRE, NULL), NT_OK);
	for (int run = 0; run < 3; run++) {
		NT_INSTANT("base", "b", NT_I32("run", run));
		NT_INSTANT("extra", "e", NT_I32("run", run));
		assert_int_equal(nt_provider_stop(), NT_OK);
		assert_int_equal(nt_provider_start(NT_BUFFER_RETAIN, run == 0 ? "extra" : NULL), NT_OK);
	}
	test_trace t;
	terminate_and_read("categories", &t);
	/* run 0: base only; run 1: base + extra; run 2: base only again */
	assert_int_equal(t.n, 4);
	assert_string_equal(t.ev[2].name, "e");
	assert_int_equal(t.ev[2].args[0].value.i64, 1);
	test_trace_free(&t);
}

static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
static void *holder(void *arg)
{
	NT_INSTANT("lc", "held"); /* claims a chunk and keeps it while blocked */
	pthread_mutex_lock(&hold);
	NT_INSTANT("lc", "held");
	pthread_mutex_unlock(&hold);
	return arg;
}

static void retain_closes_chunks_left_open(void **state)
{
	(void)state;
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_CIRCULAR;
	cfg.buffer_size = 64 * 1024;
	cfg.chunk_size = 4096;
	assert_int_equal(nt_provider_initialize(&cfg), NT_OK);
	assert_int_equal(nt_provider_start(NT_BUFFER_CLEAR_ENTIRE, NULL), NT_OK);
	pthread_mutex_lock(&hold);
	pthread_t th;
	pthread_create(&th, NULL, holder, NULL);
	while (1) { /* wait until the holder has its chunk */
		nt_stats st;
		nt_get_stats(&st);
		if (st.threads == 1)
			break;
		usleep(1000);
	}
	usleep(5000);
	assert_int_equal(nt_provider_stop(), NT_OK);
	assert_int_equal(nt_provider_start(NT_BUFFER_RETAIN, NULL), NT_OK);
	/* Wrap the arena many times: the holder's old slot must be reusable too, or
	 * everything it held would survive every wrap. */
	for (int i = 0; i < 40000; i++)
		NT_INSTANT("lc", "fill", NT_I32("i", i));
	pthread_mutex_unlock(&hold);
	pthread_join(th, NULL);
	test_trace t;
	terminate_and_read("closeall", &t);
	size_t held = 0;
	for (size_t i = 0; i < t.n; i++)
		held += strcmp(t.ev[i].name, "held") == 0;
	assert_int_equal(held, 1); /* the run-1 instant was overwritten; the late one survives */
	assert_int_equal(t.info.events_dropped, 0);
	test_trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(calls_out_of_order_are_rejected_or_ignored),
		cmocka_unit_test(retain_appends_runs_and_skips_stopped_time),
		cmocka_unit_test(clear_nondurable_keeps_references_valid),
		cmocka_unit_test(clear_entire_invalidates_caches_safely),
		cmocka_unit_test(additional_categories_apply_to_their_run),
		cmocka_unit_test(retain_closes_chunks_left_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
