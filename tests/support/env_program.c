/*
 * env_program - a traced program whose own behaviour the environment must not change, for
 * tests/writer/test_env_garbage.py.
 *
 *   env_program trace2   NT_T2_INITIALIZE reads NANOTRACE and every NANOTRACE_* variable a
 *                        Trace2 program reads (it prints its own warnings)
 *   env_program plain    nt_start_from_env(), whose caller prints nt_last_error() on one
 *                        line, as the header asks a caller to do; nt_start() itself reads
 *                        NANOTRACE_COMPRESSION, NANOTRACE_BLOCKING_TIMEOUT and
 *                        NANOTRACE_CLOCK (and prints for them)
 *   env_program start    nt_start() of an anonymous arena (NT_CLOCK_AUTO, compression 0),
 *                        finished to argv[2]: the variables nt_start() reads on its own
 *
 * Each prints the same line on standard output and exits with status 7, traced or not:
 * "env_program: <mode> did its work, recording=<0|1>".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_trace2.h>

static const char *const config_keys[] = { "core.editor", "remote.origin.url" };
static const char *const config_values[] = { "vi", "https://user:secret@example.com/r.git" };

static int work(void)
{
	int sum = 0;
	for (int i = 0; i < 1000; i++) {
		NT_INSTANT("env", "step", NT_I32("i", i));
		sum += i;
	}
	return sum == 499500;
}

static int trace2(const char **argv)
{
	int on = NT_T2_INITIALIZE(NULL);
	NT_T2_CMD_START(argv);
	NT_T2_CMD_NAME("envprog");
	NT_T2_LIST_CONFIG("global", config_keys, config_values, 2);
	NT_T2_LIST_ENV_VARS();
	NT_T2_DEF_PARAM("command", "remote.url", "https://user:secret@example.com/x.git");
	NT_T2_REGION_ENTER("env", "work", -1);
	int ok = work();
	NT_T2_REGION_LEAVE("env", "work", -1);
	printf("env_program: trace2 did its work, recording=%d\n", on && nt_is_recording());
	fflush(stdout);
	return NT_T2_CMD_EXIT(ok ? 7 : 1);
}

static int plain(void)
{
	nt_result rc = nt_start_from_env();
	if (rc < 0)
		fprintf(stderr, "nanotrace: %s\n", nt_last_error());
	int ok = work();
	printf("env_program: plain did its work, recording=%d\n", nt_is_recording());
	return ok ? 7 : 1; /* a file target is finished at exit */
}

static int start(const char *path)
{
	nt_config cfg;
	nt_config_init(&cfg);
	int on = nt_start(&cfg) == NT_OK;
	if (!on)
		fprintf(stderr, "nanotrace: %s\n", nt_last_error());
	int ok = work();
	printf("env_program: start did its work, recording=%d\n", nt_is_recording());
	if (on && nt_finish(path) != NT_OK)
		fprintf(stderr, "nanotrace: %s\n", nt_last_error());
	return ok ? 7 : 1;
}

int main(int argc, const char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "trace2") == 0)
		return trace2(argv);
	if (argc >= 2 && strcmp(argv[1], "plain") == 0)
		return plain();
	if (argc >= 3 && strcmp(argv[1], "start") == 0)
		return start(argv[2]);
	fprintf(stderr, "usage: env_program trace2 | plain | start ARCHIVE\n");
	return 2;
}
