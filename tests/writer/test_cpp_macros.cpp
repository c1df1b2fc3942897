/*
 * test_cpp_macros.cpp - every macro of nanotrace.h and nanotrace_trace2.h compiles as C++
 * (-Wall -Wextra -Werror, g++ and clang++) and records what it says: the events are read
 * back and checked. NT_SCOPE ends at scope exit, also on an early return and when an
 * exception leaves the block; the *_DYN forms record names known only at run time.
 */
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_trace2.h>
#include "tests/support/nt_cmocka.h"
#include "tests/support/nt_test_util.h"

static void start_session()
{
	nt_config cfg;
	nt_config_init(&cfg);
	assert_msg(nt_start(&cfg) == NT_OK, "nt_start: %s", nt_last_error());
}

/* Finishes the session and reads it back in stream order (one thread: program order). */
static void finish_and_read(const char *tag, test_trace *t)
{
	char path[256];
	test_tmp_path(path, sizeof(path), tag);
	assert_msg(nt_finish(path) == NT_OK, "nt_finish: %s", nt_last_error());
	int rc = test_read(path, NT_ORDER_STREAM, t);
	unlink(path);
	assert_msg(rc == 0 && t->errors == 0, "read: %s", t->first_error);
}

static const test_event *expect(const test_trace *t, size_t i, unsigned kind, const char *name)
{
	assert_msg(i < t->n, "event %zu of %zu missing (%s)", i, t->n, name);
	const test_event *e = &t->ev[i];
	assert_msg(e->kind == kind && strcmp(e->name, name) == 0,
		   "event %zu: kind %u name %s, want kind %u name %s", i, e->kind, e->name, kind,
		   name);
	return e;
}

static int scope_with_early_return(int early)
{
	NT_SCOPE("cpp", "early", NT_I32("early", early));
	if (early)
		return 1;
	NT_INSTANT("cpp", "not_early");
	return 0;
}

static void scope_that_throws()
{
	NT_SCOPE("cpp", "throws");
	throw std::runtime_error("leave the scope");
}

static void low_level_macros_record_in_cpp(void **state)
{
	(void)state;
	start_session();
	int local = 7;
	std::string path = "/tmp/file"; /* runtime values in every macro */
	NT_INSTANT("cpp", "instant", NT_I64("i64", -5), NT_U64("u64", 1ull << 40),
		   NT_I32("i32", local), NT_U32("u32", 3u), NT_F64("f64", 0.5),
		   NT_BOOL("bool", local > 1), NT_PTR("ptr", &local), NT_STR("str", path.c_str()));
	NT_BEGIN("cpp", "begin", NT_STR("path", path.c_str()));
	NT_END("cpp", "begin");
	NT_COUNTER("cpp", "counter", NT_U64("bytes", 4096));
	uint64_t t0 = nt_now();
	NT_COMPLETE("cpp", "complete", t0, NT_I32("n", local));
	NT_COMPLETE("cpp", "complete_noargs", t0);
	{
		NT_SCOPE("cpp", "scope", NT_STR("path", path.c_str()));
		NT_INSTANT("cpp", "inside");
	}
	scope_with_early_return(1);
	try {
		scope_that_throws();
	} catch (const std::exception &) {
		NT_INSTANT("cpp", "caught");
	}
	{
		NT_SCOPE("cpp", "request");
		NT_ASYNC_BEGIN("cpp", "req", local);
		NT_FLOW_BEGIN_GLOBAL("cpp", "flow", path.size());
		NT_ASYNC_END("cpp", "req", local, NT_STR("path", path.c_str()));
	}
	test_trace t;
	finish_and_read("cpp-low", &t);
	const test_event *e = expect(&t, 0, NT_KIND_INSTANT, "instant");
	assert_msg(e->nargs == 8 && e->args[0].value.i64 == -5 &&
			   e->args[1].value.u64 == (1ull << 40) && e->args[2].value.i64 == 7 &&
			   e->args[3].value.u64 == 3 && e->args[4].value.f64 == 0.5 &&
			   e->args[5].value.u64 == 1 && strcmp(e->names[6], "ptr") == 0 &&
			   strcmp(e->strs[7], "/tmp/file") == 0,
		   "instant: %u arguments, or a value differs", e->nargs);
	e = expect(&t, 1, NT_KIND_BEGIN, "begin");
	assert_msg(strcmp(e->strs[0], "/tmp/file") == 0, "begin path %s", e->strs[0]);
	expect(&t, 2, NT_KIND_END, "begin");
	expect(&t, 3, NT_KIND_COUNTER, "counter");
	expect(&t, 4, NT_KIND_COMPLETE, "complete");
	expect(&t, 5, NT_KIND_COMPLETE, "complete_noargs");
	expect(&t, 6, NT_KIND_BEGIN, "scope");
	expect(&t, 7, NT_KIND_INSTANT, "inside");
	expect(&t, 8, NT_KIND_END, "scope");
	expect(&t, 9, NT_KIND_BEGIN, "early");
	expect(&t, 10, NT_KIND_END, "early"); /* the early return ended it */
	expect(&t, 11, NT_KIND_BEGIN, "throws");
	expect(&t, 12, NT_KIND_END, "throws"); /* unwinding ended it, before the catch */
	expect(&t, 13, NT_KIND_INSTANT, "caught");
	expect(&t, 14, NT_KIND_BEGIN, "request");
	e = expect(&t, 15, NT_KIND_ASYNC_BEGIN, "req");
	assert_msg(e->id == 7 && e->id_scope == NT_ID_PROCESS, "async id %llu",
		   (unsigned long long)e->id);
	e = expect(&t, 16, NT_KIND_FLOW_BEGIN | NT_KIND_ID_GLOBAL, "flow");
	assert_msg(e->id == 9 && e->id_scope == NT_ID_GLOBAL, "flow id %llu",
		   (unsigned long long)e->id);
	e = expect(&t, 17, NT_KIND_ASYNC_END, "req");
	assert_msg(e->id == 7 && strcmp(e->strs[0], "/tmp/file") == 0, "async end");
	expect(&t, 18, NT_KIND_END, "request");
	assert_msg(t.n == 19, "%zu events, want 19", t.n);
	test_trace_free(&t);
}

