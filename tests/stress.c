/*
 * stress - N threads x M iterations into one arena, then proves from the archive that
 *   decoded events + counted drops + counted overwrites == emitted events,
 * with no duplicate, no out-of-order and no torn record, every event on the thread that
 * wrote it, every gap exactly what is missing there (tests/seq_check.h), and the header's
 * written count == emitted - dropped.
 *
 *   stress --mode oneshot|circular|streaming --threads N --events M [--buffer BYTES]
 *          [--chunk BYTES] [--slow] [--min-mb N] [--trace2]
 *
 * --trace2 mixes Git Trace2 messages (region enter/leave on the 8-byte path, data with an
 * argument) into every 4th iteration, as a program using both vocabularies does.
 *
 * Streaming mode records through a file-backed arena (the saver appends to the archive).
 * With --min-mb the threads emit at least M events each and go on until the archive file
 * holds N MB (at most 50 M events each); the run fails unless the archive's events take N MB.
 *
 * --slow makes thread 0 stall (sleep) in the middle of its chunks, so in circular mode the
 * other threads wrap the arena many times while it still owns a chunk of a half being reused.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>
#include "seq_check.h"

static uint64_t failures;
static void fail(const char *what)
{
	fprintf(stderr, "FAIL: %s\n", what);
	failures++;
}

typedef struct worker {
	pthread_t th;
	uint32_t id;
	uint64_t events; /* iterations asked, then events emitted */
	int slow;
	int until_stop;
	int trace2;
} worker;

static volatile int go, stop;

static void *work(void *arg)
{
	worker *w = arg;
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	uint64_t i, made = 0;
	for (i = 0; i < w->events || (w->until_stop && !__atomic_load_n(&stop, __ATOMIC_RELAXED) &&
				       i < 50000000); i++) {
		made += seq_emit(w->id, i, w->trace2);
		if (w->slow && i % 1000 == 500)
			usleep(200);
	}
	w->events = made;
	return NULL;
}

int main(int argc, char **argv)
{
	nt_config cfg;
	nt_config_init(&cfg);
	uint32_t nthreads = 2;
	uint64_t events = 1000000;
	int slow = 0, trace2 = 0;
	uint64_t min_mb = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc)
			i++, cfg.mode = strcmp(argv[i], "circular") == 0    ? NT_MODE_CIRCULAR
				      : strcmp(argv[i], "streaming") == 0 ? NT_MODE_STREAMING
									  : NT_MODE_ONESHOT;
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			nthreads = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc)
			events = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--buffer") == 0 && i + 1 < argc)
			cfg.buffer_size = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--chunk") == 0 && i + 1 < argc)
			cfg.chunk_size = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--slow") == 0)
			slow = 1;
		else if (strcmp(argv[i], "--min-mb") == 0 && i + 1 < argc)
			min_mb = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--trace2") == 0)
			trace2 = 1;
		else {
			fprintf(stderr, "usage: stress --mode oneshot|circular --threads N --events M "
					"[--buffer B] [--chunk C] [--slow] [--min-mb N] [--trace2]\n");
			return 1;
		}
	}
	if (nthreads == 0 || nthreads > 64) {
		fprintf(stderr, "stress: --threads must be 1-64\n");
		return 1;
	}
	char path[256];
	snprintf(path, sizeof(path), "%s/nt-stress-%d.ntrace", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		 (int)getpid());
	if (cfg.mode == NT_MODE_STREAMING)
		cfg.path = path;
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "stress: %s\n", nt_last_error());
		return 1;
	}
	if (trace2 && !NT_T2_INITIALIZE("stress")) {
		fprintf(stderr, "stress: Trace2 did not join the session\n");
		return 1;
	}
	worker *ws = calloc(nthreads, sizeof(*ws));
	for (uint32_t i = 0; i < nthreads; i++) {
		ws[i].id = i;
		ws[i].events = events;
		ws[i].slow = slow && i == 0;
		ws[i].until_stop = min_mb > 0;
		ws[i].trace2 = trace2;
		pthread_create(&ws[i].th, NULL, work, &ws[i]);
	}
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	if (min_mb > 0) { /* go on until the archive has grown by min_mb */
		struct stat st;
		for (int ms = 0; ms < 120000; ms += 10) {
			if (stat(path, &st) == 0 && (double)st.st_size > (double)min_mb * 1.05e6 + 1e6)
				break;
			usleep(10000);
		}
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	}
	uint64_t emitted = 0;
	for (uint32_t i = 0; i < nthreads; i++) {
		pthread_join(ws[i].th, NULL);
		emitted += ws[i].events;
	}

	if (nt_finish(path) != NT_OK) {
		fprintf(stderr, "stress: %s\n", nt_last_error());
		return 1;
	}

	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	if (r == NULL) {
		fprintf(stderr, "FAIL: %s\n", err.message);
		return 1;
	}
	const nt_archive_info *info = nt_reader_info(r);
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	static seq_check c;
	int rc = seq_read(r, &c, trace2);
	uint64_t lost = info->events_dropped + info->events_overwritten;
	uint64_t accounted = c.decoded + lost, made = emitted + c.foreign;
	const char *mode = cfg.mode == NT_MODE_ONESHOT ? "oneshot"
			   : cfg.mode == NT_MODE_CIRCULAR ? "circular" : "streaming";
	printf("%s %u threads x %" PRIu64 " iterations%s%s: decoded %" PRIu64 " + dropped %" PRIu64
	       " + overwritten %" PRIu64 " = %" PRIu64 " of %" PRIu64 " made; written %" PRIu64
	       ", gaps %" PRIu64 " events; wraps %" PRIu64 ", chunks %" PRIu64 ", halves saved %" PRIu64
	       ", %.1f MB of chunks in the archive\n",
	       mode, nthreads, events, trace2 ? " with Trace2" : "", slow ? " (slow thread)" : "",
	       c.decoded, info->events_dropped, info->events_overwritten, accounted, made,
	       info->events_written, c.gap_events, info->wraps, info->chunks_claimed,
	       info->buffers_saved, (double)sum.chunk_bytes / 1e6);
	if (c.failures)
		fprintf(stderr, "FAIL: %s\n", c.first_failure);
	if ((double)sum.chunk_bytes < (double)min_mb * 1e6)
		fail("the archive holds less event data than --min-mb asks");
	if (rc != 0 || c.errors)
		fail("visit did not complete without damage");
	if (accounted != made)
		fail("decoded + dropped + overwritten != made");
	if (info->events_written + info->events_dropped != made)
		fail("header events_written != made - dropped");
	if (c.gap_events > lost)
		fail("gaps report more lost events than were dropped or overwritten");
	if (cfg.mode == NT_MODE_ONESHOT && c.gap_events != 0)
		fail("oneshot kept something other than a gap-free prefix of each thread");
	if (cfg.mode != NT_MODE_ONESHOT && info->wraps == 0 && info->events_overwritten > 0)
		fail("events were overwritten without a counted wrap");
	failures += c.failures;
	nt_reader_close(r);
	unlink(path);
	free(ws);
	if (failures) {
		fprintf(stderr, "%" PRIu64 " failures\n", failures);
		return 1;
	}
	return 0;
}
