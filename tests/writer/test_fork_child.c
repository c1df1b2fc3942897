/*
 * test_fork_child.c - a recording process's fork() child records into its own archive.
 *
 * The rule (nanotrace.h, FORK): the child's session starts at its first event, with the
 * parent's configuration and a path beside the parent's (runtime/nt_fork_path.h); a child
 * without events leaves no file; the parent's header counts its children and the child's
 * names its parent; a grandchild gets its own archive too; forks from several threads
 * while another records all work; a child that cannot create its archive says so on stderr
 * and counts what it did not record. trace-dump (NT_TRACE_DUMP) renders every archive.
 * test_fork.c checks every mode and way of ending.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "tests/support/nt_test_util.h"
#include "runtime/nt_fork_path.h"

#define CHILD 500

static void emit(const char *who, uint64_t seq)
{
	if (who[0] == 'p')
		NT_INSTANT("fork", "parent", NT_U64("seq", seq));
	else
		NT_INSTANT("fork", "child", NT_U64("seq", seq));
}

static void emit_n(const char *who, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		emit(who, i);
}

static void start(const char *path)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.path = path;
	cfg.buffer_size = 4u << 20;
	cfg.chunk_size = 4096;
	assert_int_equal(nt_start(&cfg), NT_OK);
}

static void beside(char *out, size_t cap, const char *path, pid_t pid)
{
	char text[16];
	snprintf(text, sizeof(text), "%d", (int)pid);
	assert_true(nt_fork_child_name(out, cap, path, text));
}

static void wait_ok(pid_t pid)
{
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Exactly n events named `name` (seq 0 .. n-1 once each), no loss; the header in *info. */
static void assert_exact(const char *path, const char *name, uint64_t n, nt_archive_info *info)
{
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	uint8_t *seen = calloc(n ? n : 1, 1);
	uint64_t mine = 0, bad = 0;
	for (size_t i = 0; i < t.n; i++) {
		const test_event *e = &t.ev[i];
		if (strcmp(e->name, name) != 0 || e->nargs != 1 || e->args[0].value.u64 >= n ||
		    seen[e->args[0].value.u64]++ != 0)
			bad++;
		else
			mine++;
	}
	free(seen);
	if (t.errors || mine != n || bad || t.gaps || t.info.events_dropped)
		fail_msg("%s: %" PRIu64 " '%s' events of %" PRIu64 ", %" PRIu64 " others or "
			 "duplicates, %lu errors (%s), %" PRIu64 " gaps, %" PRIu64 " dropped",
			 path, mine, name, n, bad, t.errors, t.first_error, t.gaps,
			 t.info.events_dropped);
	*info = t.info;
	test_trace_free(&t);
}

/* The parent's archive at `path` holds its 10 events and counts one fork; the child `pid`'s
 * archive, beside it at `own`, holds the child's CHILD events and names this process as its
 * parent. *child gets the child's header. */
static void assert_parent_and_child(const char *path, pid_t pid, char *own, size_t cap,
				    nt_archive_info *child)
{
	nt_archive_info info;
	assert_exact(path, "parent", 10, &info);
	assert_int_equal(info.children_forked, 1);
	beside(own, cap, path, pid);
	assert_exact(own, "child", CHILD, child);
	assert_int_equal(child->forked_from, (uint32_t)getpid());
}

/* fork()+exec(), fork()+_exit() and fork()+exit() without an event cost no file. */
static void child_without_events_leaves_no_file(void **state)
{
	(void)state;
	char path[256], own[300];
	test_tmp_path(path, sizeof(path), "forkc-none");
	start(path);
	emit_n("parent", 10);
	for (int how = 0; how < 3; how++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			if (how == 0)
				execl("/bin/true", "true", (char *)NULL);
			if (how == 1)
				_exit(0);
			exit(0);
		}
		wait_ok(pid);
		beside(own, sizeof(own), path, pid);
		assert_int_equal(access(own, F_OK), -1);
	}
	assert_int_equal(nt_finish(NULL), NT_OK);
	nt_archive_info info;
	assert_exact(path, "parent", 10, &info);
	assert_int_equal(info.children_forked, 3);
	unlink(path);
}