/* Names from a runtime array: each call records its own, and the strings are copied (the
 * buffer is overwritten after each call). */
static void dynamic_names_record_each_value(void **state)
{
	(void)state;
	start_session();
	const char *names[] = { "alpha", "beta" };
	char buf[32];
	for (int i = 0; i < 2; i++) {
		snprintf(buf, sizeof(buf), "cat-%s", names[i]);
		NT_INSTANT_DYN(buf, names[i], nt_arg_i64(names[i], i), NT_I64("fixed", 10 + i));
		memset(buf, 'x', sizeof(buf) - 1);
	}
	NT_BEGIN_DYN("dyn", names[1]);
	NT_END_DYN("dyn", names[1]);
	NT_COUNTER_DYN("dyn", "count", nt_arg_u64(names[0], 5));
	NT_ASYNC_BEGIN_DYN("dyn", names[0], 11u, nt_arg_i64(names[1], 1));
	NT_FLOW_END_GLOBAL_DYN("dyn", names[1], 12u);
	test_trace t;
	finish_and_read("cpp-dyn", &t);
	const test_event *a = expect(&t, 5, NT_KIND_ASYNC_BEGIN, "alpha");
	assert_msg(a->id == 11 && a->id_scope == NT_ID_PROCESS && a->nargs == 1, "async id %llu",
		   (unsigned long long)a->id);
	a = expect(&t, 6, NT_KIND_FLOW_END | NT_KIND_ID_GLOBAL, "beta");
	assert_msg(a->id == 12 && a->id_scope == NT_ID_GLOBAL, "flow id %llu",
		   (unsigned long long)a->id);
	for (int i = 0; i < 2; i++) {
		const test_event *e = expect(&t, (size_t)i, NT_KIND_INSTANT, names[i]);
		snprintf(buf, sizeof(buf), "cat-%s", names[i]);
		assert_msg(strcmp(e->category, buf) == 0 && e->nargs == 2 &&
				   strcmp(e->names[0], names[i]) == 0 && e->args[0].value.i64 == i &&
				   strcmp(e->names[1], "fixed") == 0 && e->args[1].value.i64 == 10 + i,
			   "event %d: %s/%s %s=%lld", i, e->category, e->name, e->names[0],
			   (long long)e->args[0].value.i64);
	}
	expect(&t, 2, NT_KIND_BEGIN, "beta");
	expect(&t, 3, NT_KIND_END, "beta");
	const test_event *e = expect(&t, 4, NT_KIND_COUNTER, "count");
	assert_msg(strcmp(e->names[0], "alpha") == 0 && e->args[0].value.u64 == 5, "counter");
	assert_msg(t.n == 7, "%zu events, want 7", t.n);
	test_trace_free(&t);
}

