/*
 * crash_test - a process recording through a file-backed arena can die at any moment and
 * still leave a readable archive.
 *
 *   kills     N children per mode record from 3 threads (every event carries its thread's
 *             sequence number) and are SIGKILLed at a random moment, some before nt_start()
 *             even returns. Each archive must open without damage; every recovered event
 *             must be whole and on its own thread, in order; and each thread's missing
 *             sequence numbers must equal the gaps the reader reports, which must be covered
 *             by the counted drops and overwrites.
 *   endings   exit() while recording, and SIGTERM, SIGINT, SIGSEGV, SIGBUS, SIGABRT: the
 *             process ends as it would have (same signal or exit code, a previously installed
 *             handler still runs) and the archive records how it ended.
 *
 *   crash_test [--kills N] [--dir DIR]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nanotrace.h"
#include "nanotrace_reader.h"

#define THREADS 3

static int failures;
#define FAIL(...)                                                                          \
	do {                                                                               \
		fprintf(stderr, "FAIL: " __VA_ARGS__);                                     \
		fputc('\n', stderr);                                                       \
		failures++;                                                                \
	} while (0)

static void *emit_forever(void *arg)
{
	uint32_t id = (uint32_t)(uintptr_t)arg;
	for (uint64_t seq = 0;; seq++)
		NT_INSTANT("crash", "ev", NT_U32("t", id), NT_U64("seq", seq));
	return NULL;
}

static void child_record(const char *path, int mode, int ready_fd)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.path = path;
	cfg.mode = mode;
	cfg.buffer_size = 256 * 1024;
	cfg.chunk_size = 4096;
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "child: %s\n", nt_last_error());
		_exit(2);
	}
	if (write(ready_fd, "R", 1) != 1)
		_exit(2);
	pthread_t th[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, emit_forever, (void *)i);
	pause();
	_exit(0);
}

typedef struct check {
	uint64_t last_seq[64], count[64], gap_events[64];
	uint32_t worker[64];
	int seen[64];
	uint64_t errors, bad;
} check;

static int on_event(void *ctx, const nt_reader_event *e)
{
	check *c = ctx;
	uint32_t ti = e->thread->index;
	if (ti >= 64 || e->arg_count != 2 || strcmp(e->args[1].name, "seq") != 0) {
		c->bad++;
		return 0;
	}
	uint32_t t = (uint32_t)e->args[0].value.u64;
	uint64_t seq = e->args[1].value.u64;
	if (!c->seen[ti]) {
		c->seen[ti] = 1;
		c->worker[ti] = t;
		c->count[ti] = 0;
		/* events before the first recovered one are missing too */
		c->last_seq[ti] = UINT64_MAX;
	} else if (c->worker[ti] != t || seq <= c->last_seq[ti]) {
		c->bad++;
	}
	c->last_seq[ti] = seq;
	c->count[ti]++;
	return 0;
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	check *c = ctx;
	if (c->errors++ < 3)
		fprintf(stderr, "  damage at byte %" PRIu64 ": %s\n", off, msg);
}

static void on_gap(void *ctx, const nt_reader_gap *g)
{
	check *c = ctx;
	if (g->thread->index < 64)
		c->gap_events[g->thread->index] += g->events;
}

/* Verifies one killed child's archive; returns events recovered. */
static uint64_t verify_killed(const char *path, int ready, int iteration, const char *mode)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		if (ready)
			FAIL("%s #%d: the archive is missing although nt_start() returned", mode, iteration);
		return 0; /* killed before the file existed: nothing was recorded */
	}
	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	if (r == NULL) {
		FAIL("%s #%d: %s", mode, iteration, err.message);
		return 0;
	}
	const nt_archive_info *in = nt_reader_info(r);
	check c;
	memset(&c, 0, sizeof(c));
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error, .on_gap = on_gap };
	int rc = nt_reader_visit(r, &cb, &c, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP);
	uint64_t recovered = 0, missing = 0;
	for (int t = 0; t < 64; t++) {
		if (!c.seen[t])
			continue;
		recovered += c.count[t];
		uint64_t thread_missing = c.last_seq[t] + 1 - c.count[t];
		missing += thread_missing;
		if (thread_missing != c.gap_events[t])
			FAIL("%s #%d: thread %d misses %" PRIu64 " events but the reader reports %" PRIu64
			     " in gaps", mode, iteration, t, thread_missing, c.gap_events[t]);
	}
	if (rc != 0 || c.errors || c.bad)
		FAIL("%s #%d: rc %d, %" PRIu64 " damaged places, %" PRIu64 " bad events", mode, iteration,
		     rc, c.errors, c.bad);
	if (in->layout != NT_LAYOUT_ARENA || in->ended_by != NT_END_UNKNOWN ||
	    (strcmp(mode, "streaming") == 0) != (in->stream_offset != 0))
		FAIL("%s #%d: layout %u ended_by %u, want a live arena", mode, iteration, in->layout,
		     in->ended_by);
	if (missing > in->events_dropped + in->events_overwritten)
		FAIL("%s #%d: %" PRIu64 " events missing, only %" PRIu64 " dropped + %" PRIu64
		     " overwritten counted", mode, iteration, missing, in->events_dropped,
		     in->events_overwritten);
	nt_reader_close(r);
	return recovered;
}

