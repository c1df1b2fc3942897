/*
 * provider_prog.c - an instrumented program for trace-manager tests: it links libnanotrace,
 * so with NANOTRACE_MANAGER set it registers with that manager before main() (automatic
 * registration), and it makes a known number of events per thread (tests/support/
 * seq_check.h's scheme, so a reader of its section can prove exact accounting).
 *
 * The command line is stable (the manager's process-tree tests run it too):
 *
 *   provider_prog [--threads N] [--events N] [--rounds N] [--sync] [--fork] [--trace2]
 *                 [--hold-ms N] [--hold-stdin] [--finish] [--own-calls] [--env-session]
 *                 [--seccomp] [--say-ready]
 *
 *   --threads N    worker threads per round (default 2)
 *   --events N     iterations per worker (default 1000): seq_emit() each, so N events per
 *                  worker, or with --trace2 N + 3 * ceil(N / 4)
 *   --rounds N     rounds of workers (default 1); between two rounds the program reads one
 *                  line from stdin, so a test can stop and start the trace in between
 *   --sync         before the first round, wait (up to 10 s) until the manager has started
 *                  tracing this process (nt_is_recording()); exit 3 if it never does. With
 *                  automatic registration waiting for REGISTERED, this is immediate when a
 *                  trace is running. Without --sync the events are made at once, recorded
 *                  or not.
 *   --fork         after the wait, fork(): the child (a provider of its own, registered
 *                  anew before fork() returns) waits the same way and makes its own rounds;
 *                  the parent waits for it and fails if it failed
 *   --trace2       NT_T2_INITIALIZE("provider_prog") first, Trace2 events mixed in, and
 *                  NT_T2_CMD_EXIT at the end
 *   --hold-ms N    sleep N ms after the last round, before exiting (a manager may stop,
 *                  terminate or kill it meanwhile)
 *   --hold-stdin   then read stdin to its end before exiting (the test decides when)
 *   --finish       call nt_finish(NULL) at the end (manager mode: NT_OK); exit 4 if not OK
 *   --own-calls    check manager mode: nt_start(), nt_start_from_env() return NT_OK,
 *                  nt_provider_start() NT_ERR_STATE; exit 5 if not
 *   --seccomp      (after the wait) the main thread makes --events events (seq_emit, worker
 *                  0) under a seccomp filter that kills on any system call but exit_group,
 *                  then exits 0 at once, printing nothing: the hot path of a registered
 *                  provider makes no system call (exit 77 where not x86-64)
 *   --say-ready    print "ready" on stdout once main()'s setup (--trace2's NT_T2_INITIALIZE,
 *                  --own-calls, --env-session) is done, before --sync's wait, so a test
 *                  can start the trace after it rather than after a guessed pause
 *   --env-session  a session of its own from NANOTRACE (nt_start_from_env() first,
 *                  nt_finish(NULL) last): the in-process comparison of the hot path
 *
 * Output: after each round, one line on stdout (flushed), per process:
 *   made pid=PID round=R events=E total=T threads=N recording=0|1 registered=0|1 ns_per_event=X
 * where E is the events this round made, T the events made since the start, recording
 * nt_is_recording() and registered nt_provider_is_registered() after the round, and X the
 * workers' thread CPU time per event this round (the hot path's cost). Exit 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_trace2.h>
#include "tests/support/seq_check.h"
#include "tests/support/nt_seccomp_test.h"

static struct {
	int threads, rounds, sync, fork, trace2, finish, own_calls, env_session, hold_stdin;
	int say_ready;
	int seccomp;
	long events, hold_ms;
} opt = { .threads = 2, .rounds = 1, .events = 1000 };

typedef struct worker {
	pthread_t thread;
	uint32_t id;
	uint64_t made;
	uint64_t ns; /* the worker's thread CPU time making them */
} worker;

static uint64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *work(void *arg)
{
	worker *w = arg;
	uint64_t t0 = thread_ns();
	for (long i = 0; i < opt.events; i++)
		w->made += seq_emit(w->id, (uint64_t)i, opt.trace2);
	w->ns = thread_ns() - t0;
	return NULL;
}

