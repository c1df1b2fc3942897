/*
 * test_hot_path - proves that between nt_start() and nt_finish() the event path allocates
 * nothing and makes no system call, across chunk switches, wraps and drops.
 *
 * Allocations: malloc/calloc/realloc/free are interposed and counted around the event loop.
 * System calls: a child process installs a seccomp filter that kills it on any system call
 * but exit_group (and clock_gettime, which the vDSO only issues when the kernel clock cannot
 * be read in user space), then runs the same loop in its own session (started by its first
 * event, before the filter); it survives only if the loop made none.
 *
 * Page faults: a file-backed arena (every mode) is faulted in writable by nt_start(), so its
 * event path takes none either: the thread's minor faults are counted around the loop (not
 * judged under a sanitizer, whose shadow memory faults on first touch). There the seccomp
 * half does not apply: streaming's writers make the futex wake that completes a half.
 *
 * Each call site and the thread are used once before measuring: their first use registers
 * them (a lock, a few system calls), which the public header documents.
 *
 * cmocka runs one test per mode; its own allocations happen outside the counted loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "tests/support/nt_cmocka.h"
#include "tests/support/nt_sanitizer_test.h"
#include "tests/support/nt_seccomp_test.h"

#if !NT_SANITIZED
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static volatile int counting;
static volatile unsigned long allocations;

void *malloc(size_t n)
{
	if (counting)
		allocations++;
	return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
	if (counting)
		allocations++;
	return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
	if (counting)
		allocations++;
	return __libc_realloc(p, n);
}
void free(void *p)
{
	if (counting && p)
		allocations++;
	__libc_free(p);
}
#endif

static void emit_all(uint64_t i)
{
	NT_INSTANT("hot", "instant");
	NT_BEGIN("hot", "span", NT_U64("i", i), NT_STR("s", "text"));
	NT_COUNTER("hot", "counter", NT_F64("v", (double)i));
	/* The fixed-argument fast path, with a wide and a narrow integer. */
	NT_INSTANT("hot", "fixed", NT_I64("a", i), NT_U64("b", i << 40), NT_BOOL("c", i & 1),
		   NT_PTR("d", &i));
	NT_COMPLETE("hot", "complete", nt_now(), NT_BOOL("b", i & 1));
	{
		NT_SCOPE("hot", "scope");
		/* Async spans and flows: the no-argument path, arguments, a global id. */
		NT_ASYNC_BEGIN("hot", "request", i);
		NT_FLOW_STEP("hot", "handoff", i);
		NT_ASYNC_INSTANT_GLOBAL("hot", "request", i, NT_U64("i", i));
		NT_ASYNC_END("hot", "request", i);
	}
	NT_END("hot", "span");
}

static void start(int mode)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	cfg.buffer_size = 256 * 1024; /* small: the loop switches chunks, wraps or fills */
	cfg.chunk_size = 4096;
	assert_msg(nt_start(&cfg) == NT_OK, "nt_start: %s", nt_last_error());
	emit_all(0); /* registers the thread and every call site */
}
static void install_seccomp(void)
{
	if (nt_test_forbid_syscalls() != 0) {
		perror("seccomp");
		syscall(SYS_exit_group, 3);
	}
}

static void check_mode(int mode, const char *name)
{
	const uint64_t loops = 200000; /* ~1.2 M events, dozens of chunk claims */
	start(mode);
	char path[128];
	snprintf(path, sizeof(path), "/tmp/nt-hot-%d.ntrace", (int)getpid());
#if !NT_SANITIZED
	allocations = 0;
	counting = 1;
#endif
	for (uint64_t i = 1; i <= loops; i++)
		emit_all(i);
#if !NT_SANITIZED
	counting = 0;
	if (allocations != 0) {
		nt_finish(path);
		unlink(path);
		fail_msg("%s: %lu allocations on the event path", name, allocations);
	}
	printf("ok %s: no allocation in %llu events\n", name, (unsigned long long)loops * 6);
#endif
	fflush(stdout);
	int status = 0;
	/* ThreadSanitizer's runtime makes system calls of its own when a process touches
	 * memory it has not tracked yet (a fork() child's new arena): the seccomp half cannot
	 * judge it there. */
	pid_t pid = NT_TSAN ? 0 : fork();
	if (NT_TSAN) {
		printf("not judged under ThreadSanitizer: system calls on the event path\n");
	} else if (pid == 0) {
		/* The child's first event starts its own session, as the parent's start did
		 * (nanotrace.h, FORK), and registers the thread and every call site there. */
		emit_all(0);
		install_seccomp();
		for (uint64_t i = 1; i <= loops; i++)
			emit_all(i);
		syscall(SYS_exit_group, 0);
	} else {
		waitpid(pid, &status, 0);
	}
	nt_stats st;
	nt_get_stats(&st);
	nt_finish(path);
	unlink(path);
	assert_msg(!(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS),
		   "%s: the event path made a system call", name);
	assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "%s: child ended with status 0x%x", name, status);
	if (!NT_TSAN)
		printf("ok %s: no system call in %llu events\n", name, (unsigned long long)loops * 6);
	assert_msg(mode != NT_MODE_ONESHOT || st.events_dropped != 0,
		   "%s: the loop never reached the drop path", name);
	assert_msg(mode != NT_MODE_CIRCULAR || st.wraps != 0, "%s: the loop never wrapped", name);
}

