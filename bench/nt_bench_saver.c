/*
 * nt_bench_saver.c - what compression costs and gives, in one run: for arg-less begin/end
 * pairs and the mixed iteration of issue 14 (BEGIN, INSTANT with two int64, END), the file
 * nt_finish() writes at each compression level: bytes per event on disk, the saver's MB/s
 * (uncompressed record bytes / nt_finish() time, which includes the write and the fsync),
 * a plain sequential write of as many bytes to the same file system (write + fsync), and
 * the reader's decode rate (stream order, events to a counting callback).
 *
 * Then streaming mode (the default arena, one writer thread, the mixed shape) with compression off
 * and at the default level: events lost at full rate and at a paced rate (a short spin
 * after each iteration), and the saved file's bytes per event.
 *
 * Levels are measured interleaved, round after round, and each figure is the median of the
 * rounds: the machine may be shared.
 *
 *   nt_bench_saver [--events N] [--reps N] [--json]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>
#include "nt_bench_opts.h"
#include "nt_bench_scratch.h"
#include "nt_bench_util.h"

enum { SHAPE_ZONE, SHAPE_MIXED, NSHAPES };
static const char *const shape_names[NSHAPES] = { "zone", "mixed" };
static const int levels[] = { NT_COMPRESSION_OFF, -5, -1, 1, 3 };
#define NLEVELS (int)(sizeof(levels) / sizeof(levels[0]))
#define MAX_REPS 15

typedef struct result {
	double disk_bpe[MAX_REPS], saver_mb_s[MAX_REPS], plain_mb_s[MAX_REPS], decode_mev_s[MAX_REPS];
	double bytes_in; /* uncompressed record bytes */
} result;

static void scratch(char *buf, size_t cap, const char *tag)
{
	char name[64];
	snprintf(name, sizeof(name), "%s.ntrace", tag);
	nt_bench_scratch(buf, cap, name);
}

static void emit(int shape, uint64_t events)
{
	if (shape == SHAPE_ZONE) {
		for (uint64_t i = 0; i < events / 2; i++) {
			NT_BEGIN("bench", "pair");
			NT_END("bench", "pair");
		}
		return;
	}
	for (uint64_t i = 0; i < events / 3; i++) {
		NT_BEGIN("bench", "iteration");
		NT_INSTANT("bench", "point", NT_I64("x", (int64_t)i), NT_I64("y", (int64_t)(i * 7)));
		NT_END("bench", "iteration");
	}
}

/* One recording at `level`, finished into `path`: nt_finish()'s seconds, the file's size. */
static int record(const char *path, int shape, int level, uint64_t events, double *secs,
		  uint64_t *size)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = (size_t)(events * 24 + (16u << 20)); /* oneshot: room for all */
	cfg.compression_level = level;
	if (nt_start(&cfg) != NT_OK)
		return fprintf(stderr, "nt_bench_saver: %s\n", nt_last_error()), 0;
	emit(shape, events);
	uint64_t t0 = now_ns();
	if (nt_finish(path) != NT_OK)
		return fprintf(stderr, "nt_bench_saver: %s\n", nt_last_error()), 0;
	*secs = (double)(now_ns() - t0) / 1e9;
	struct stat st;
	stat(path, &st);
	*size = (uint64_t)st.st_size;
	return 1;
}

/* A plain sequential write of `bytes` to `path` (64 KiB writes, then fsync): MB/s. */
static double plain_write(const char *path, uint64_t bytes)
{
	static char block[1 << 16];
	memset(block, 0x5a, sizeof(block));
	/* A fresh file: a link planted at the (pid-derived) name is never followed. */
	int fd = open(path, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	uint64_t t0 = now_ns();
	for (uint64_t done = 0; done < bytes;) {
		size_t n = bytes - done < sizeof(block) ? (size_t)(bytes - done) : sizeof(block);
		if (write(fd, block, n) != (ssize_t)n)
			break;
		done += n;
	}
	fsync(fd);
	double secs = (double)(now_ns() - t0) / 1e9;
	close(fd);
	unlink(path);
	return (double)bytes / 1e6 / secs;
}

/* Streaming the mixed shape at `level` (0: NT_COMPRESSION_DEFAULT), `spin` empty loop turns
 * after each iteration: the percentage of events dropped; *bpe the file's bytes per event. */
static double stream_run(const char *path, int level, int spin, uint64_t events, double *bpe)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_STREAMING;
	cfg.path = path;
	cfg.compression_level = level;
	if (nt_start(&cfg) != NT_OK)
		return fprintf(stderr, "nt_bench_saver: %s\n", nt_last_error()), -1;
	for (uint64_t i = 0; i < events / 3; i++) {
		NT_BEGIN("bench", "iteration");
		NT_INSTANT("bench", "point", NT_I64("x", (int64_t)i), NT_I64("y", (int64_t)(i * 7)));
		NT_END("bench", "iteration");
		for (volatile int k = 0; k < spin; k++) {
		}
	}
	nt_stats st;
	nt_get_stats(&st);
	if (nt_finish(NULL) != NT_OK)
		return fprintf(stderr, "nt_bench_saver: %s\n", nt_last_error()), -1;
	struct stat sb;
	stat(path, &sb);
	*bpe = (double)sb.st_blocks * 512.0 / (double)events; /* the arena's blocks are a hole */
	unlink(path);
	return 100.0 * (double)st.events_dropped / (double)events;
}