/* An anonymous arena's child, like its parent, writes its archive at nt_finish(path): to
 * the path beside `path`, never over the parent's. */
static void anonymous_child_finishes_beside(void **state)
{
	(void)state;
	char path[256], own[300];
	test_tmp_path(path, sizeof(path), "forkc-anon");
	start(NULL);
	emit_n("parent", 10);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		emit_n("child", CHILD);
		_exit(nt_finish(path) == NT_OK ? 0 : 1);
	}
	wait_ok(pid);
	assert_int_equal(access(path, F_OK), -1); /* not the parent's file */
	assert_int_equal(nt_finish(path), NT_OK);
	nt_archive_info info;
	assert_parent_and_child(path, pid, own, sizeof(own), &info);
	unlink(path);
	unlink(own);
}

/* The child (recording already, or not yet: `child_first`) forks a grandchild that records
 * into an archive of its own, beside the child's, naming the child as its parent. The child
 * writes the grandchild's pid into `fd`. */
static int run_child(int child_first, int fd)
{
	if (child_first)
		emit_n("child", CHILD);
	pid_t g = fork();
	if (g < 0)
		return 1;
	if (g == 0) {
		emit_n("child", CHILD);
		_exit(0);
	}
	int status;
	if (waitpid(g, &status, 0) != g || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 2;
	if (!child_first)
		emit_n("child", CHILD);
	return write(fd, &g, sizeof(g)) == (ssize_t)sizeof(g) ? 0 : 3;
}

static void grandchild_records_its_own(void **state)
{
	(void)state;
	for (int child_first = 1; child_first >= 0; child_first--) {
		char path[256], own[300], grand[340];
		test_tmp_path(path, sizeof(path), "forkc-grand");
		start(path);
		emit_n("parent", 10);
		int fds[2];
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(run_child(child_first, fds[1]));
		wait_ok(pid);
		pid_t g;
		assert_int_equal(read(fds[0], &g, sizeof(g)), (ssize_t)sizeof(g));
		close(fds[0]);
		close(fds[1]);
		assert_int_equal(nt_finish(NULL), NT_OK);
		nt_archive_info info;
		assert_parent_and_child(path, pid, own, sizeof(own), &info);
		/* A child recording when it forked counts its child; one not yet did not. */
		assert_int_equal(info.children_forked, (uint64_t)child_first);
		beside(grand, sizeof(grand), own, g);
		assert_exact(grand, "child", CHILD, &info);
		assert_int_equal(info.forked_from, (uint32_t)pid);
		unlink(path);
		unlink(own);
		unlink(grand);
	}
}

#define FORKERS 2
#define FORKS_EACH 4

static int recording_on;

/* At most RECORDED_MAX events (they fit the 4 MiB oneshot arena: none dropped), spread over
 * the forks by a yield every 64. */
#define RECORDED_MAX 100000

static void *record_parent(void *arg)
{
	uint64_t n = 0;
	while (__atomic_load_n(&recording_on, __ATOMIC_ACQUIRE) && n < RECORDED_MAX) {
		emit("parent", n++);
		if (n % 64 == 0)
			sched_yield();
	}
	*(uint64_t *)arg = n;
	return NULL;
}

static void *fork_children(void *arg)
{
	pid_t *pids = arg;
	for (int i = 0; i < FORKS_EACH; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			emit_n("child", CHILD);
			_exit(0);
		}
	}
	return NULL;
}

/* Forks from two threads while a third records: every child's archive exact, the parent's
 * exact, every fork counted. */
static void forks_from_threads_while_recording(void **state)
{
	(void)state;
	char path[256], own[300];
	test_tmp_path(path, sizeof(path), "forkc-threads");
	start(path);
	pthread_t rec, forker[FORKERS];
	pid_t pids[FORKERS][FORKS_EACH];
	uint64_t made = 0;
	__atomic_store_n(&recording_on, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&rec, NULL, record_parent, &made), 0);
	for (int f = 0; f < FORKERS; f++)
		assert_int_equal(pthread_create(&forker[f], NULL, fork_children, pids[f]), 0);
	for (int f = 0; f < FORKERS; f++)
		pthread_join(forker[f], NULL);
	__atomic_store_n(&recording_on, 0, __ATOMIC_RELEASE);
	pthread_join(rec, NULL);
	assert_int_equal(nt_finish(NULL), NT_OK);
	nt_archive_info info;
	for (int f = 0; f < FORKERS; f++) {
		for (int i = 0; i < FORKS_EACH; i++) {
			assert_true(pids[f][i] > 0);
			wait_ok(pids[f][i]);
			beside(own, sizeof(own), path, pids[f][i]);
			assert_exact(own, "child", CHILD, &info);
			assert_int_equal(info.forked_from, (uint32_t)getpid());
			unlink(own);
		}
	}
	assert_exact(path, "parent", made, &info);
	assert_int_equal(info.children_forked, FORKERS * FORKS_EACH);
	unlink(path);
}

