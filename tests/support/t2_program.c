/*
 * t2_program - uses every Trace2 message, for tests/test_trace2_writer.py.
 *
 *   t2_program [--child] [--signal] [--fork] [--threads N] [--wait-gone PATH]
 *
 * The parent records start, cmd_name, cmd_mode, alias, def_param (direct, from a config
 * table and from the environment), def_repo, nested regions (plain and printf, with and
 * without a repository), data (string, integer, JSON), printf, error, threads with their
 * own regions, per-thread and process timers and counters, a child process (itself with
 * --child, which inherits NANOTRACE and records its own archive), a failed child, exec
 * and exec_result (an exec of a missing program), then exits with code 3. --signal makes
 * it kill itself with SIGTERM inside a region instead. --wait-gone PATH waits (up to 30 s)
 * after cmd_name until PATH no longer exists (a test's listener that went away).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nanotrace/nanotrace_trace2.h>

static NT_T2_TIMER_DEFINE(work_timer, "test", "work", 1);
static NT_T2_TIMER_DEFINE(total_timer, "test", "total", 0);
static NT_T2_COUNTER_DEFINE(items, "test", "items", 1);

static void *worker(void *arg)
{
	long n = (long)arg;
	if (n == 3)
		NT_T2_THREAD_START("worker-with-a-long-name"); /* cut to 24 with its "thNN:" */
	else
		NT_T2_THREAD_START("worker");
	NT_T2_REGION_ENTER("work", "batch", -1);
	for (long i = 0; i < 5; i++) {
		nt_trace2_timer_start(&work_timer);
		nt_trace2_timer_start(&work_timer); /* nested: counts once */
		nt_trace2_counter_add(&items, (uint64_t)n);
		nt_trace2_timer_stop(&work_timer);
		nt_trace2_timer_stop(&work_timer);
	}
	NT_T2_DATA_INTMAX("work", -1, "batch/size", n);
	NT_T2_REGION_LEAVE("work", "batch", -1);
	NT_T2_THREAD_EXIT();
	return NULL;
}

static int run_child(const char *self, const char *const *argv, int git_cmd)
{
	nt_trace2_child child;
	NT_T2_CHILD_START(&child, "test", NULL, NULL, 0, git_cmd, argv);
	pid_t pid = fork();
	if (pid == 0) {
		execv(self, (char *const *)argv);
		_exit(127);
	}
	if (!git_cmd)
		NT_T2_CHILD_READY(&child, (int)pid, "ready");
	int status = 0;
	waitpid(pid, &status, 0);
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	NT_T2_CHILD_EXIT(&child, (int)pid, code);
	return code;
}

/* The child records a region and data, then exits; the parent waits for it. */
static void fork_child(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		NT_T2_REGION_ENTER("forked", "work", -1);
		NT_T2_DATA_STRING("forked", -1, "role", "fork-child");
		NT_T2_REGION_LEAVE("forked", "work", -1);
		exit(NT_T2_CMD_EXIT(0));
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		fprintf(stderr, "t2_program: the fork() child failed\n");
}

int main(int argc, const char **argv)
{
	NT_T2_INITIALIZE_CLOCK();
	int child = 0, sig = 0, nthreads = 3, forked = 0;
	const char *wait_gone = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--child") == 0)
			child = 1;
		else if (strcmp(argv[i], "--signal") == 0)
			sig = 1;
		else if (strcmp(argv[i], "--fork") == 0)
			forked = 1;
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--wait-gone") == 0 && i + 1 < argc)
			wait_gone = argv[++i];
	}
	NT_T2_INITIALIZE("t2-test-1.0");
	NT_T2_CMD_START(argv);
	NT_T2_CMD_NAME("t2prog");
	for (int tenths = 0; wait_gone != NULL && access(wait_gone, F_OK) == 0 && tenths < 300;
	     tenths++)
		usleep(100 * 1000);
	if (child) {
		NT_T2_REGION_ENTER_PRINTF("child", "run", 0, "pid %d", (int)getpid());
		NT_T2_DATA_STRING("child", 0, "role", "helper");
		NT_T2_REGION_LEAVE("child", "run", 0);
		return NT_T2_CMD_EXIT(0);
	}
	if (forked) /* a fork() child without exec: its own SID and archive (nanotrace.h, FORK) */
		fork_child();
	NT_T2_CMD_MODE("full");
	NT_T2_CMD_PATH("/usr/local/bin/t2prog");
	const char *alias_argv[] = { "t2prog", "--all", NULL };
	NT_T2_CMD_ALIAS("everything", alias_argv);
	NT_T2_DEF_PARAM("global", "core.editor", "vi");
	const char *keys[] = { "core.abbrev", "user.name", "remote.origin.url" };
	const char *values[] = { "12", "Trace Tester", "https://user:secret@example.com/r.git" };
	NT_T2_LIST_CONFIG("local", keys, values, 3);
	NT_T2_LIST_ENV_VARS();
	NT_T2_DEF_REPO(1, "/srv/work tree");

	nt_trace2_timer_start(&total_timer);
	NT_T2_REGION_ENTER("index", "do_read_index", 1);
	NT_T2_REGION_ENTER_PRINTF("index", "read", 1, "%s", ".git/index");
	NT_T2_DATA_STRING("index", 1, "read/version", "4");
	NT_T2_REGION_ENTER("cache_tree", "read", -1);
	NT_T2_DATA_JSON("cache_tree", -1, "statistics", "{\"entries\":3,\"depth\":1}");
	NT_T2_REGION_LEAVE("cache_tree", "read", -1);
	NT_T2_REGION_LEAVE_PRINTF("index", "read", 1, "%s", ".git/index");
	NT_T2_REGION_LEAVE("index", "do_read_index", 1);
	for (int r = 1; r <= 2; r++) { /* one site, two repositories */
		NT_T2_REGION_ENTER("repo", "each", r);
		NT_T2_REGION_LEAVE("repo", "each", r);
	}
	NT_T2_PRINTF("checked %d entries", 3);
	NT_T2_CMD_ERROR("pathspec '%s' did not match", "no-such-file");

	pthread_t th[16];
	if (nthreads > 16)
		nthreads = 16;
	for (long i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);

	const char *child_argv[] = { argv[0], "--child", NULL };
	int code = run_child(argv[0], child_argv, 0);
	const char *missing_argv[] = { "/nonexistent/program", NULL };
	run_child("/nonexistent/program", missing_argv, 1);
	if (code != 0)
		fprintf(stderr, "t2_program: child exited %d\n", code);

	const char *exec_argv[] = { "git", "show", NULL };
	int id = NT_T2_EXEC("/nonexistent/git", exec_argv);
	execv("/nonexistent/git", (char *const *)exec_argv);
	NT_T2_EXEC_RESULT(id, errno);
	nt_trace2_timer_stop(&total_timer);

	if (sig) {
		NT_T2_REGION_ENTER("test", "doomed", -1);
		raise(SIGTERM);
	}
	return NT_T2_CMD_EXIT(3);
}
