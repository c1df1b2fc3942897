/*
 * compile_pedantic.c - compiled, not run (test_pedantic.py): every macro of nanotrace.h and
 * nanotrace_trace2.h, each event macro with no argument after its names and with some, as
 * ISO C11 and C++11/C++17 with -Wpedantic -Werror, and again with NTRACE. An event without
 * arguments once needed GNU's `, ##__VA_ARGS__` ("requires at least one argument for the
 * '...'"), and the Trace2 macros with a value are statement expressions.
 */
#include <stddef.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_trace2.h>

static NT_T2_TIMER_DEFINE(timer, "c", "t", 0);
static NT_T2_COUNTER_DEFINE(counter, "c", "n", 0);

int compile_pedantic(const char *path, int n, double d, const char *const *argv);

static void low_level(const char *path, int n, double d)
{
	(void)path; /* NTRACE: the macros use no argument */
	(void)n;
	(void)d;
	NT_INSTANT("c", "none");
	NT_BEGIN("c", "none");
	NT_END("c", "none");
	NT_COUNTER("c", "none");
	NT_COMPLETE("c", "none", nt_now());
	{
		NT_SCOPE("c", "none");
	}
	NT_INSTANT("c", "all", NT_I64("a", n), NT_U64("b", n), NT_I32("c", n), NT_U32("d", n),
		   NT_F64("e", d), NT_BOOL("f", n > 0), NT_PTR("g", path), NT_STR("h", path));
	NT_BEGIN("c", "one", NT_STR("path", path));
	NT_END("c", "one", NT_I64("n", n));
	NT_COUNTER("c", "one", NT_U64("bytes", n));
	NT_COMPLETE("c", "one", nt_now(), NT_STR("path", path));
	{
		NT_SCOPE("c", "one", NT_I32("n", n));
	}
	NT_INSTANT_DYN(path, path);
	NT_BEGIN_DYN(path, path);
	NT_END_DYN(path, path);
	NT_COUNTER_DYN(path, path);
	NT_INSTANT_DYN(path, path, nt_arg_i64(path, n));
	NT_BEGIN_DYN(path, path, nt_arg_str(path, path));
	NT_END_DYN(path, path, nt_arg_f64(path, d));
	NT_COUNTER_DYN(path, path, nt_arg_u64(path, (uint64_t)n));
	NT_ASYNC_BEGIN("c", "req", n);
	NT_ASYNC_INSTANT("c", "req", n, NT_STR("path", path));
	NT_ASYNC_END("c", "req", n, NT_I32("n", n), NT_F64("d", d));
	NT_FLOW_BEGIN("c", "flow", (uint64_t)n);
	NT_FLOW_STEP("c", "flow", path);
	NT_FLOW_END("c", "flow", n + 1);
	NT_ASYNC_BEGIN_GLOBAL("c", "req", n);
	NT_ASYNC_INSTANT_GLOBAL("c", "req", n, NT_I64("n", n));
	NT_ASYNC_END_GLOBAL("c", "req", n);
	NT_FLOW_BEGIN_GLOBAL("c", "flow", n);
	NT_FLOW_STEP_GLOBAL("c", "flow", n);
	NT_FLOW_END_GLOBAL("c", "flow", n);
	NT_ASYNC_BEGIN_DYN(path, path, n);
	NT_ASYNC_INSTANT_DYN(path, path, n, nt_arg_i64(path, n));
	NT_ASYNC_END_DYN(path, path, n);
	NT_FLOW_BEGIN_DYN(path, path, n);
	NT_FLOW_STEP_DYN(path, path, n);
	NT_FLOW_END_DYN(path, path, n);
	NT_ASYNC_BEGIN_GLOBAL_DYN(path, path, n);
	NT_ASYNC_INSTANT_GLOBAL_DYN(path, path, n);
	NT_ASYNC_END_GLOBAL_DYN(path, path, n, nt_arg_str(path, path));
	NT_FLOW_BEGIN_GLOBAL_DYN(path, path, n);
	NT_FLOW_STEP_GLOBAL_DYN(path, path, n);
	NT_FLOW_END_GLOBAL_DYN(path, path, n);
}

static int trace2(const char *path, int n, const char *const *argv)
{
	nt_trace2_child child;
	int bad = 0;
	(void)path;
	(void)n;
	(void)argv;
	(void)child;
	(void)timer;
	(void)counter;
	NT_T2_INITIALIZE_CLOCK();
	bad |= NT_T2_INITIALIZE("v") != 0;
	NT_T2_CMD_START(argv);
	NT_T2_CMD_ANCESTRY(argv);
	NT_T2_CMD_PATH(path);
	NT_T2_CMD_NAME(path);
	NT_T2_CMD_MODE(path);
	NT_T2_CMD_ALIAS(path, argv);
	NT_T2_DEF_PARAM("s", "p", path);
	NT_T2_LIST_CONFIG("s", argv, argv, 1);
	NT_T2_LIST_ENV_VARS();
	NT_T2_DEF_REPO(n, path);
	NT_T2_CHILD_START(&child, "c", NULL, NULL, 0, 1, argv);
	NT_T2_CHILD_READY(&child, n, "ready");
	NT_T2_CHILD_EXIT(&child, n, 0);
	bad |= NT_T2_EXEC(path, argv) != 0;
	NT_T2_EXEC_RESULT(n, 1);
	NT_T2_THREAD_START(path);
	NT_T2_THREAD_EXIT();
	NT_T2_REGION_ENTER("c", "l", n);
	NT_T2_REGION_ENTER_PRINTF("c", "l", n, "%d", n);
	NT_T2_DATA_STRING("c", n, "k", path);
	NT_T2_DATA_INTMAX("c", -1, "k", n);
	NT_T2_DATA_JSON("c", n, "k", "{}");
	NT_T2_PRINTF("%s", path);
	NT_T2_CMD_ERROR("%d", n);
	NT_T2_REGION_LEAVE_PRINTF("c", "l", n, "%d", n);
	NT_T2_REGION_LEAVE("c", "l", n);
	bad |= nt_trace2_is_enabled() != 0;
	return bad ? -1 : NT_T2_CMD_EXIT(3);
}

int compile_pedantic(const char *path, int n, double d, const char *const *argv)
{
	low_level(path, n, d);
	return trace2(path, n, argv);
}
