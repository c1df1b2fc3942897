/* nt_bench_disk.c - bytes per event as saved, and the streaming saver beside a plain write
 * and beside oneshot (nt_bench_disk.h). */
#define _GNU_SOURCE
#include "nt_bench_disk.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>

static int fail(const char *what, const char *why)
{
	fprintf(stderr, "nt_bench_peers: %s: %s\n", what, why);
	return 0;
}

/* The archive just saved at `path`, opened (its stat in *sb) and unlinked; NULL when it is
 * missing or does not open. */
static nt_reader *open_saved(const char *path, struct stat *sb)
{
	nt_reader_error err;
	nt_reader *r = stat(path, sb) == 0 ? nt_reader_open(path, &err) : NULL;
	unlink(path);
	return r;
}

/* write(2) `bytes` in 1 MiB blocks to a new file in `dir`, then fsync (nt_finish syncs the
 * archive too). Returns MB/s, -1 on failure. */
static double plain_write(const char *dir, uint64_t bytes)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/plain.bin", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	char *block = malloc(1u << 20);
	if (fd < 0 || block == NULL) {
		if (fd >= 0)
			close(fd);
		free(block);
		return -1;
	}
	memset(block, 0x5a, 1u << 20);
	uint64_t t0 = now_ns(), left = bytes;
	int ok = 1;
	while (ok && left > 0) {
		size_t n = left < (1u << 20) ? (size_t)left : (1u << 20);
		ok = write(fd, block, n) == (ssize_t)n;
		left -= n;
	}
	ok = ok && fsync(fd) == 0;
	ok = close(fd) == 0 && ok;
	uint64_t t1 = now_ns();
	unlink(path);
	free(block);
	return ok ? (double)bytes / 1e6 / ((double)(t1 - t0) / 1e9) : -1;
}

/* One writer thread makes the mixed shape as fast as it can for `ms` into a streaming
 * session with the default arena; the saver thread appends to the archive meanwhile. */
static int streaming(const char *dir, int ms, nt_bench_disk *o)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/stream.ntrace", dir);
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_STREAMING;
	cfg.path = path; /* the default arena: what a user gets (nt_default_buffer_bytes) */
	if (nt_start(&cfg) != NT_OK)
		return fail("nt_start (streaming)", nt_last_error());
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)ms * 1000000u, iterations = 0;
	while (now_ns() < end) {
		nt_mixed_loop(1024);
		iterations += 1024;
	}
	nt_stats st;
	nt_get_stats(&st);
	if (nt_finish(NULL) != NT_OK)
		return fail("nt_finish (streaming)", nt_last_error());
	uint64_t t1 = now_ns();
	struct stat sb;
	nt_reader *r = open_saved(path, &sb);
	if (r == NULL)
		return fail(path, "the streamed archive is missing or did not open");
	uint64_t records = 0; /* the chunks' bytes uncompressed: what the saver took in */
	nt_reader_get_compression(r, NULL, &records);
	nt_reader_close(r);
	o->stream_events = iterations * 3;
	o->stream_dropped = st.events_dropped;
	o->stream_lost_pct = 100.0 * (double)st.events_dropped / (double)o->stream_events;
	o->stream_bytes = (uint64_t)sb.st_size;
	o->saver_mb_s = (double)records / 1e6 / ((double)(t1 - t0) / 1e9);
	o->plain_write_mb_s = plain_write(dir, records);
	return o->plain_write_mb_s > 0 || fail(dir, "the plain write failed");
}

/* One writer thread making `events` events of `shape` at full rate: oneshot (an arena that
 * holds them all, saved by nt_finish) or streaming (the default arena of a file-backed
 * session, saved by the saver thread meanwhile), each at the session's default compression.
 * The archive is read back for the events it holds and the chunks it compresses. */
typedef struct shape_run {
	double ns;                 /* the writer's ns per event (the loop, nothing after) */
	uint64_t made, dropped;    /* events made, and dropped as the writer counted them */
	uint64_t saved;            /* events the archive holds */
	uint64_t disk, apparent;   /* bytes allocated on disk (st_blocks), and st_size */
	uint64_t chunks, zchunks;  /* chunk pieces in it, and how many are compressed */
	uint64_t plain;            /* its chunks' bytes uncompressed (headers included) */
	double other_cpu;          /* CPU time of the other threads (the saver) ÷ the loop's */
} shape_run;

