/*
 * stress - N threads x M iterations into one arena, then proves from the archive that
 *   decoded events + counted drops + counted overwrites == emitted events,
 * with no duplicate, no out-of-order and no torn record, every event on the thread that
 * wrote it, every gap exactly what is missing there (tests/support/seq_check.h), and the header's
 * written count == emitted - dropped.
 *
 *   stress --mode oneshot|circular|streaming --threads N --events M [--buffer BYTES]
 *          [--chunk BYTES] [--slow] [--min-mb N] [--trace2] [--blocking US] [--keep PATH]
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
 *
 * --blocking US (streaming) turns blocking on (nt_config.blocking_timeout_us): a writer that
 * finds no free chunk waits for the saver. The threads then go on (at least M events each,
 * at most 50 M) until the live archive's header counts a wait, so that the run has waited,
 * whatever the machine's speed; the run fails unless nothing was dropped, the per-thread
 * BlockedRecords sum to the header's totals, and trace-dump --stats's renderer shows them.
 *
 * --keep PATH writes the archive (streaming) to PATH and leaves it there, for the tests of
 * its readers (tests/reader/test_python.py: the blocked figures in every rendering).
 *
 * main() parses the options; the run and its checks are one cmocka test.
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
#include "tests/support/nt_cmocka.h"
#include "tests/support/seq_check.h"
#include "format/nt_archive_header_decode.h"
#include <fcntl.h>

typedef struct worker {
	pthread_t th;
	uint32_t id;
	uint64_t events; /* iterations asked, then events emitted */
	int slow;
	int until_stop;
	int trace2;
} worker;

static volatile int go, stop;

/* The options (main). */
static nt_config cfg;
static uint32_t nthreads = 2;
static uint64_t events = 1000000;
static int slow, trace2;
static uint64_t min_mb;
static long long blocking_us;
static const char *keep; /* --keep PATH: the streaming archive is written there and kept */

/* The live archive's header at `path` (the file-backed arena: readable at any moment),
 * copied first; 0 when it cannot be read yet. */
static int live_header(const char *path, nt_archive_info *info)
{
	uint8_t buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	char why[128];
	uint64_t where;
	return n > 0 && nt_header_decode(buf, (size_t)n, info, why, sizeof(why), &where) != 0;
}

/* Blocking: the per-thread BlockedRecords add up to the header's totals (no wait ended in a
 * drop here, so each went into its thread's next chunk), and the --stats renderer says so. */
static void blocked_is_reported(nt_reader *r, const nt_archive_info *info)
{
	uint32_t n = nt_reader_thread_index_limit(r);
	nt_reader_blocked *b = calloc(n ? n : 1, sizeof(*b));
	assert_msg(b != NULL, "out of memory");
	uint64_t records = nt_reader_count_blocked(r, b, n), waits = 0, timeouts = 0, ns = 0;
	for (uint32_t i = 0; i < n; i++)
		waits += b[i].waits, timeouts += b[i].timeouts, ns += b[i].ns;
	free(b);
	printf("blocking %lld us: %" PRIu64 " waits (%" PRIu64 " BlockedRecords), %.3f ms "
	       "blocked, %" PRIu64 " ended in a drop\n", blocking_us, info->blocked_waits, records,
	       (double)info->blocked_ns / 1e6, info->blocked_timeouts);
	assert_msg(info->blocked_waits > 0 && info->blocked_ns > 0,
		   "the header counts no wait (%" PRIu64 ") or no time blocked", info->blocked_waits);
	assert_msg(waits == info->blocked_waits && timeouts == info->blocked_timeouts &&
			   ns == info->blocked_ns,
		   "BlockedRecords sum to %" PRIu64 " waits, %" PRIu64 " timeouts, %" PRIu64
		   " ns; the header says %" PRIu64 ", %" PRIu64 ", %" PRIu64, waits, timeouts, ns,
		   info->blocked_waits, info->blocked_timeouts, info->blocked_ns);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_msg(f != NULL && nt_render_stats(r, f, NULL) == 0, "nt_render_stats failed");
	fclose(f);
	char want[96];
	snprintf(want, sizeof(want), "blocked: %" PRIu64 " waits for the saver", info->blocked_waits);
	int shown = strstr(text, want) != NULL && strstr(text, ", blocked ") != NULL;
	if (!shown)
		fputs(text, stderr);
	free(text);
	assert_msg(shown, "--stats does not show '%s' and the threads' waits", want);
}

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

