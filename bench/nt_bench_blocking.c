/*
 * nt_bench_blocking.c - what streaming's blocking disposition (nt_config.blocking_timeout_us,
 * LTTng-UST's --blocking-timeout) buys and costs, in one run: N unpaced writer threads (the
 * mixed shape: BEGIN, INSTANT with two int64, END) stream into the default arena, once
 * without blocking (writers drop when the saver is behind) and once with the longest
 * timeout (writers wait for it), interleaved round after round. Per mode: events lost (the
 * archive's events_dropped) and each writer's ns per event (wall time of its loop); with
 * blocking, the waits, those that ended in a drop and the time blocked, in all and of the
 * thread that waited longest (the archive's BlockedRecords, nt_reader_count_blocked).
 * Each figure is the median of the rounds; lost counts are the sums.
 *
 *   nt_bench_blocking [--events N] [--threads N] [--reps N] [--json]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>
#include "nt_bench_opts.h"
#include "nt_bench_scratch.h"
#include "nt_bench_shapes.h"

#define MAX_REPS 15
#define MAX_THREADS 16

typedef struct writer {
	pthread_t th;
	uint64_t iterations;
	double ns_per_event;
} writer;

static volatile int go;

static void *write_events(void *arg)
{
	writer *w = arg;
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	w->ns_per_event = nt_mixed_loop(w->iterations);
	return NULL;
}

typedef struct outcome {
	uint64_t made, lost, waits, timeouts, blocked_ns, max_thread_ns;
	double ns_per_event;
} outcome;

/* The finished archive's blocked totals and its longest-waiting thread. */
static int read_blocked(const char *path, outcome *o)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	if (r == NULL)
		return fprintf(stderr, "nt_bench_blocking: %s\n", err.message), 0;
	const nt_archive_info *in = nt_reader_info(r);
	o->lost = in->events_dropped;
	o->waits = in->blocked_waits;
	o->timeouts = in->blocked_timeouts;
	o->blocked_ns = in->blocked_ns;
	uint32_t n = nt_reader_thread_index_limit(r);
	nt_reader_blocked *b = calloc(n ? n : 1, sizeof(*b));
	if (b != NULL) {
		nt_reader_count_blocked(r, b, n);
		for (uint32_t i = 0; i < n; i++)
			if (b[i].ns > o->max_thread_ns)
				o->max_thread_ns = b[i].ns;
	}
	free(b);
	nt_reader_close(r);
	return 1;
}

static int run(const char *path, int threads, uint64_t events, long long timeout_us, outcome *o)
{
	memset(o, 0, sizeof(*o));
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_STREAMING;
	cfg.path = path;
	cfg.blocking_timeout_us = timeout_us;
	if (nt_start(&cfg) != NT_OK)
		return fprintf(stderr, "nt_bench_blocking: %s\n", nt_last_error()), 0;
	writer w[MAX_THREADS];
	go = 0;
	for (int t = 0; t < threads; t++) {
		w[t].iterations = events / 3;
		pthread_create(&w[t].th, NULL, write_events, &w[t]);
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	double ns = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(w[t].th, NULL);
		ns += w[t].ns_per_event;
	}
	if (nt_finish(NULL) != NT_OK)
		return fprintf(stderr, "nt_bench_blocking: %s\n", nt_last_error()), 0;
	o->made = (uint64_t)threads * (events / 3) * 3;
	o->ns_per_event = ns / threads;
	int ok = read_blocked(path, o);
	unlink(path);
	return ok;
}

int main(int argc, char **argv)
{
	uint64_t events = 3000000, nreps = 3, nthreads = 2;
	int json = 0;
	const nt_bench_opt opts[] = {
		NT_BENCH_NUMBER("--events", "N", &events, 3, NT_BENCH_MANY),
		NT_BENCH_NUMBER("--threads", "N", &nthreads, 1, MAX_THREADS),
		NT_BENCH_NUMBER("--reps", "N", &nreps, 1, MAX_REPS),
		NT_BENCH_FLAG("--json", &json),
	};
	if (!NT_BENCH_PARSE("nt_bench_blocking", argc, argv, opts))
		return 2;
	int reps = (int)nreps, threads = (int)nthreads;
	char path[600];
	nt_bench_scratch(path, sizeof(path), "blocking.ntrace");
	static const long long timeouts[2] = { NT_BLOCKING_OFF, NT_BLOCKING_TIMEOUT_MAX_US };
	double ns[2][MAX_REPS], blocked_ms[MAX_REPS], max_ms[MAX_REPS];
	uint64_t made[2] = { 0 }, lost[2] = { 0 }, waits = 0, ended = 0;
	for (int rep = 0; rep < reps; rep++) {
		for (int m = 0; m < 2; m++) {
			outcome o;
			if (!run(path, threads, events, timeouts[m], &o))
				return 1;
			ns[m][rep] = o.ns_per_event;
			made[m] += o.made;
			lost[m] += o.lost;
			if (m == 1) {
				waits += o.waits;
				ended += o.timeouts;
				blocked_ms[rep] = (double)o.blocked_ns / 1e6;
				max_ms[rep] = (double)o.max_thread_ns / 1e6;
			}
		}
	}
	double pct_off = 100.0 * (double)lost[0] / (double)made[0];
	double pct_on = 100.0 * (double)lost[1] / (double)made[1];
	if (json) {
		printf("{\"blocking_threads\": %d, \"blocking_events\": %llu, \"blocking_reps\": %d, "
		       "\"blocking_off_lost\": %llu, \"blocking_off_lost_pct\": %.3f, "
		       "\"blocking_off_ns_per_event\": %.2f, \"blocking_on_lost\": %llu, "
		       "\"blocking_on_lost_pct\": %.3f, \"blocking_on_ns_per_event\": %.2f, "
		       "\"blocking_on_waits\": %llu, \"blocking_on_waits_ended_in_drop\": %llu, "
		       "\"blocking_on_blocked_ms\": %.3f, \"blocking_on_blocked_ms_max_thread\": %.3f}\n",
		       threads, (unsigned long long)events, reps, (unsigned long long)lost[0], pct_off,
		       median(ns[0], reps), (unsigned long long)lost[1], pct_on, median(ns[1], reps),
		       (unsigned long long)waits, (unsigned long long)ended,
		       median(blocked_ms, reps), median(max_ms, reps));
		return 0;
	}
	printf("streaming, %d unpaced writers x %llu events, mixed shape, default arena, %d rounds\n",
	       threads, (unsigned long long)events, reps);
	printf("  never wait:  lost %llu (%.2f%%), %.2f ns/event\n", (unsigned long long)lost[0],
	       pct_off, median(ns[0], reps));
	printf("  wait (10 s): lost %llu (%.2f%%), %.2f ns/event; %llu waits (%llu ended in a "
	       "drop), blocked %.3f ms a round, %.3f ms the longest thread\n",
	       (unsigned long long)lost[1], pct_on, median(ns[1], reps), (unsigned long long)waits,
	       (unsigned long long)ended, median(blocked_ms, reps), median(max_ms, reps));
	return 0;
}
