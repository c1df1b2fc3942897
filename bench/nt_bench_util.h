/* nt_bench_util.h - what the benchmark programs share: the clock they time with, medians,
 * the loop of argument-less begin/end pairs both compare, and a program run with its
 * standard output read back. */
#ifndef NT_BENCH_UTIL_H
#define NT_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Returns ns per event (two events per pair). */
static inline double pairs_loop(uint64_t pairs)
{
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < pairs; i++) {
		NT_BEGIN("bench", "pair");
		NT_END("bench", "pair");
	}
	return (double)(now_ns() - t0) / (double)(2 * pairs);
}

/* Runs argv[0] (a path) with argv, its standard output a pipe whose read end is *out_fd.
 * Returns its pid, or -1 (nothing left open) when the pipe or the fork fails. */
static inline pid_t nt_bench_spawn_reading(char *const argv[], int *out_fd)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	if (pid < 0)
		close(fd[0]);
	else
		*out_fd = fd[0];
	return pid;
}

/* RssAnon of this process (its private memory), KiB; -1 when /proc does not say. */
static inline long nt_bench_anon_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "RssAnon: %ld kB", &kb) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return kb;
}

/* Runs argv[0] (a path) with argv to its end, the start of what it printed in buf[cap]
 * (NUL-terminated): 0, or -1 when it printed nothing or did not exit 0. */
static inline int nt_bench_run_output(char *const argv[], char *buf, size_t cap)
{
	int fd;
	pid_t pid = nt_bench_spawn_reading(argv, &fd);
	if (pid < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	int st = 1;
	waitpid(pid, &st, 0);
	return n > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Runs argv[0] (a path) with argv to its end: the number it printed, or -1 when it failed
 * (a fresh process: the memory figures exec'd this way start from no earlier heap). */
static inline long nt_bench_run_number(char *const argv[])
{
	char buf[64];
	return nt_bench_run_output(argv, buf, sizeof(buf)) == 0 ? strtol(buf, NULL, 10) : -1;
}

#endif /* NT_BENCH_UTIL_H */