/* One round of workers; returns the events they made, and in *ns their CPU time. */
static uint64_t round_of_workers(int round, uint64_t *ns)
{
	worker w[256];
	uint64_t made = 0;
	*ns = 0;
	for (int t = 0; t < opt.threads; t++) {
		w[t] = (worker){ .id = (uint32_t)(round * opt.threads + t) };
		if (pthread_create(&w[t].thread, NULL, work, &w[t]) != 0) {
			fprintf(stderr, "provider_prog: cannot start a thread\n");
			exit(2);
		}
	}
	for (int t = 0; t < opt.threads; t++) {
		pthread_join(w[t].thread, NULL);
		made += w[t].made;
		*ns += w[t].ns;
	}
	return made;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* --sync: wait until the manager started tracing this process. */
static void wait_for_start(void)
{
	for (int i = 0; i < 10000 && !nt_is_recording(); i++)
		sleep_ms(1);
	if (!nt_is_recording()) {
		fprintf(stderr, "provider_prog %d: tracing never started\n", (int)getpid());
		exit(3);
	}
}

/* --seccomp: the main thread makes its events under a filter that kills the process on any
 * system call but exit_group (and clock_gettime, which the vDSO issues only when the kernel
 * clock cannot be read in user space), then _exit(0)s: it survives only if the event path
 * of a registered provider made none. The first event (thread and call site registration)
 * comes before the filter. */
static void events_under_seccomp(void)
{
#if defined(__x86_64__)
	seq_emit(0, 0, 0);
	if (nt_test_forbid_syscalls() != 0) {
		perror("provider_prog: seccomp");
		exit(2);
	}
	for (long i = 1; i < opt.events; i++)
		seq_emit(0, (uint64_t)i, 0);
	syscall(SYS_exit_group, 0);
#else
	fprintf(stderr, "provider_prog: --seccomp is for x86-64\n");
	exit(77);
#endif
}

static void check_own_calls(void)
{
	nt_config cfg;
	nt_config_init(&cfg);
	nt_result a = nt_start(&cfg), b = nt_start_from_env(),
		  c = nt_provider_start(NT_BUFFER_RETAIN, NULL);
	if (a != NT_OK || b != NT_OK || c != NT_ERR_STATE) {
		fprintf(stderr, "provider_prog: manager mode: nt_start %d, nt_start_from_env %d, "
			"nt_provider_start %d (want 0, 0, %d)\n", a, b, c, NT_ERR_STATE);
		exit(5);
	}
}

static int run_rounds(void)
{
	uint64_t total = 0;
	for (int r = 0; r < opt.rounds; r++) {
		if (r > 0) {
			char line[64];
			if (fgets(line, sizeof(line), stdin) == NULL)
				break;
		}
		uint64_t ns, made = round_of_workers(r, &ns);
		total += made;
		/* nt_provider_is_registered() takes the registry's lock, which the provider
		 * thread holds while it obeys the manager: what the manager does after reading
		 * this line (a STOP, a START that clears the buffer) comes after the round's
		 * events for ThreadSanitizer too, as it does through the pipe and socket. */
		int registered = nt_provider_is_registered();
		printf("made pid=%d round=%d events=%" PRIu64 " total=%" PRIu64
		       " threads=%d recording=%d registered=%d ns_per_event=%.1f\n", (int)getpid(),
		       r, made, total, opt.threads, nt_is_recording() ? 1 : 0, registered,
		       made ? (double)ns / (double)made : 0.0);
		fflush(stdout);
	}
	if (opt.hold_ms > 0)
		sleep_ms(opt.hold_ms);
	if (opt.hold_stdin) {
		char line[64];
		while (fgets(line, sizeof(line), stdin) != NULL)
			;
	}
	if (opt.trace2)
		NT_T2_CMD_EXIT(0);
	if ((opt.finish || opt.env_session) && nt_finish(NULL) != NT_OK) {
		fprintf(stderr, "provider_prog: nt_finish: %s\n", nt_last_error());
		return 4;
	}
	return 0;
}

static long number(const char *name, const char *v)
{
	char *end;
	long n = v ? strtol(v, &end, 10) : -1;
	if (v == NULL || *end != '\0' || n < 0) {
		fprintf(stderr, "provider_prog: %s needs a number, not '%s'\n", name, v ? v : "");
		exit(2);
	}
	return n;
}

static void parse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--threads") == 0)
			opt.threads = (int)number(a, v), i++;
		else if (strcmp(a, "--events") == 0)
			opt.events = number(a, v), i++;
		else if (strcmp(a, "--rounds") == 0)
			opt.rounds = (int)number(a, v), i++;
		else if (strcmp(a, "--hold-ms") == 0)
			opt.hold_ms = number(a, v), i++;
		else if (strcmp(a, "--sync") == 0)
			opt.sync = 1;
		else if (strcmp(a, "--fork") == 0)
			opt.fork = 1;
		else if (strcmp(a, "--trace2") == 0)
			opt.trace2 = 1;
		else if (strcmp(a, "--finish") == 0)
			opt.finish = 1;
		else if (strcmp(a, "--own-calls") == 0)
			opt.own_calls = 1;
		else if (strcmp(a, "--env-session") == 0)
			opt.env_session = 1;
		else if (strcmp(a, "--hold-stdin") == 0)
			opt.hold_stdin = 1;
		else if (strcmp(a, "--seccomp") == 0)
			opt.seccomp = 1;
		else if (strcmp(a, "--say-ready") == 0)
			opt.say_ready = 1;
		else {
			fprintf(stderr, "provider_prog: unknown option '%s'\n", a);
			exit(2);
		}
	}
	if (opt.threads < 1 || opt.threads > 256 / (opt.rounds ? opt.rounds : 1)) {
		fprintf(stderr, "provider_prog: --threads x --rounds must be 1 to 256\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	if (opt.trace2)
		NT_T2_INITIALIZE("provider_prog");
	if (opt.own_calls)
		check_own_calls();
	if (opt.env_session && nt_start_from_env() < 0) {
		fprintf(stderr, "provider_prog: nt_start_from_env: %s\n", nt_last_error());
		return 2;
	}
	if (opt.say_ready) {
		printf("ready\n");
		fflush(stdout);
	}
	if (opt.sync)
		wait_for_start();
	if (opt.seccomp)
		events_under_seccomp();
	pid_t child = opt.fork ? fork() : -1;
	if (opt.fork && child < 0) {
		perror("provider_prog: fork");
		return 2;
	}
	if (child == 0 && opt.sync)
		wait_for_start();
	int rc = run_rounds();
	if (child > 0) {
		int status;
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			fprintf(stderr, "provider_prog: the fork child failed (status %#x)\n", status);
			return rc ? rc : 6;
		}
	}
	return rc;
}
