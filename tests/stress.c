/*
 * stress - N threads x M events into one arena, then proves from the archive that
 *   decoded events + counted drops + counted overwrites == emitted events,
 * with no duplicate, no out-of-order and no torn record, and every event on the thread that
 * wrote it.
 *
 *   stress --mode oneshot|circular|streaming --threads N --events M [--buffer BYTES]
 *          [--chunk BYTES] [--slow] [--min-mb N]
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

#include "nanotrace.h"
#include "nanotrace_reader.h"

typedef struct worker {
	pthread_t th;
	uint32_t id;
	uint64_t events;
	int slow;
	int until_stop;
} worker;

static volatile int go, stop;

static void *work(void *arg)
{
	worker *w = arg;
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		;
	uint64_t i;
	for (i = 0; i < w->events || (w->until_stop && !__atomic_load_n(&stop, __ATOMIC_RELAXED) &&
				       i < 50000000); i++) {
		NT_INSTANT("stress", "ev", NT_U32("t", w->id), NT_U64("seq", i));
		if (w->slow && i % 1000 == 500)
			usleep(200);
	}
	w->events = i; /* what this thread emitted */
	return NULL;
}

typedef struct per_thread {
	uint32_t worker;   /* "t" of its first event; UINT32_MAX before */
	uint64_t last_seq; /* last sequence seen; UINT64_MAX before */
	uint64_t decoded;
	uint64_t prefix_ok; /* oneshot: still a gap-free prefix */
} per_thread;

typedef struct check {
	per_thread *th; /* by reader thread index */
	uint32_t nth;
	uint64_t decoded;
	uint64_t failures;
	uint64_t errors;
	int oneshot;
} check;

static void fail(check *c, const char *what, uint64_t off)
{
	if (c->failures++ < 10)
		fprintf(stderr, "FAIL: %s (record at byte %" PRIu64 ")\n", what, off);
}

static int on_event(void *ctx, const nt_reader_event *e)
{
	check *c = ctx;
	c->decoded++;
	if (e->arg_count != 2 || strcmp(e->args[0].name, "t") != 0 ||
	    strcmp(e->args[1].name, "seq") != 0 || e->args[0].type != NT_ARG_UINT32) {
		fail(c, "torn or foreign record: wrong arguments", e->offset);
		return 0;
	}
	if (e->thread->index >= c->nth) {
		fail(c, "thread index out of range", e->offset);
		return 0;
	}
	per_thread *p = &c->th[e->thread->index];
	uint32_t t = (uint32_t)e->args[0].value.u64;
	uint64_t seq = e->args[1].value.u64;
	if (p->worker == UINT32_MAX)
		p->worker = t;
	else if (p->worker != t)
		fail(c, "event recorded on another thread's chunk", e->offset);
	if (p->last_seq != UINT64_MAX && seq <= p->last_seq)
		fail(c, "sequence duplicated or out of order within a thread", e->offset);
	if (c->oneshot && seq != p->decoded)
		fail(c, "oneshot kept something other than a gap-free prefix", e->offset);
	p->last_seq = seq;
	p->decoded++;
	return 0;
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	check *c = ctx;
	c->errors++;
	fail(c, msg, off);
}

int main(int argc, char **argv)
{
	nt_config cfg;
	nt_config_init(&cfg);
	uint32_t nthreads = 2;
	uint64_t events = 1000000;
	int slow = 0;
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
		else {
			fprintf(stderr, "usage: stress --mode oneshot|circular --threads N --events M "
					"[--buffer B] [--chunk C] [--slow]\n");
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
	worker *ws = calloc(nthreads, sizeof(*ws));
	for (uint32_t i = 0; i < nthreads; i++) {
		ws[i].id = i;
		ws[i].events = events;
		ws[i].slow = slow && i == 0;
		ws[i].until_stop = min_mb > 0;
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
	check c = { .oneshot = cfg.mode == NT_MODE_ONESHOT, .nth = 2 * nthreads + 2 };
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	c.th = calloc(c.nth, sizeof(*c.th));
	for (uint32_t i = 0; i < c.nth; i++) {
		c.th[i].worker = UINT32_MAX;
		c.th[i].last_seq = UINT64_MAX;
	}
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error };
	int rc = nt_reader_visit(r, &cb, &c, NT_ORDER_STREAM, NT_ON_CORRUPT_STOP);
	uint64_t accounted = c.decoded + info->events_dropped + info->events_overwritten;
	const char *mode = cfg.mode == NT_MODE_ONESHOT ? "oneshot"
			   : cfg.mode == NT_MODE_CIRCULAR ? "circular" : "streaming";
	printf("%s %u threads x %" PRIu64 " events%s: decoded %" PRIu64 " + dropped %" PRIu64
	       " + overwritten %" PRIu64 " = %" PRIu64 " of %" PRIu64 " emitted; wraps %" PRIu64
	       ", chunks %" PRIu64 ", halves saved %" PRIu64 ", %.1f MB of chunks in the archive\n",
	       mode, nthreads, events, slow ? " (slow thread)" : "", c.decoded, info->events_dropped,
	       info->events_overwritten, accounted, emitted, info->wraps, info->chunks_claimed,
	       info->buffers_saved, (double)sum.chunk_bytes / 1e6);
	if ((double)sum.chunk_bytes < (double)min_mb * 1e6)
		fail(&c, "the archive holds less event data than --min-mb asks", 0);
	if (rc != 0)
		fail(&c, "visit did not complete", 0);
	if (accounted != emitted)
		fail(&c, "decoded + dropped + overwritten != emitted", 0);
	if (cfg.mode != NT_MODE_STREAMING && info->events_written != c.decoded + info->events_overwritten)
		fail(&c, "header events_written disagrees with the decoded events", 0);
	if (!c.oneshot && info->wraps == 0 && info->events_overwritten > 0)
		fail(&c, "events were overwritten without a counted wrap", 0);
	nt_reader_close(r);
	unlink(path);
	free(c.th);
	free(ws);
	if (c.failures) {
		fprintf(stderr, "%" PRIu64 " failures\n", c.failures);
		return 1;
	}
	return 0;
}