static void oneshot_event_path(void **state)
{
	(void)state;
	check_mode(NT_MODE_ONESHOT, "oneshot");
}

static void circular_event_path(void **state)
{
	(void)state;
	check_mode(NT_MODE_CIRCULAR, "circular");
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Does this kernel fault a shared file mapping in writable (Linux 5.14)? Without it
 * nt_start read-populates the arena, as before, and every page faults once. */
static int kernel_populates_writable(void)
{
	char path[] = "/tmp/nt-hot-probe-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 0;
	unlink(path);
	void *m = ftruncate(fd, 4096) == 0
			  ? mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
			  : MAP_FAILED;
	int ok = m != MAP_FAILED && madvise(m, 4096, MADV_POPULATE_WRITE) == 0;
	if (m != MAP_FAILED)
		munmap(m, 4096);
	close(fd);
	return ok;
}

/* One session of `mode` in a file-backed arena: the writer thread's page faults over the
 * loop. */
static long file_arena_faults(int mode, const char *name)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/nt-hot-file-%d.ntrace", (int)getpid());
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	cfg.path = path;
	cfg.buffer_size = 16u << 20; /* the loop stays within its first lap */
	assert_msg(nt_start(&cfg) == NT_OK, "nt_start: %s", nt_last_error());
	emit_all(0);
	struct rusage before, after;
	getrusage(RUSAGE_THREAD, &before);
	const uint64_t loops = 50000; /* ~600,000 events, ~7 MB of records */
	for (uint64_t i = 1; i <= loops; i++)
		emit_all(i);
	getrusage(RUSAGE_THREAD, &after);
	nt_stats st;
	nt_get_stats(&st);
	assert_msg(nt_finish(NULL) == NT_OK, "nt_finish: %s", nt_last_error());
	unlink(path);
	long faults = after.ru_minflt - before.ru_minflt + after.ru_majflt - before.ru_majflt;
	printf("%s: %ld page faults in %llu events (%llu chunks claimed)\n", name, faults,
	       (unsigned long long)loops * 12, (unsigned long long)st.chunks_claimed);
	assert_msg(st.chunks_claimed > 400 && st.events_dropped == 0,
		   "%s: %llu chunks claimed, %llu events dropped", name,
		   (unsigned long long)st.chunks_claimed, (unsigned long long)st.events_dropped);
	return faults;
}

/* A file-backed arena (cfg.path) is faulted in writable by nt_start() (map_file_pages in
 * writer/core/nt_arena.c). Without that, every 4 KiB page the loop reaches faults once:
 * 2,840 here, in each mode. A page written back meanwhile (the kernel's writeback, another
 * program's sync) faults once more, as it must: up to three sessions are tried, and one
 * without such faults passes. */
static void check_file_arena(int mode, const char *name)
{
	long faults = 0;
	for (int attempt = 0; attempt < 3; attempt++)
		if ((faults = file_arena_faults(mode, name)) < 8)
			return;
	if (NT_SANITIZED || !kernel_populates_writable()) {
		printf("%s: not judged (%s)\n", name,
		       NT_SANITIZED ? "a sanitizer's shadow memory faults"
				    : "this kernel has no MADV_POPULATE_WRITE");
		return;
	}
	fail_msg("%s: %ld page faults on the event path, in each of 3 sessions", name, faults);
}

static void file_arena_event_path(void **state)
{
	(void)state;
	check_file_arena(NT_MODE_ONESHOT, "oneshot, file-backed");
	check_file_arena(NT_MODE_CIRCULAR, "circular, file-backed");
	check_file_arena(NT_MODE_STREAMING, "streaming");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(oneshot_event_path),
		cmocka_unit_test(circular_event_path),
		cmocka_unit_test(file_arena_event_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
