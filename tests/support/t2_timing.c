/*
 * t2_timing - a thread and a child that each live a known time, for tests/test_t2_timing.py.
 *
 *   t2_timing [--skew PCT] [--ms N]
 *
 * Records through NANOTRACE with the start-up TSC calibration made PCT percent wrong (the
 * writer's test-only hook), runs a thread and a child process side by side that each sleep
 * N ms (default 200) between their Trace2 start and end messages, and prints what it
 * measured itself with CLOCK_MONOTONIC, in microseconds:
 *
 *   thread <inner> <outer>
 *   child <inner> <outer>
 *
 * inner spans from just after the start message to just before the end message, outer from
 * just before the start to just after the end: the recorded t_rel lies between the two.
 * Prints "clock monotonic" first when the session does not read the TSC (nothing to skew).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace_trace2.h>
#include "writer/core/nt_clock.h"

static long sleep_ms = 200;

typedef struct span {
	uint64_t before_start, after_start, before_end, after_end;
} span;

static void sleep_exactly(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0)
		;
}

static void *sleeper(void *arg)
{
	span *s = arg;
	s->before_start = nt_clock_monotonic_ns();
	NT_T2_THREAD_START("sleeper");
	s->after_start = nt_clock_monotonic_ns();
	sleep_exactly(sleep_ms);
	s->before_end = nt_clock_monotonic_ns();
	NT_T2_THREAD_EXIT();
	s->after_end = nt_clock_monotonic_ns();
	return NULL;
}

static void run_child(span *s)
{
	nt_trace2_child child;
	const char *argv[] = { "sleep", NULL };
	s->before_start = nt_clock_monotonic_ns();
	NT_T2_CHILD_START(&child, "test", NULL, NULL, 0, 0, argv);
	s->after_start = nt_clock_monotonic_ns();
	pid_t pid = fork();
	if (pid == 0) {
		sleep_exactly(sleep_ms);
		_exit(0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	s->before_end = nt_clock_monotonic_ns();
	NT_T2_CHILD_EXIT(&child, (int)pid, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	s->after_end = nt_clock_monotonic_ns();
}

static void print_span(const char *what, const span *s)
{
	printf("%s %" PRIu64 " %" PRIu64 "\n", what, (s->before_end - s->after_start) / 1000,
	       (s->after_end - s->before_start + 999) / 1000);
}

int main(int argc, const char **argv)
{
	NT_T2_INITIALIZE_CLOCK();
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--skew") == 0)
			nt_clock_calibration_skew_pct_ = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--ms") == 0)
			sleep_ms = atol(argv[i + 1]);
	}
	if (!NT_T2_INITIALIZE("t2-timing")) {
		fprintf(stderr, "t2_timing: Trace2 is not enabled (set NANOTRACE)\n");
		return 2;
	}
	if (!nt_clock_use_tsc_)
		printf("clock monotonic\n");
	NT_T2_CMD_START(argv);
	span th, ch;
	pthread_t t;
	pthread_create(&t, NULL, sleeper, &th);
	run_child(&ch);
	pthread_join(t, NULL);
	print_span("thread", &th);
	print_span("child", &ch);
	fflush(stdout);
	return NT_T2_CMD_EXIT(0);
}
