/* test_ntrace.c - with NTRACE defined, event macros vanish and their arguments are not
 * evaluated, while the functions stay usable. */
#define NTRACE 1
#include <stdio.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "nt_test_util.h"

static int evaluated;
__attribute__((unused)) /* the macros must not even reference it */
static int side_effect(void)
{
	return ++evaluated;
}

int main(void)
{
	nt_config cfg;
	nt_config_init(&cfg);
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "FAIL: nt_start: %s\n", nt_last_error());
		return 1;
	}
	NT_INSTANT("c", "n", NT_I32("x", side_effect()));
	NT_BEGIN("c", "n", NT_I32("x", side_effect()));
	NT_END("c", "n");
	NT_COUNTER("c", "n", NT_I32("x", side_effect()));
	NT_COMPLETE("c", "n", nt_now(), NT_I32("x", side_effect()));
	{
		NT_SCOPE("c", "n", NT_I32("x", side_effect()));
	}
	char path[256];
	test_tmp_path(path, sizeof(path), "ntrace");
	if (nt_finish(path) != NT_OK) {
		fprintf(stderr, "FAIL: nt_finish: %s\n", nt_last_error());
		return 1;
	}
	test_trace t;
	int rc = test_read(path, NT_ORDER_STREAM, &t);
	unlink(path);
	if (rc != 0 || t.n != 0 || evaluated != 0) {
		fprintf(stderr, "FAIL: rc %d, %zu events, %d arguments evaluated\n", rc, t.n, evaluated);
		return 1;
	}
	printf("ok: NTRACE removes every event and evaluates no argument\n");
	test_trace_free(&t);
	return 0;
}
