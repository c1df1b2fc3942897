/*
 * test_fork.c - fork() never touches the parent's archive, whatever the child does.
 *
 * The parent records BEFORE events, forks, waits for the child, records AFTER more and
 * finishes. The child makes CHILD events and ends with _exit, exit, exec, SIGTERM or
 * SIGKILL. The parent's archive must hold exactly its own events (each seq once, none named
 * "child") and its loss counters must be zero, and count the one child forked. A file-backed
 * parent's child records its events into its own archive beside the parent's
 * (runtime/nt_fork_path.h), exactly, naming the parent in forked_from, however it ended; an
 * anonymous parent's child leaves no file unless it calls nt_finish(). A child may also start
 * its own session before its first event. test_fork_child.c has the rest of the rule.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "tests/support/nt_sanitizer_test.h"
#include "tests/support/nt_test_util.h"
#include "runtime/nt_fork_path.h"

#define BEFORE 600
#define AFTER 600
#define CHILD 1000

/* SIGTERM runs the fatal-signal handlers a file-backed session installs; SIGKILL runs none. */
enum ending { END_UNDERSCORE_EXIT, END_EXIT, END_EXEC, END_TERMINATED, END_KILLED, END_COUNT };
static const char *const ending_names[] = { "_exit", "exit", "exec", "terminated", "killed" };
static const int ending_signal[] = { [END_TERMINATED] = SIGTERM, [END_KILLED] = SIGKILL };

static void emit_parent(uint64_t seq)
{
	NT_INSTANT("fork", "parent", NT_U64("seq", seq));
}

static void emit_child(uint64_t seq)
{
	NT_INSTANT("fork", "child", NT_U64("seq", seq));
}

/* nt_config.blocking_timeout_us of the sessions start_session makes (0: the default). */
static long long blocking_us;

/* A session on `path` in `mode`, the same in parents and children. */
static nt_result start_session(int mode, const char *path)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	cfg.blocking_timeout_us = blocking_us;
	cfg.path = path;
	cfg.buffer_size = 1u << 20;
	cfg.chunk_size = 4096;
	return nt_start(&cfg);
}

static void start(int mode, const char *path)
{
	assert_int_equal(start_session(mode, path), NT_OK);
}

/* ThreadSanitizer no longer delivers signals in the child of a process that had threads
 * (streaming's saver threads): raise(SIGTERM) returns there. */
#if defined(__SANITIZE_THREAD__)
#define CHILD_OF_THREADS_GETS_SIGNALS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHILD_OF_THREADS_GETS_SIGNALS 0
#endif
#endif
#ifndef CHILD_OF_THREADS_GETS_SIGNALS
#define CHILD_OF_THREADS_GETS_SIGNALS 1
#endif
/* Nor can it start threads there: a streaming child's own session (its saver threads) is
 * not started under it, so that child makes no event and leaves no file. Nor under
 * AddressSanitizer: gcc 12's allocator is not locked around fork(), so a child that
 * allocates can wait forever on a lock one of the parent's saver threads held at the fork
 * (seen: the child's first event starting its session, the zstd encoder's calloc, about
 * one run in two on a loaded 2-core machine). glibc's malloc is: the plain builds fork
 * streaming children that record. */
#define CHILD_OF_THREADS_STARTS_THREADS (CHILD_OF_THREADS_GETS_SIGNALS && !NT_SANITIZED)

static void child_ends(enum ending how, int records)
{
	for (uint64_t i = 0; records && i < CHILD; i++)
		emit_child(i);
	switch (how) {
	case END_UNDERSCORE_EXIT:
		_exit(0);
	case END_EXIT:
		exit(0);
	case END_EXEC:
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	default:
		raise(ending_signal[how]);
		_exit(126);
	}
}