static void every_event_is_accounted_for(void **state)
{
	(void)state;
	char path[256];
	snprintf(path, sizeof(path), "%s/nt-stress-%d.ntrace", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		 (int)getpid());
	if (keep != NULL)
		snprintf(path, sizeof(path), "%s", keep);
	if (cfg.mode == NT_MODE_STREAMING)
		cfg.path = path;
	assert_msg(nt_start(&cfg) == NT_OK, "nt_start: %s", nt_last_error());
	assert_msg(!trace2 || NT_T2_INITIALIZE("stress"), "Trace2 did not join the session");
	worker *ws = calloc(nthreads, sizeof(*ws));
	for (uint32_t i = 0; i < nthreads; i++) {
		ws[i].id = i;
		ws[i].events = events;
		ws[i].slow = slow && i == 0;
		ws[i].until_stop = min_mb > 0 || blocking_us > 0;
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
	if (blocking_us > 0) { /* go on until a writer has waited for the saver */
		nt_archive_info live;
		for (int ms = 0; ms < 120000; ms += 5) {
			if (live_header(path, &live) && live.blocked_waits > 0)
				break;
			usleep(5000);
		}
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	}
	uint64_t emitted = 0;
	for (uint32_t i = 0; i < nthreads; i++) {
		pthread_join(ws[i].th, NULL);
		emitted += ws[i].events;
	}

	free(ws);
	assert_msg(nt_finish(path) == NT_OK, "nt_finish: %s", nt_last_error());

	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	if (r == NULL)
		unlink(path);
	assert_msg(r != NULL, "%s", err.message);
	const nt_archive_info *info = nt_reader_info(r);
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	static seq_check c;
	int rc = seq_read(r, &c, trace2);
	uint64_t lost = info->events_dropped + info->events_overwritten;
	uint64_t accounted = c.decoded + lost, made = emitted + c.foreign;
	uint64_t info_written = info->events_written, info_dropped = info->events_dropped,
		 info_overwritten = info->events_overwritten, info_wraps = info->wraps;
	const char *mode = cfg.mode == NT_MODE_ONESHOT ? "oneshot"
			   : cfg.mode == NT_MODE_CIRCULAR ? "circular" : "streaming";
	nt_archive_info copy = *info;
	if (blocking_us > 0)
		blocked_is_reported(r, &copy);
	printf("%s %u threads x %" PRIu64 " iterations%s%s: decoded %" PRIu64 " + dropped %" PRIu64
	       " + overwritten %" PRIu64 " = %" PRIu64 " of %" PRIu64 " made; written %" PRIu64
	       ", gaps %" PRIu64 " events; wraps %" PRIu64 ", chunks %" PRIu64 ", halves saved %" PRIu64
	       ", %.1f MB of chunks in the archive\n",
	       mode, nthreads, events, trace2 ? " with Trace2" : "", slow ? " (slow thread)" : "",
	       c.decoded, info->events_dropped, info->events_overwritten, accounted, made,
	       info->events_written, c.gap_events, info->wraps, info->chunks_claimed,
	       info->buffers_saved, (double)sum.chunk_bytes / 1e6);
	nt_reader_close(r);
	if (keep == NULL)
		unlink(path);
	assert_msg(c.failures == 0, "%" PRIu64 " failures, the first: %s", c.failures,
		   c.first_failure);
	assert_msg((double)sum.chunk_bytes >= (double)min_mb * 1e6,
		   "the archive holds less event data (%.1f MB) than --min-mb %" PRIu64 " asks",
		   (double)sum.chunk_bytes / 1e6, min_mb);
	assert_msg(rc == 0 && c.errors == 0,
		   "visit did not complete without damage (rc %d, %" PRIu64 " damaged places)", rc,
		   c.errors);
	assert_msg(accounted == made,
		   "decoded + dropped + overwritten = %" PRIu64 " != made %" PRIu64, accounted, made);
	assert_msg(info_written + info_dropped == made,
		   "header events_written %" PRIu64 " != made %" PRIu64 " - dropped %" PRIu64,
		   info_written, made, info_dropped);
	assert_msg(c.gap_events <= lost,
		   "gaps report %" PRIu64 " lost events, more than the %" PRIu64
		   " dropped or overwritten", c.gap_events, lost);
	assert_msg(cfg.mode != NT_MODE_ONESHOT || c.gap_events == 0,
		   "oneshot kept something other than a gap-free prefix of each thread");
	assert_msg(cfg.mode == NT_MODE_ONESHOT || info_wraps != 0 || info_overwritten == 0,
		   "events were overwritten without a counted wrap");
	assert_msg(blocking_us == 0 || info_dropped == 0,
		   "blocking for up to %lld us, yet %" PRIu64 " events were dropped", blocking_us,
		   info_dropped);
}

int main(int argc, char **argv)
{
	nt_config_init(&cfg);
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
		else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc)
			keep = argv[++i];
		else if (strcmp(argv[i], "--blocking") == 0 && i + 1 < argc)
			cfg.blocking_timeout_us = blocking_us = strtoll(argv[++i], NULL, 10);
		else {
			fprintf(stderr, "usage: stress --mode oneshot|circular --threads N --events M "
					"[--buffer B] [--chunk C] [--slow] [--min-mb N] [--trace2] "
					"[--blocking US] [--keep PATH]\n");
			return 1;
		}
	}
	if (nthreads == 0 || nthreads > 64) {
		fprintf(stderr, "stress: --threads must be 1-64\n");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_event_is_accounted_for),
	};
	return cmocka_run_group_tests_name("stress", tests, NULL, NULL);
}