static int count(void *ctx, const nt_reader_event *e)
{
	(void)e;
	++*(uint64_t *)ctx;
	return 0;
}

static double decode_mev_s(const char *path, uint64_t *events)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	if (r == NULL)
		return fprintf(stderr, "nt_bench_saver: %s\n", err.message), 0;
	nt_reader_callbacks cb = { .on_event = count };
	*events = 0;
	uint64_t t0 = now_ns();
	nt_reader_visit(r, &cb, events, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP);
	double secs = (double)(now_ns() - t0) / 1e9;
	nt_reader_close(r);
	return (double)*events / 1e6 / secs;
}

int main(int argc, char **argv)
{
	uint64_t events = 3000000, nreps = 3;
	int json = 0;
	const nt_bench_opt opts[] = {
		NT_BENCH_NUMBER("--events", "N", &events, 6, NT_BENCH_MANY),
		NT_BENCH_NUMBER("--reps", "N", &nreps, 1, MAX_REPS),
		NT_BENCH_FLAG("--json", &json),
	};
	if (!NT_BENCH_PARSE("nt_bench_saver", argc, argv, opts))
		return 2;
	int reps = (int)nreps;
	events -= events % 6;
	static result res[NSHAPES][NLEVELS];
	char path[600], plain[600];
	scratch(path, sizeof(path), "archive");
	scratch(plain, sizeof(plain), "plain");
	for (int rep = 0; rep < reps; rep++) {
		for (int s = 0; s < NSHAPES; s++) {
			for (int l = 0; l < NLEVELS; l++) {
				result *x = &res[s][l];
				double secs;
				uint64_t size, decoded;
				if (!record(path, s, levels[l], events, &secs, &size))
					return 1;
				x->disk_bpe[rep] = (double)size / (double)events;
				x->decode_mev_s[rep] = decode_mev_s(path, &decoded);
				if (decoded != events)
					return fprintf(stderr, "nt_bench_saver: decoded %llu of %llu events\n",
						       (unsigned long long)decoded,
						       (unsigned long long)events), 1;
				if (l == 0)
					x->bytes_in = (double)size;
				x->saver_mb_s[rep] = res[s][0].bytes_in / 1e6 / secs;
				x->plain_mb_s[rep] = plain_write(plain, (uint64_t)res[s][0].bytes_in);
				unlink(path);
			}
		}
	}
	static const int spins[2] = { 0, 600 };
	static double lost[2][2][MAX_REPS], sbpe[2][2][MAX_REPS];
	for (int rep = 0; rep < reps; rep++)
		for (int p = 0; p < 2; p++)
			for (int c = 0; c < 2; c++)
				if ((lost[p][c][rep] = stream_run(path, c ? 0 : NT_COMPRESSION_OFF, spins[p],
								  p ? events / 5 : 10 * events,
								  &sbpe[p][c][rep])) < 0)
					return 1;
	if (json)
		printf("{\"events\": %llu, \"reps\": %d, \"results\": [",
		       (unsigned long long)events, reps);
	else
		printf("%-6s %-6s %12s %14s %14s %14s\n", "shape", "level", "disk B/event",
		       "saver MB/s", "plain MB/s", "decode Mev/s");
	for (int s = 0; s < NSHAPES; s++) {
		for (int l = 0; l < NLEVELS; l++) {
			result *x = &res[s][l];
			double bpe = median(x->disk_bpe, reps), mb = median(x->saver_mb_s, reps);
			double pw = median(x->plain_mb_s, reps), dec = median(x->decode_mev_s, reps);
			int level = levels[l] == NT_COMPRESSION_OFF ? 0 : levels[l];
			if (json)
				printf("%s{\"shape\": \"%s\", \"level\": %d, \"disk_bytes_per_event\": %.3f, "
				       "\"saver_mb_s\": %.1f, \"plain_write_mb_s\": %.1f, "
				       "\"decode_mev_s\": %.2f}",
				       s || l ? ", " : "", shape_names[s], level, bpe, mb, pw, dec);
			else
				printf("%-6s %-6d %12.3f %14.1f %14.1f %14.2f\n", shape_names[s], level, bpe,
				       mb, pw, dec);
		}
	}
	static const char *const pace[2] = { "full rate", "paced" };
	if (json)
		printf("], \"streaming\": [");
	else
		printf("\nstreaming, 1 writer, mixed shape: %% events lost, disk bytes per event\n");
	for (int p = 0; p < 2; p++) {
		for (int c = 0; c < 2; c++) {
			double l = median(lost[p][c], reps), b = median(sbpe[p][c], reps);
			int level = c ? NT_COMPRESSION_DEFAULT : 0;
			if (json)
				printf("%s{\"pace\": \"%s\", \"level\": %d, \"lost_pct\": %.2f, "
				       "\"disk_bytes_per_event\": %.3f}",
				       p || c ? ", " : "", pace[p], level, l, b);
			else
				printf("%-10s level %-3d lost %6.2f%%  %7.3f B/event\n", pace[p], level, l, b);
		}
	}
	if (json)
		printf("]}\n");
	return 0;
}