static void wait_child(pid_t pid, enum ending how)
{
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (ending_signal[how] != 0) {
		assert_true(WIFSIGNALED(status));
		assert_int_equal(WTERMSIG(status), ending_signal[how]);
	} else {
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
}

/* Exactly `n` events named `name` with seq 0 .. n-1 once each, nothing else, no loss; the
 * archive's header in *info when not NULL. */
static void assert_exact_info(const char *path, const char *name, uint64_t n, const char *what,
			      nt_archive_info *info)
{
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	uint8_t *seen = calloc(n, 1);
	uint64_t mine = 0, other = 0, dup = 0;
	for (size_t i = 0; i < t.n; i++) {
		const test_event *e = &t.ev[i];
		if (strcmp(e->name, name) != 0 || e->nargs != 1 || e->args[0].value.u64 >= n) {
			other++;
			continue;
		}
		mine++;
		dup += seen[e->args[0].value.u64]++ != 0;
	}
	free(seen);
	if (t.errors || mine != n || other || dup || t.gaps || t.info.events_dropped ||
	    t.info.events_overwritten || t.info.wraps)
		fail_msg("%s: %" PRIu64 " '%s' events of %" PRIu64 ", %" PRIu64 " others, %" PRIu64
			 " duplicates, %lu errors (%s), %" PRIu64 " gaps, dropped %" PRIu64
			 ", overwritten %" PRIu64 ", wraps %" PRIu64,
			 what, mine, name, n, other, dup, t.errors, t.first_error, t.gaps,
			 t.info.events_dropped, t.info.events_overwritten, t.info.wraps);
	if (info != NULL)
		*info = t.info;
	test_trace_free(&t);
}

static void assert_exact(const char *path, const char *name, uint64_t n, const char *what)
{
	assert_exact_info(path, name, n, what, NULL);
}

/* The archive of `child`, forked by this process from the archive at `path`. */
static void child_archive(char *out, size_t cap, const char *path, pid_t child)
{
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)child);
	assert_true(nt_fork_child_name(out, cap, path, pid));
}

/* A file-backed parent's child recorded its CHILD events into its own archive, exactly; an
 * anonymous parent's child, which never called nt_finish(), or one without events left no
 * file. */
static void assert_child_archive(const char *path, pid_t child, int no_file, const char *what)
{
	char own[300], label[128];
	child_archive(own, sizeof(own), path, child);
	if (no_file) {
		assert_int_equal(access(own, F_OK), -1);
		return;
	}
	nt_archive_info info;
	snprintf(label, sizeof(label), "%s: the child's own archive", what);
	assert_exact_info(own, "child", CHILD, label, &info);
	assert_int_equal(info.forked_from, (uint32_t)getpid());
	assert_int_equal(info.pid, (uint32_t)child);
	assert_int_equal(info.children_forked, 0);
	unlink(own);
}

/* mode < 0: an anonymous (oneshot) arena, finished to a path by the parent. */
static void parent_survives(int mode, enum ending how)
{
	char path[256], what[64];
	snprintf(what, sizeof(what), "fork-%d-%s", mode, ending_names[how]);
	test_tmp_path(path, sizeof(path), what);
	start(mode < 0 ? NT_MODE_ONESHOT : mode, mode < 0 ? NULL : path);
	for (uint64_t i = 0; i < BEFORE; i++)
		emit_parent(i);
	int records = CHILD_OF_THREADS_STARTS_THREADS || mode != NT_MODE_STREAMING;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_ends(how, records);
	wait_child(pid, how);
	for (uint64_t i = BEFORE; i < BEFORE + AFTER; i++)
		emit_parent(i);
	assert_int_equal(nt_finish(mode < 0 ? path : NULL), NT_OK);
	nt_archive_info info;
	assert_exact_info(path, "parent", BEFORE + AFTER, what, &info);
	assert_int_equal(info.children_forked, 1);
	assert_int_equal(info.forked_from, 0);
	assert_child_archive(path, pid, mode < 0 || !records, what);
	unlink(path);
}


static void every_ending(int mode)
{
	for (int how = 0; how < END_COUNT; how++)
		if (CHILD_OF_THREADS_GETS_SIGNALS || mode != NT_MODE_STREAMING ||
		    how != END_TERMINATED)
			parent_survives(mode, (enum ending)how);
}

static void oneshot_parent_exact(void **state)
{
	(void)state;
	every_ending(NT_MODE_ONESHOT);
}

static void circular_parent_exact(void **state)
{
	(void)state;
	every_ending(NT_MODE_CIRCULAR);
}

static void streaming_parent_exact(void **state)
{
	(void)state;
	every_ending(NT_MODE_STREAMING);
}