static uint64_t cpu_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int run_shape(const char *dir, nt_bench_shape shape, int mode, uint64_t events,
		     shape_run *r)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s-%d.ntrace", dir, nt_bench_shape_names[shape], mode);
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	if (mode == NT_MODE_STREAMING)
		cfg.path = path; /* the default arena: what a user gets */
	else
		cfg.buffer_size = (size_t)(events * 48 + (16u << 20)); /* str: 40 B */
	if (nt_start(&cfg) != NT_OK)
		return fail("nt_start", nt_last_error());
	uint64_t iterations = events / nt_bench_shape_events[shape];
	uint64_t p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID), t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	r->ns = nt_shape_loops[shape](iterations);
	uint64_t p1 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID), t1 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	r->other_cpu = (double)((p1 - p0) - (t1 - t0)) / (r->ns * (double)iterations *
							  nt_bench_shape_events[shape]);
	nt_stats st;
	nt_get_stats(&st);
	if (nt_finish(mode == NT_MODE_STREAMING ? NULL : path) != NT_OK)
		return fail("nt_finish", nt_last_error());
	r->made = iterations * nt_bench_shape_events[shape];
	r->dropped = st.events_dropped;
	struct stat sb;
	nt_reader *rd = open_saved(path, &sb);
	if (rd == NULL)
		return fail(path, "the archive just saved did not open");
	nt_reader_summary sum;
	nt_reader_get_summary(rd, &sum);
	nt_reader_get_compression(rd, &r->zchunks, &r->plain);
	r->chunks = sum.chunks;
	r->saved = nt_reader_info(rd)->events_written;
	nt_reader_close(rd);
	r->disk = (uint64_t)sb.st_blocks * 512u;
	r->apparent = (uint64_t)sb.st_size;
	return r->saved > 0 || fail(path, "no event in the archive");
}

/* `events` events of `shape` saved by nt_finish() (its default format), read back. */
static int archive_bytes(const char *dir, nt_bench_shape shape, uint64_t events, nt_bench_disk *o)
{
	shape_run r;
	if (!run_shape(dir, shape, NT_MODE_ONESHOT, events, &r))
		return 0;
	o->archive_events[shape] = r.saved;
	o->record_bpe[shape] =
		(double)(r.plain - r.chunks * sizeof(nt_chunk_header)) / (double)r.saved;
	o->file_bpe[shape] = (double)r.apparent / (double)r.saved;
	return 1;
}

/* `reps` rounds, each a oneshot then a streaming run of the same shape and events, so the
 * two meet the same machine; figures are medians of the rounds, lost the worst round. */
static int compare_shape(const char *dir, nt_bench_shape shape, uint64_t events, int reps,
			 nt_bench_stream_shape *o)
{
	double ns_ratio[NT_BENCH_MAX_REPS], bytes_ratio[NT_BENCH_MAX_REPS];
	double one_bpe[NT_BENCH_MAX_REPS], str_bpe[NT_BENCH_MAX_REPS];
	double one_ns[NT_BENCH_MAX_REPS], str_ns[NT_BENCH_MAX_REPS], cpu[NT_BENCH_MAX_REPS];
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < reps; i++) {
		shape_run one, str;
		if (!run_shape(dir, shape, NT_MODE_ONESHOT, events, &one) ||
		    !run_shape(dir, shape, NT_MODE_STREAMING, events, &str))
			return 0;
		one_ns[i] = one.ns;
		str_ns[i] = str.ns;
		cpu[i] = str.other_cpu;
		ns_ratio[i] = str.ns / one.ns;
		one_bpe[i] = (double)one.disk / (double)one.saved;
		str_bpe[i] = (double)str.disk / (double)str.saved;
		bytes_ratio[i] = str_bpe[i] / one_bpe[i];
		double lost = 100.0 * (double)(str.made - str.saved) / (double)str.made;
		if (lost > o->lost_pct)
			o->lost_pct = lost;
		o->dropped += str.dropped;
		o->apparent_bpe = (double)str.apparent / (double)str.saved;
		o->chunks = str.chunks;
		o->zchunks = str.zchunks;
	}
	o->events = events;
	o->oneshot_ns = median(one_ns, reps);
	o->stream_ns = median(str_ns, reps);
	o->ns_ratio = median(ns_ratio, reps);
	o->saver_cpu = median(cpu, reps);
	o->oneshot_bpe = median(one_bpe, reps);
	o->stream_bpe = median(str_bpe, reps);
	o->bytes_ratio = median(bytes_ratio, reps);
	return 1;
}

int nt_bench_measure_disk(nt_bench_disk *out, uint64_t events, int stream_ms,
			  uint64_t stream_events, int reps)
{
	char dir[1024];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/nt-bench-peers-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL)
		return fail(dir, "mkdtemp failed");
	memset(out, 0, sizeof(*out));
	int ok = 1;
	for (int s = 0; ok && s < SHAPE_COUNT; s++)
		ok = archive_bytes(dir, (nt_bench_shape)s, events, out);
	ok = ok && streaming(dir, stream_ms, out);
	static const nt_bench_shape compared[2] = { SHAPE_ZONE, SHAPE_MIXED };
	for (int i = 0; ok && i < 2; i++)
		ok = compare_shape(dir, compared[i], stream_events, reps, &out->vs[i]);
	rmdir(dir);
	return ok;
}
