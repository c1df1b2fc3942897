/*
 * nt_bench_soak.c - the streaming soak: N writer threads (default: one per online CPU) make
 * the mixed shape (BEGIN, an INSTANT with two int64, END) as fast as they can for S seconds
 * into one streaming session, so its saver, a thread among theirs, gets only a share of the
 * CPUs: at full rate on every core it keeps up with a fraction of what is made, and the rest
 * must be dropped and counted. Every second the process's private memory (RssAnon) is
 * sampled. At the end the archive is read back.
 *
 *     nt_bench_soak [--threads N] [--seconds S] [--json]
 *
 * Exit status 0 only if decoded + dropped == made exactly and private memory after the first
 * seconds stayed within 4 MiB of where it started (bounded memory: the arena is the whole
 * buffer); 1 otherwise, naming what failed; 2 on a usage or setup error.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>

#include "nt_bench_opts.h"
#include "nt_bench_util.h"

/* ThreadSanitizer's shadow memory grows with every page the arena and the saved file touch:
 * private memory says nothing about nanotrace's there, so it is reported, not judged. */
#if defined(__SANITIZE_THREAD__)
#define MEMORY_JUDGED 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MEMORY_JUDGED 0
#endif
#endif
#ifndef MEMORY_JUDGED
#define MEMORY_JUDGED 1
#endif

#define MAX_THREADS 256
#define WARMUP_SECONDS 2
#define MEMORY_SLACK_KB 4096

typedef struct writer {
	pthread_t thread;
	uint64_t made;
} writer;

static int stopping;

static void *write_events(void *arg)
{
	writer *w = arg;
	uint64_t made = 0;
	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 256; i++) {
			NT_BEGIN("soak", "iteration");
			NT_INSTANT("soak", "point", NT_I64("x", (int64_t)made), NT_I64("y", i));
			NT_END("soak", "iteration");
			made += 3;
		}
	}
	w->made = made;
	return NULL;
}

/* The process's private resident memory, in KiB (RssAnon of /proc/self/status); 0 if it
 * cannot be read. */
static uint64_t private_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	uint64_t kb = 0;
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "RssAnon: %" SCNu64 " kB", &kb) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return kb;
}

static int count_event(void *ctx, const nt_reader_event *e)
{
	(void)e;
	++*(uint64_t *)ctx;
	return 0;
}

int main(int argc, char **argv)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t threads = online < 1 ? 1 : online > MAX_THREADS ? MAX_THREADS : (uint64_t)online;
	uint64_t nsecs = 60;
	int json = 0;
	const nt_bench_opt opts[] = {
		NT_BENCH_NUMBER("--threads", "N", &threads, 1, MAX_THREADS),
		NT_BENCH_NUMBER("--seconds", "S", &nsecs, WARMUP_SECONDS + 1, 24 * 3600),
		NT_BENCH_FLAG("--json", &json),
	};
	if (!NT_BENCH_PARSE("nt_bench_soak", argc, argv, opts))
		return 2;
	long nthreads = (long)threads, seconds = (long)nsecs;
	char dir[256], path[300];
	snprintf(dir, sizeof(dir), "%s/nt-soak-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(dir) == NULL)
		return perror("nt_bench_soak: mkdtemp"), 2;
	snprintf(path, sizeof(path), "%s/soak.ntrace", dir);

	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_STREAMING;
	cfg.path = path;
	if (nt_start(&cfg) != NT_OK)
		return fprintf(stderr, "nt_bench_soak: %s\n", nt_last_error()), rmdir(dir), 2;
	static writer w[MAX_THREADS];
	for (long t = 0; t < nthreads; t++)
		pthread_create(&w[t].thread, NULL, write_events, &w[t]);
	uint64_t start_kb = 0, max_kb = 0, t0 = now_ns();
	for (long s = 1; s <= seconds; s++) {
		sleep(1);
		uint64_t kb = private_kb();
		if (s == WARMUP_SECONDS)
			start_kb = kb;
		if (s >= WARMUP_SECONDS && kb > max_kb)
			max_kb = kb;
	}
	__atomic_store_n(&stopping, 1, __ATOMIC_RELAXED);
	uint64_t made = 0;
	for (long t = 0; t < nthreads; t++) {
		pthread_join(w[t].thread, NULL);
		made += w[t].made;
	}
	double secs = (double)(now_ns() - t0) / 1e9;
	if (nt_finish(NULL) != NT_OK)
		return fprintf(stderr, "nt_bench_soak: %s\n", nt_last_error()), 2;

	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	if (r == NULL)
		return fprintf(stderr, "nt_bench_soak: %s\n", err.message), 2;
	uint64_t decoded = 0;
	nt_reader_callbacks cb = { .on_event = count_event };
	int rc = nt_reader_visit(r, &cb, &decoded, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP);
	uint64_t dropped = nt_reader_info(r)->events_dropped;
	nt_reader_close(r);
	unlink(path);
	rmdir(dir);

	int accounted = rc == 0 && decoded + dropped == made;
	int flat = !MEMORY_JUDGED || max_kb <= start_kb + MEMORY_SLACK_KB;
	double pct = made ? 100.0 * (double)dropped / (double)made : 0.0;
	if (json)
		printf("{\"soak_threads\":%ld,\"soak_seconds\":%.1f,\"soak_made\":%" PRIu64
		       ",\"soak_decoded\":%" PRIu64 ",\"soak_dropped\":%" PRIu64
		       ",\"soak_saved_mev_s\":%.2f,\"soak_dropped_pct\":%.3f"
		       ",\"soak_private_kb_start\":%" PRIu64 ",\"soak_private_kb_max\":%" PRIu64
		       ",\"soak_accounted\":%s,\"soak_memory_flat\":%s}\n",
		       nthreads, secs, made, decoded, dropped, (double)decoded / 1e6 / secs, pct,
		       start_kb, max_kb, accounted ? "true" : "false",
		       !MEMORY_JUDGED ? "null,\"soak_memory_flat_reason\":\"not judged under "
					"ThreadSanitizer (its shadow memory grows with every page "
					"touched)\""
		       : flat	      ? "true"
				      : "false");
	else
		printf("soak: %ld threads, %.1f s: %" PRIu64 " events made, %" PRIu64
		       " decoded (%.2f M/s saved), %" PRIu64 " dropped (%.3f%%); private memory %"
		       PRIu64 " KiB after %d s, at most %" PRIu64 " KiB\n",
		       nthreads, secs, made, decoded, (double)decoded / 1e6 / secs, dropped, pct,
		       start_kb, WARMUP_SECONDS, max_kb);
	if (!accounted)
		fprintf(stderr, "nt_bench_soak: decoded %" PRIu64 " + dropped %" PRIu64
			" != made %" PRIu64 " (visit %d)\n", decoded, dropped, made, rc);
	if (!flat)
		fprintf(stderr, "nt_bench_soak: private memory grew from %" PRIu64 " to %" PRIu64
			" KiB\n", start_kb, max_kb);
	return accounted && flat ? 0 : 1;
}