static void kill_runs(const char *dir, int mode, const char *mode_name, int runs, unsigned *seed)
{
	uint64_t total = 0;
	int early = 0;
	for (int i = 0; i < runs; i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/crash-%s-%d.ntrace", dir, mode_name, i);
		unlink(path);
		int pfd[2];
		fflush(stdout);
		if (pipe(pfd) != 0) {
			FAIL("pipe: %s", strerror(errno));
			return;
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			child_record(path, mode, pfd[1]);
		}
		close(pfd[1]);
		*seed = *seed * 1103515245u + 12345u;
		int before_ready = (*seed >> 16) % 10 == 0; /* 1 in 10: kill during nt_start() */
		int ready = 0;
		if (before_ready) {
			usleep((*seed >> 8) % 3000);
			early++;
		} else {
			char b;
			ready = read(pfd[0], &b, 1) == 1;
			usleep((*seed >> 4) % 20000);
		}
		kill(pid, SIGKILL);
		int status;
		waitpid(pid, &status, 0);
		if (!ready) {
			char b;
			ready = read(pfd[0], &b, 1) == 1; /* it may have got there after all */
		}
		close(pfd[0]);
		total += verify_killed(path, ready, i, mode_name);
		unlink(path);
	}
	printf("%s: %d kills (%d during start-up), %" PRIu64 " events recovered, all accounted for\n",
	       mode_name, runs, early, total);
}

/* ---- endings ---------------------------------------------------------------------------- */

static volatile int *volatile fault_address;

static void user_handler(int sig)
{
	(void)sig;
	_exit(7); /* a program's own SIGTERM handler */
}

static void child_ending(const char *path, int how)
{
	if (how == -SIGTERM) /* a handler installed before nanotrace must still run */
		signal(SIGTERM, user_handler);
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.path = path;
	if (nt_start(&cfg) != NT_OK)
		_exit(2);
	for (int i = 0; i < 1000; i++)
		NT_INSTANT("end", "ev", NT_I32("i", i));
	switch (how) {
	case 0:
		exit(3); /* exit while recording: the exit handler finishes the archive */
	case SIGSEGV:
		/* A real fault, not raise(): a store to a page mapped without access (defined C,
		 * so the sanitizers let the fault itself happen). */
		fault_address = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		*fault_address = 1;
		break;
	case SIGABRT:
		abort();
	case -SIGTERM:
		raise(SIGTERM);
		break;
	default:
		raise(how);
		break;
	}
	_exit(4);
}

static int count_event(void *ctx, const nt_reader_event *e)
{
	(void)e;
	(*(uint64_t *)ctx)++;
	return 0;
}

static void check_ending(const char *dir, int how, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/ending-%s.ntrace", dir, name);
	unlink(path);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		child_ending(path, how);
	int status;
	waitpid(pid, &status, 0);
	int sig = how < 0 ? -how : how;
	if (how == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 3))
		FAIL("%s: status 0x%x, want exit code 3", name, status);
	if (how == -SIGTERM && !(WIFEXITED(status) && WEXITSTATUS(status) == 7))
		FAIL("%s: status 0x%x, want the program's own handler (exit 7)", name, status);
	if (how > 0 && !(WIFSIGNALED(status) && WTERMSIG(status) == sig))
		FAIL("%s: status 0x%x, want death by signal %d", name, status, sig);
	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	if (r == NULL) {
		FAIL("%s: %s", name, err.message);
		return;
	}
	const nt_archive_info *in = nt_reader_info(r);
	check c;
	memset(&c, 0, sizeof(c));
	nt_reader_callbacks cb = { .on_event = count_event, .on_error = on_error };
	uint64_t events = 0;
	nt_reader_visit(r, &cb, &events, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP);
	if (events != 1000)
		FAIL("%s: %" PRIu64 " events recovered, want 1000", name, events);
	if (how == 0 && (in->ended_by != NT_END_EXIT || in->layout != NT_LAYOUT_STREAM))
		FAIL("%s: ended_by %u layout %u, want exit and a compacted archive", name, in->ended_by,
		     in->layout);
	if (how != 0 && (in->ended_by != NT_END_SIGNAL || in->end_signal != sig))
		FAIL("%s: ended_by %u signal %u, want signal %d", name, in->ended_by, in->end_signal, sig);
	if (in->finish_monotonic_ns <= in->start_monotonic_ns)
		FAIL("%s: no end time recorded", name);
	printf("%s: ended as it should, archive records it (%" PRIu64 " events)\n", name, events);
	nt_reader_close(r);
	unlink(path);
}

int main(int argc, char **argv)
{
	int kills = 100;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--kills") == 0 && i + 1 < argc)
			kills = atoi(argv[++i]);
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else {
			fprintf(stderr, "usage: crash_test [--kills N per mode] [--dir DIR]\n");
			return 1;
		}
	}
	mkdir(dir, 0755);
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	const unsigned first_seed = seed;
	printf("seed %u\n", seed);
	kill_runs(dir, NT_MODE_ONESHOT, "oneshot", kills, &seed);
	kill_runs(dir, NT_MODE_CIRCULAR, "circular", kills, &seed);
	kill_runs(dir, NT_MODE_STREAMING, "streaming", kills, &seed);
	check_ending(dir, 0, "exit");
	check_ending(dir, SIGTERM, "SIGTERM");
	check_ending(dir, SIGINT, "SIGINT");
	check_ending(dir, SIGSEGV, "SIGSEGV");
	check_ending(dir, SIGBUS, "SIGBUS");
	check_ending(dir, SIGABRT, "SIGABRT");
	check_ending(dir, -SIGTERM, "SIGTERM-with-user-handler");
	if (failures) {
		fprintf(stderr, "%d failures (seed %u)\n", failures, first_seed);
		return 1;
	}
	return 0;
}