/* With blocking on (the child's lazy session takes the parent's config, blocking
 * included): no child waits on the parent's saver, every ending is as without. */
static void streaming_blocking_parent_exact(void **state)
{
	(void)state;
	blocking_us = NT_BLOCKING_TIMEOUT_MAX_US;
	every_ending(NT_MODE_STREAMING);
	blocking_us = 0;
}

static void anonymous_parent_exact(void **state)
{
	(void)state;
	every_ending(-1);
}

/* In the child, before its first event: nt_finish refused with the parent's pid named, and
 * a session of its own (nt_start) replaces the archive it would have started: it records
 * exactly the child's events. Exit status 0 when all of that holds. */
static int child_own_session(int mode, const char *own, pid_t parent)
{
	char pid_text[32];
	snprintf(pid_text, sizeof(pid_text), "%d", (int)parent);
	if (nt_finish(NULL) != NT_ERR_STATE || strstr(nt_last_error(), pid_text) == NULL)
		return 11;
	if (start_session(mode, own) != NT_OK)
		return 12;
	for (uint64_t i = 0; i < CHILD; i++)
		emit_child(i);
	return nt_finish(NULL) == NT_OK ? 0 : 13;
}

static void child_records_its_own_session(void **state)
{
	(void)state;
	for (int mode = NT_MODE_ONESHOT; mode <= NT_MODE_STREAMING; mode++) {
		char path[256], own[300], what[64];
		snprintf(what, sizeof(what), "fork-own-%d", mode);
		test_tmp_path(path, sizeof(path), what);
		snprintf(own, sizeof(own), "%s.child", path);
		start(mode, path);
		for (uint64_t i = 0; i < BEFORE; i++)
			emit_parent(i);
		/* A streaming child starts saver threads of its own. ThreadSanitizer cannot
		 * follow new threads after a fork of a process that had threads, so the parent
		 * forks between two runs, with its saver threads joined. */
		int paused = mode == NT_MODE_STREAMING;
		if (paused)
			assert_int_equal(nt_provider_stop(), NT_OK);
		pid_t parent = getpid(), pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child_own_session(mode, own, parent));
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		if (paused)
			assert_int_equal(nt_provider_start(NT_BUFFER_RETAIN, NULL), NT_OK);
		for (uint64_t i = BEFORE; i < BEFORE + AFTER; i++)
			emit_parent(i);
		assert_int_equal(nt_finish(NULL), NT_OK);
		assert_exact(path, "parent", BEFORE + AFTER, what);
		assert_exact(own, "child", CHILD, "the child's own session");
		char beside[300];
		child_archive(beside, sizeof(beside), path, pid);
		assert_int_equal(access(beside, F_OK), -1); /* no lazy archive as well */
		unlink(path);
		unlink(own);
	}
}

static int interning;

/* Takes intern_lock over and over, as a thread registering call sites does. */
static void *hold_intern_lock(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&interning, __ATOMIC_ACQUIRE))
		nt_category_enabled("fork");
	return NULL;
}

/* A child forked while another thread holds intern_lock must not inherit it held: its own
 * session would wait forever for a thread it does not have. */
static void fork_while_another_thread_interns(void **state)
{
	(void)state;
	start(NT_MODE_ONESHOT, NULL);
	__atomic_store_n(&interning, 1, __ATOMIC_RELEASE);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, hold_intern_lock, NULL), 0);
	for (int i = 0; i < 50; i++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			alarm(10); /* a deadlocked child dies of SIGALRM */
			nt_config cfg;
			nt_config_init(&cfg);
			cfg.buffer_size = 1u << 16;
			_exit(nt_start(&cfg) == NT_OK && nt_category_enabled("fork") ? 0 : 1);
		}
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	__atomic_store_n(&interning, 0, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	char path[256];
	test_tmp_path(path, sizeof(path), "fork-lock");
	assert_int_equal(nt_finish(path), NT_OK);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(oneshot_parent_exact),
		cmocka_unit_test(circular_parent_exact),
		cmocka_unit_test(streaming_parent_exact),
		cmocka_unit_test(streaming_blocking_parent_exact),
		cmocka_unit_test(anonymous_parent_exact),
		cmocka_unit_test(child_records_its_own_session),
		cmocka_unit_test(fork_while_another_thread_interns),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