static NT_T2_TIMER_DEFINE(cpp_timer, "cpp", "timer", 1);
static NT_T2_COUNTER_DEFINE(cpp_counter, "cpp", "counter", 0);

static void t2_thread_body()
{
	NT_T2_THREAD_START("cpp-worker");
	nt_trace2_timer_start(&cpp_timer);
	nt_trace2_counter_add(&cpp_counter, 2);
	nt_trace2_timer_stop(&cpp_timer);
	NT_T2_THREAD_EXIT();
}

/* Every Trace2 macro, in one session; each records its message. */
static void t2_every_macro(int *exit_code)
{
	const char *argv[] = { "prog", "arg", NULL };
	const char *keys[] = { "core.x" }, *values[] = { "1" };
	NT_T2_INITIALIZE_CLOCK();
	assert_msg(NT_T2_INITIALIZE("9.9") != 0, "Trace2 off inside a session");
	NT_T2_CMD_START(argv);
	NT_T2_CMD_ANCESTRY(argv);
	NT_T2_CMD_PATH("/usr/bin/prog");
	NT_T2_CMD_NAME("cpp");
	NT_T2_CMD_MODE("mode");
	NT_T2_CMD_ALIAS("al", argv);
	NT_T2_DEF_PARAM("global", "core.y", "2");
	NT_T2_LIST_CONFIG("global", keys, values, 1);
	NT_T2_LIST_ENV_VARS();
	NT_T2_DEF_REPO(1, "/repo");
	nt_trace2_child child;
	NT_T2_CHILD_START(&child, "cls", NULL, NULL, 0, 0, argv);
	NT_T2_CHILD_READY(&child, 1234, "ready");
	NT_T2_CHILD_EXIT(&child, 1234, 0);
	int exec_id = NT_T2_EXEC("prog", argv);
	NT_T2_EXEC_RESULT(exec_id, 2);
	std::thread(t2_thread_body).join();
	NT_T2_REGION_ENTER("cpp", "region", -1);
	NT_T2_REGION_ENTER_PRINTF("cpp", "fmt", 1, "n=%d", 3);
	NT_T2_DATA_STRING("cpp", -1, "key", "value");
	NT_T2_DATA_INTMAX("cpp", 1, "int", 42);
	NT_T2_DATA_JSON("cpp", -1, "json", "{}");
	NT_T2_PRINTF("%s", "printf");
	NT_T2_CMD_ERROR("error %d", 1);
	NT_T2_REGION_LEAVE_PRINTF("cpp", "fmt", 1, "n=%d", 3);
	NT_T2_REGION_LEAVE("cpp", "region", -1);
	*exit_code = NT_T2_CMD_EXIT(5);
}

static void trace2_macros_record_in_cpp(void **state)
{
	(void)state;
	start_session();
	int code = 0;
	t2_every_macro(&code);
	assert_msg(code == 5, "NT_T2_CMD_EXIT evaluated to %d", code);
	test_trace t;
	finish_and_read("cpp-t2", &t);
	static const int want[] = { NT_T2E_VERSION,      NT_T2E_START,        NT_T2E_CMD_ANCESTRY,
				    NT_T2E_CMD_PATH,     NT_T2E_CMD_NAME,     NT_T2E_CMD_MODE,
				    NT_T2E_ALIAS,        NT_T2E_DEF_PARAM,    NT_T2E_DEF_REPO,
				    NT_T2E_CHILD_START,  NT_T2E_CHILD_READY,  NT_T2E_CHILD_EXIT,
				    NT_T2E_EXEC,         NT_T2E_EXEC_RESULT,  NT_T2E_THREAD_START,
				    NT_T2E_THREAD_EXIT,  NT_T2E_TH_TIMER,     NT_T2E_REGION_ENTER,
				    NT_T2E_REGION_LEAVE, NT_T2E_DATA,         NT_T2E_DATA_JSON,
				    NT_T2E_PRINTF,       NT_T2E_ERROR,        NT_T2E_EXIT };
	for (int w : want) {
		size_t found = 0;
		for (size_t i = 0; i < t.n; i++)
			found += t.ev[i].kind == NT_KIND_T2_FIRST + w;
		assert_msg(found > 0, "no %s message", nt_t2_event_names[w]);
	}
	test_trace_free(&t);
}

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(low_level_macros_record_in_cpp),
		cmocka_unit_test(dynamic_names_record_each_value),
		cmocka_unit_test(trace2_macros_record_in_cpp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
