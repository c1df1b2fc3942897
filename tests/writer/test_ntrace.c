/* test_ntrace.c - with NTRACE defined, event macros vanish and their arguments are not
 * evaluated, while the functions stay usable. */
#define NTRACE 1
#include <stdio.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "tests/support/nt_cmocka.h"
#include "tests/support/nt_test_util.h"

static int evaluated;
__attribute__((unused)) /* the macros must not even reference it */
static int side_effect(void)
{
	return ++evaluated;
}

static void ntrace_removes_events_and_evaluates_no_argument(void **state)
{
	(void)state;
	nt_config cfg;
	nt_config_init(&cfg);
	assert_msg(nt_start(&cfg) == NT_OK, "nt_start: %s", nt_last_error());
	NT_INSTANT("c", "n", NT_I32("x", side_effect()));
	NT_BEGIN("c", "n", NT_I32("x", side_effect()));
	NT_END("c", "n");
	NT_COUNTER("c", "n", NT_I32("x", side_effect()));
	NT_COMPLETE("c", "n", nt_now(), NT_I32("x", side_effect()));
	{
		NT_SCOPE("c", "n", NT_I32("x", side_effect()));
	}
	NT_ASYNC_BEGIN("c", "n", side_effect(), NT_I32("x", side_effect()));
	NT_ASYNC_END_GLOBAL("c", "n", side_effect());
	NT_FLOW_STEP("c", "n", side_effect());
	NT_FLOW_END_GLOBAL_DYN("c", "n", side_effect(), nt_arg_i64("x", side_effect()));
	char path[256];
	test_tmp_path(path, sizeof(path), "ntrace");
	assert_msg(nt_finish(path) == NT_OK, "nt_finish: %s", nt_last_error());
	test_trace t;
	int rc = test_read(path, NT_ORDER_STREAM, &t);
	unlink(path);
	assert_msg(rc == 0 && t.n == 0 && evaluated == 0,
		   "rc %d, %zu events, %d arguments evaluated", rc, t.n, evaluated);
	test_trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ntrace_removes_events_and_evaluates_no_argument),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
