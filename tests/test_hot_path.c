/*
 * test_hot_path - proves that between nt_start() and nt_finish() the event path allocates
 * nothing and makes no system call, across chunk switches, wraps and drops.
 *
 * Allocations: malloc/calloc/realloc/free are interposed and counted around the event loop.
 * System calls: a child process installs a seccomp filter that kills it on any system call
 * but exit_group (and clock_gettime, which the vDSO only issues when the kernel clock cannot
 * be read in user space), then runs the same loop; it survives only if the loop made none.
 *
 * Each call site and the thread are used once before measuring: their first use registers
 * them (a lock, a few system calls), which the public header documents.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NT_SANITIZED 1 /* the sanitizers own malloc: no interposition */
#else
#define NT_SANITIZED 0
#endif

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
	NT_COMPLETE("hot", "complete", nt_now(), NT_BOOL("b", i & 1));
	{
		NT_SCOPE("hot", "scope");
	}
	NT_END("hot", "span");
}

static int start(int mode)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	cfg.buffer_size = 256 * 1024; /* small: the loop switches chunks, wraps or fills */
	cfg.chunk_size = 4096;
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nt_start: %s\n", nt_last_error());
		return 0;
	}
	emit_all(0); /* registers the thread and every call site */
	return 1;
}

static void install_seccomp(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clock_gettime, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("seccomp");
		syscall(SYS_exit_group, 3);
	}
}

static int check_mode(int mode, const char *name)
{
	const uint64_t loops = 200000; /* ~1.2 M events, dozens of chunk claims */
	int ok = 1;
	if (!start(mode))
		return 0;
#if !NT_SANITIZED
	allocations = 0;
	counting = 1;
#endif
	for (uint64_t i = 1; i <= loops; i++)
		emit_all(i);
#if !NT_SANITIZED
	counting = 0;
	if (allocations != 0) {
		fprintf(stderr, "FAIL %s: %lu allocations on the event path\n", name, allocations);
		ok = 0;
	} else {
		printf("ok %s: no allocation in %llu events\n", name, (unsigned long long)loops * 6);
	}
#endif
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		install_seccomp();
		for (uint64_t i = 1; i <= loops; i++)
			emit_all(i);
		syscall(SYS_exit_group, 0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS) {
		fprintf(stderr, "FAIL %s: the event path made a system call\n", name);
		ok = 0;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "FAIL %s: child ended with status 0x%x\n", name, status);
		ok = 0;
	} else {
		printf("ok %s: no system call in %llu events\n", name, (unsigned long long)loops * 6);
	}
	nt_stats st;
	nt_get_stats(&st);
	if (mode == NT_MODE_ONESHOT && st.events_dropped == 0) {
		fprintf(stderr, "FAIL %s: the loop never reached the drop path\n", name);
		ok = 0;
	}
	if (mode == NT_MODE_CIRCULAR && st.wraps == 0) {
		fprintf(stderr, "FAIL %s: the loop never wrapped\n", name);
		ok = 0;
	}
	char path[128];
	snprintf(path, sizeof(path), "/tmp/nt-hot-%d.ntrace", (int)getpid());
	nt_finish(path);
	unlink(path);
	return ok;
}

int main(void)
{
	int ok = check_mode(NT_MODE_ONESHOT, "oneshot");
	ok &= check_mode(NT_MODE_CIRCULAR, "circular");
	return ok ? 0 : 1;
}
