/*
 * test_ntrace_nolib.c - a program built with NTRACE that uses every macro of nanotrace.h and
 * nanotrace_trace2.h links without libnanotrace (meson links it with nothing of the
 * library: a macro that still referenced it would fail the link), evaluates no argument of
 * a macro without a value, and gets the value of those that have one. No cmocka: the
 * program must need nothing but libc.
 */
#define NTRACE 1
#include <stdio.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_trace2.h>

static int evaluated;
__attribute__((unused)) static int side_effect(void)
{
	return ++evaluated;
}

static NT_T2_TIMER_DEFINE(timer, "c", "t", 0);
static NT_T2_COUNTER_DEFINE(counter, "c", "n", 0);

static void low_level(void)
{
	NT_INSTANT("c", "n", NT_I64("a", side_effect()), NT_U64("b", side_effect()),
		   NT_I32("c", side_effect()), NT_U32("d", side_effect()),
		   NT_F64("e", side_effect()), NT_BOOL("f", side_effect()),
		   NT_PTR("g", side_effect()), NT_STR("h", "x"));
	NT_BEGIN("c", "n", NT_I32("x", side_effect()));
	NT_END("c", "n", NT_I32("x", side_effect()));
	NT_COUNTER("c", "n", NT_I32("x", side_effect()));
	NT_COMPLETE("c", "n", side_effect(), NT_I32("x", side_effect()));
	{
		NT_SCOPE("c", "n", NT_I32("x", side_effect()));
	}
	NT_INSTANT_DYN("c", "n", nt_arg_i64("x", side_effect()));
	NT_BEGIN_DYN("c", "n", nt_arg_i64("x", side_effect()));
	NT_END_DYN("c", "n", nt_arg_i64("x", side_effect()));
	NT_COUNTER_DYN("c", "n", nt_arg_i64("x", side_effect()));
}

static int trace2(void)
{
	const char *argv[] = { "p", NULL };
	nt_trace2_child child;
	int bad = 0;
	(void)argv;
	(void)child;
	(void)timer;
	(void)counter;
	NT_T2_INITIALIZE_CLOCK();
	bad |= NT_T2_INITIALIZE((side_effect(), "v")) != 0;
	NT_T2_CMD_START((side_effect(), argv));
	NT_T2_CMD_ANCESTRY((side_effect(), argv));
	NT_T2_CMD_PATH((side_effect(), "p"));
	NT_T2_CMD_NAME((side_effect(), "p"));
	NT_T2_CMD_MODE((side_effect(), "p"));
	NT_T2_CMD_ALIAS((side_effect(), "p"), argv);
	NT_T2_DEF_PARAM("s", "p", (side_effect(), "v"));
	NT_T2_LIST_CONFIG("s", argv, argv, side_effect());
	NT_T2_LIST_ENV_VARS();
	NT_T2_DEF_REPO(side_effect(), "w");
	NT_T2_CHILD_START(&child, "c", NULL, NULL, 0, side_effect(), argv);
	NT_T2_CHILD_READY(&child, side_effect(), "ready");
	NT_T2_CHILD_EXIT(&child, side_effect(), 0);
	bad |= NT_T2_EXEC((side_effect(), "p"), argv) != 0;
	NT_T2_EXEC_RESULT(side_effect(), 1);
	NT_T2_THREAD_START((side_effect(), "t"));
	NT_T2_THREAD_EXIT();
	NT_T2_REGION_ENTER("c", "l", side_effect());
	NT_T2_REGION_ENTER_PRINTF("c", "l", side_effect(), "%d", side_effect());
	NT_T2_DATA_STRING("c", side_effect(), "k", "v");
	NT_T2_DATA_INTMAX("c", -1, "k", side_effect());
	NT_T2_DATA_JSON("c", side_effect(), "k", "{}");
	NT_T2_PRINTF("%d", side_effect());
	NT_T2_CMD_ERROR("%d", side_effect());
	NT_T2_REGION_LEAVE_PRINTF("c", "l", side_effect(), "%d", side_effect());
	NT_T2_REGION_LEAVE("c", "l", side_effect());
	bad |= nt_trace2_is_enabled() != 0;
	return bad ? -1 : NT_T2_CMD_EXIT(3);
}

int main(void)
{
	low_level();
	int code = trace2();
	if (code != 3 || evaluated != 0) {
		fprintf(stderr, "NT_T2_CMD_EXIT gave %d (want 3), %d arguments evaluated (want 0)\n",
			code, evaluated);
		return 1;
	}
	return 0;
}