/* The child's archive cannot be created (RLIMIT_FSIZE refuses its blocks): one stderr line
 * names the path and the reason, its events are counted, and the count is said at exit. */
static void unwritable_child_path_is_said(void **state)
{
	(void)state;
	char path[256], own[300], err_path[300];
	test_tmp_path(path, sizeof(path), "forkc-full");
	snprintf(err_path, sizeof(err_path), "%s.stderr", path);
	start(path);
	emit_n("parent", 10);
	int err_fd = open(err_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(err_fd >= 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit small = { 4096, 4096 };
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &small) != 0 || dup2(err_fd, 2) != 2)
			_exit(1);
		emit_n("child", 7);
		exit(nt_is_recording() ? 0 : 1); /* still counting, so "recording" */
	}
	wait_ok(pid);
	assert_int_equal(nt_finish(NULL), NT_OK);
	beside(own, sizeof(own), path, pid);
	assert_int_equal(access(own, F_OK), -1);
	char text[4096] = { 0 }, want[400];
	assert_true(pread(err_fd, text, sizeof(text) - 1, 0) > 0);
	close(err_fd);
	snprintf(want, sizeof(want), "its archive '%s' could not be started: ", own);
	if (strstr(text, want) == NULL || strstr(text, "7 events not recorded") == NULL)
		fail_msg("the child's stderr does not say what it lost:\n%s", text);
	nt_archive_info info;
	assert_exact(path, "parent", 10, &info);
	assert_int_equal(info.children_forked, 1);
	unlink(path);
	unlink(err_path);
}

/* trace-dump renders a child's and its parent's archives: text, chrome and --stats, which
 * names the parent and counts the children. */
static void dump_ok(const char *args, const char *path, const char *want)
{
	const char *dump = getenv("NT_TRACE_DUMP");
	assert_non_null(dump);
	char cmd[1200], out[8192] = { 0 };
	snprintf(cmd, sizeof(cmd), "'%s' %s '%s' 2>&1", dump, args, path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	char rest[4096];
	while (fread(rest, 1, sizeof(rest), p) > 0)
		; /* read to the end: trace-dump must not die of SIGPIPE */
	int rc = pclose(p);
	if (rc != 0 || n == 0 || (want != NULL && strstr(out, want) == NULL))
		fail_msg("%s: exit %d, wanted '%s' in:\n%s", cmd, rc, want ? want : "", out);
}

static void renderers_read_child_archive(void **state)
{
	(void)state;
	char path[256], own[300], want[128];
	test_tmp_path(path, sizeof(path), "forkc-render");
	start(path);
	emit_n("parent", 10);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		emit_n("child", CHILD);
		exit(0);
	}
	wait_ok(pid);
	assert_int_equal(nt_finish(NULL), NT_OK);
	beside(own, sizeof(own), path, pid);
	dump_ok("--format text", own, "child");
	dump_ok("--format chrome", own, "\"child\"");
	snprintf(want, sizeof(want), "forked from: pid %d", (int)getpid());
	dump_ok("--stats", own, want);
	dump_ok("--stats", path, "children forked: 1 while recording");
	unlink(path);
	unlink(own);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(child_without_events_leaves_no_file),
		cmocka_unit_test(anonymous_child_finishes_beside),
		cmocka_unit_test(grandchild_records_its_own),
		cmocka_unit_test(forks_from_threads_while_recording),
		cmocka_unit_test(unwritable_child_path_is_said),
		cmocka_unit_test(renderers_read_child_archive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
