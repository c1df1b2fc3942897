/*
 * nt_bench_reader - how fast the reader side goes, and what memory it takes:
 *
 *   decode     nt_reader_visit to a counting callback, stream order and time order (M ev/s):
 *              the compressed archive (the default: chunks decompressed ahead on a helper
 *              thread where that pays), the same read serially (ahead off), and the same
 *              events recorded uncompressed; interleaved, so drift hits all alike
 *   render     trace-dump's renderings into /dev/null: text, Chrome JSON, Perfetto's protobuf,
 *              stats, and Git's NORMAL, PERF and EVENT for a Trace2 archive (M ev/s); bytes
 *              per event of the Chrome JSON and Perfetto renderings
 *   import     trace-import of the EVENT rendering back into an archive (MB/s of JSON)
 *   memory     the reader's private (anonymous) memory after opening and visiting an archive
 *              of 1 M and of 10 M events, in KiB over what the process had before
 *
 * The archives are recorded here first, the mixed shape of issue 14 (per iteration BEGIN,
 * an INSTANT with two int64, END), and a Trace2 command's regions and data. Each figure is
 * the median of --reps runs.
 *
 *   nt_bench_reader [--events N] [--reps N] [--json] [--decode-only]
 *
 * --decode-only measures decode alone (and prints its lines, or its keys with --json).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>
#include <nanotrace/nanotrace_trace2.h>
#include "nt_bench_opts.h"
#include "nt_bench_scratch.h"
#include "nt_bench_util.h"

typedef struct reader_results {
	double stream_mev_s, time_mev_s, text_mev_s, chrome_mev_s, stats_mev_s, perfetto_mev_s;
	double chrome_bytes, perfetto_bytes; /* per event of the mixed shape's renderings */
	double serial_mev_s[2], plain_mev_s[2]; /* [stream, time]: ahead off; uncompressed */
	/* Events per CPU second of the visiting thread (a helper's not counted): [stream,
	 * time] of the default, the serial and the uncompressed visit. On a busy machine the
	 * wall-clock rates measure the machine; these measure the work on the caller's thread. */
	double own_cpu_mev_s[3][2];
	double t2_mev_s[3]; /* NORMAL, PERF, EVENT */
	double import_mb_s;
	long anon_kb_1m, anon_kb_10m;
	uint64_t events, t2_events;
} reader_results;

static void scratch(char *buf, size_t cap, const char *tag)
{
	char name[64];
	snprintf(name, sizeof(name), "%s.ntrace", tag);
	nt_bench_scratch(buf, cap, name);
}

/* Records `iterations` of the mixed shape (3 events each) into `path`, compressed at
 * `level` (nt_config.compression_level: 0 the default, NT_COMPRESSION_OFF none). */
static int record_mixed(const char *path, uint64_t iterations, int level)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.compression_level = level;
	cfg.buffer_size = (size_t)(iterations * 3 * 24 + (16u << 20)); /* oneshot: room for all */
	if (nt_start(&cfg) != NT_OK)
		return fprintf(stderr, "nt_bench_reader: %s\n", nt_last_error()), 0;
	for (uint64_t i = 0; i < iterations; i++) {
		NT_BEGIN("bench", "iteration");
		NT_INSTANT("bench", "point", NT_I64("x", (int64_t)i), NT_I64("y", (int64_t)(i * 7)));
		NT_END("bench", "iteration");
	}
	if (nt_finish(path) != NT_OK)
		return fprintf(stderr, "nt_bench_reader: %s\n", nt_last_error()), 0;
	return 1;
}

/* A Trace2 command: 6 messages per iteration. */
static int record_trace2(const char *path, int iterations)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = 64u << 20;
	if (nt_start(&cfg) != NT_OK)
		return fprintf(stderr, "nt_bench_reader: %s\n", nt_last_error()), 0;
	NT_T2_INITIALIZE("bench"); /* joins the running session */
	const char *argv[] = { "/usr/bin/git", "status", "--porcelain", NULL };
	NT_T2_CMD_START(argv);
	NT_T2_CMD_NAME("status");
	for (int i = 0; i < iterations; i++) {
		NT_T2_REGION_ENTER("index", "do_read_index", -1);
		NT_T2_REGION_ENTER("cache_tree", "read", -1);
		NT_T2_REGION_LEAVE("cache_tree", "read", -1);
		NT_T2_DATA_INTMAX("index", -1, "read/cache_nr", 3003 + i);
		NT_T2_REGION_LEAVE("index", "do_read_index", -1);
		NT_T2_DATA_INTMAX("status", -1, "count/changed", i);
	}
	NT_T2_CMD_EXIT(0);
	if (nt_finish(path) != NT_OK)
		return fprintf(stderr, "nt_bench_reader: %s\n", nt_last_error()), 0;
	return 1;
}

static int count_event(void *ctx, const nt_reader_event *ev)
{
	(void)ev;
	++*(uint64_t *)ctx;
	return 0;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Seconds for one visit of the archive at `path` (opened each time); *events counted;
 * *own_cpu (may be NULL) the CPU seconds of the calling thread (not the helper's).
 * ahead: nt_reader_set_decompress_ahead()'s argument. */
static double time_visit_cpu(const char *path, nt_order order, uint64_t *events, int ahead,
			     double *own_cpu)
{
	uint64_t t0 = now_ns(), c0 = thread_cpu_ns();
	nt_reader *r = nt_reader_open(path, NULL);
	if (r == NULL)
		return -1;
	nt_reader_set_decompress_ahead(r, ahead);
	*events = 0;
	nt_reader_callbacks cb = { .on_event = count_event };
	nt_reader_visit(r, &cb, events, order, NT_ON_CORRUPT_SKIP);
	nt_reader_close(r);
	if (own_cpu != NULL)
		*own_cpu = (double)(thread_cpu_ns() - c0) / 1e9;
	return (double)(now_ns() - t0) / 1e9;
}

static double time_visit(const char *path, nt_order order, uint64_t *events, int ahead)
{
	return time_visit_cpu(path, order, events, ahead, NULL);
}

enum { RENDER_TEXT, RENDER_CHROME, RENDER_STATS, RENDER_NORMAL, RENDER_PERF, RENDER_EVENT,
       RENDER_PERFETTO };

/* Seconds for one rendering into `out`. */
static double time_render(const char *path, int what, FILE *out)
{
	uint64_t t0 = now_ns();
	nt_reader *r = nt_reader_open(path, NULL);
	if (r == NULL)
		return -1;
	nt_render_options opt;
	nt_render_options_init(&opt);
	nt_trace2_options t2;
	nt_trace2_options_init(&t2);
	int rc;
	if (what == RENDER_TEXT)
		rc = nt_render_text(r, out, &opt);
	else if (what == RENDER_CHROME)
		rc = nt_render_chrome(r, out, &opt);
	else if (what == RENDER_STATS)
		rc = nt_render_stats(r, out, &opt);
	else if (what == RENDER_PERFETTO)
		rc = nt_render_perfetto(r, out, &opt);
	else {
		t2.format = what == RENDER_NORMAL ? NT_TRACE2_NORMAL
			    : what == RENDER_PERF ? NT_TRACE2_PERF : NT_TRACE2_EVENT;
		rc = nt_render_trace2(&r, 1, out, &t2);
	}
	fflush(out);
	nt_reader_close(r);
	return rc < 0 ? -1 : (double)(now_ns() - t0) / 1e9;
}

/* A sink that counts the bytes written to it. */
static ssize_t count_write(void *cookie, const char *buf, size_t n)
{
	(void)buf;
	*(uint64_t *)cookie += n;
	return (ssize_t)n;
}

/* Bytes per event of one rendering of `path`. */
static double render_bytes(const char *path, int what, uint64_t events)
{
	uint64_t bytes = 0;
	cookie_io_functions_t io = { .write = count_write };
	FILE *f = fopencookie(&bytes, "w", io);
	if (f == NULL)
		return -1;
	double t = time_render(path, what, f);
	fclose(f);
	return t < 0 || events == 0 ? -1 : (double)bytes / (double)events;
}

static double median_of_runs(double (*one)(const char *, int, FILE *), const char *path, int what,
			     FILE *out, int reps)
{
	double v[101];
	for (int i = 0; i < reps; i++)
		if ((v[i] = one(path, what, out)) < 0)
			return -1;
	return median(v, reps);
}

typedef struct peak_ctx {
	uint64_t n;
	long peak;
} peak_ctx;

static int sample_peak(void *ctx, const nt_reader_event *ev)
{
	(void)ev;
	peak_ctx *p = ctx;
	if (++p->n % (1u << 18) == 0) {
		long kb = nt_bench_anon_kb();
		if (kb > p->peak)
			p->peak = kb;
	}
	return 0;
}

/* --child-memory PATH: in a fresh process (exec'd: no heap of earlier measurements to
 * reuse), the reader's anonymous memory at its peak during open + time-order visit, over the
 * process's before; printed in KiB. */
static int child_memory(const char *path)
{
	long before = nt_bench_anon_kb();
	nt_reader *r = nt_reader_open(path, NULL);
	if (r == NULL)
		return 1;
	peak_ctx p = { 0, nt_bench_anon_kb() };
	nt_reader_callbacks cb = { .on_event = sample_peak };
	nt_reader_visit(r, &cb, &p, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP);
	long kb = nt_bench_anon_kb();
	nt_reader_close(r);
	printf("%ld\n", (kb > p.peak ? kb : p.peak) - before);
	return 0;
}

static long reader_anon_kb(const char *path)
{
	char *argv[] = { "/proc/self/exe", "--child-memory", (char *)path, NULL };
	return nt_bench_run_number(argv);
}

/* trace-import of the archive's EVENT rendering: MB/s of JSON. */
static double import_mb_s(const char *t2_path, int reps)
{
	char *json = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&json, &len);
	if (mem == NULL || time_render(t2_path, RENDER_EVENT, mem) < 0) {
		if (mem)
			fclose(mem);
		free(json);
		return -1;
	}
	fclose(mem);
	double v[101];
	for (int i = 0; i < reps; i++) {
		void *archive = NULL;
		size_t size = 0;
		nt_trace2_import_error err;
		uint64_t t0 = now_ns();
		int rc = nt_trace2_import(json, len, &archive, &size, &err);
		v[i] = (double)len / 1e6 / ((double)(now_ns() - t0) / 1e9);
		free(archive);
		if (rc != 0) {
			free(json);
			return -1;
		}
	}
	free(json);
	return median(v, reps);
}

static double mev_s(uint64_t events, double secs)
{
	return secs > 0 ? (double)events / secs / 1e6 : -1;
}

/* Decode in both orders: the compressed archive as visited by default and serially, and
 * the uncompressed one, interleaved (drift hits all six alike); medians of `reps`. */
static void measure_decode(reader_results *b, const char *mixed, const char *plain, int reps)
{
	double v[6][101], own[6][101];
	for (int i = 0; i < reps; i++)
		for (int k = 0; k < 6; k++) {
			nt_order order = k % 2 ? NT_ORDER_TIME : NT_ORDER_STREAM;
			v[k][i] = time_visit_cpu(k < 4 ? mixed : plain, order, &b->events,
						 k / 2 == 1 ? NT_READER_AHEAD_OFF : NT_READER_AHEAD_AUTO,
						 &own[k][i]);
		}
	b->stream_mev_s = mev_s(b->events, median(v[0], reps));
	b->time_mev_s = mev_s(b->events, median(v[1], reps));
	for (int o = 0; o < 2; o++) {
		b->serial_mev_s[o] = mev_s(b->events, median(v[2 + o], reps));
		b->plain_mev_s[o] = mev_s(b->events, median(v[4 + o], reps));
		for (int w = 0; w < 3; w++)
			b->own_cpu_mev_s[w][o] = mev_s(b->events, median(own[2 * w + o], reps));
	}
}

static int measure(reader_results *b, uint64_t iterations, int reps, int decode_only)
{
	char mixed[600], plain[600], mixed10[600], t2[600];
	scratch(mixed, sizeof(mixed), "mixed");
	scratch(plain, sizeof(plain), "plain");
	scratch(mixed10, sizeof(mixed10), "mixed10m");
	scratch(t2, sizeof(t2), "t2");
	FILE *devnull = fopen("/dev/null", "w");
	int ok = devnull && record_mixed(mixed, iterations, 0) &&
		 record_mixed(plain, iterations, NT_COMPRESSION_OFF) && record_trace2(t2, 50000);
	if (ok) {
		measure_decode(b, mixed, plain, reps);
	}
	if (ok && !decode_only) {
		b->text_mev_s = mev_s(b->events, median_of_runs(time_render, mixed, RENDER_TEXT, devnull, reps));
		b->chrome_mev_s = mev_s(b->events, median_of_runs(time_render, mixed, RENDER_CHROME, devnull, reps));
		b->stats_mev_s = mev_s(b->events, median_of_runs(time_render, mixed, RENDER_STATS, devnull, reps));
		b->perfetto_mev_s = mev_s(b->events, median_of_runs(time_render, mixed, RENDER_PERFETTO, devnull, reps));
		b->chrome_bytes = render_bytes(mixed, RENDER_CHROME, b->events);
		b->perfetto_bytes = render_bytes(mixed, RENDER_PERFETTO, b->events);
		time_visit(t2, NT_ORDER_TIME, &b->t2_events, NT_READER_AHEAD_AUTO);
		for (int f = 0; f < 3; f++)
			b->t2_mev_s[f] = mev_s(b->t2_events, median_of_runs(time_render, t2, RENDER_NORMAL + f, devnull, reps));
		b->import_mb_s = import_mb_s(t2, reps);
		/* Memory: 1 M and 10 M events (the mixed shape: a third of the iterations). */
		ok = record_mixed(mixed10, 1000000 / 3, 0) && (b->anon_kb_1m = reader_anon_kb(mixed10)) >= 0 &&
		     record_mixed(mixed10, 10000000 / 3, 0) && (b->anon_kb_10m = reader_anon_kb(mixed10)) >= 0;
	}
	if (devnull)
		fclose(devnull);
	unlink(mixed);
	unlink(plain);
	unlink(mixed10);
	unlink(t2);
	return ok;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--child-memory") == 0)
		return child_memory(argv[2]);
	uint64_t events = 3000000, nreps = 5;
	int json = 0, decode_only = 0;
	const nt_bench_opt opts[] = {
		NT_BENCH_NUMBER("--events", "N", &events, 3, NT_BENCH_MANY),
		NT_BENCH_NUMBER("--reps", "N", &nreps, 1, 101),
		NT_BENCH_FLAG("--json", &json),
		NT_BENCH_FLAG("--decode-only", &decode_only),
	};
	if (!NT_BENCH_PARSE("nt_bench_reader", argc, argv, opts))
		return 2;
	int reps = (int)nreps;
	reader_results b;
	memset(&b, 0, sizeof(b));
	if (!measure(&b, events / 3, reps, decode_only))
		return 1;
	printf("decode, %" PRIu64 " events   stream %.1f M ev/s   time %.1f M ev/s\n", b.events,
	       b.stream_mev_s, b.time_mev_s);
	printf("  compressed, serial   stream %.1f M ev/s   time %.1f M ev/s\n", b.serial_mev_s[0],
	       b.serial_mev_s[1]);
	printf("  uncompressed         stream %.1f M ev/s   time %.1f M ev/s\n", b.plain_mev_s[0],
	       b.plain_mev_s[1]);
	printf("  per CPU second of the visiting thread (a helper's not counted):\n"
	       "    compressed         stream %.1f M ev/s   time %.1f M ev/s\n"
	       "    compressed, serial stream %.1f M ev/s   time %.1f M ev/s\n"
	       "    uncompressed       stream %.1f M ev/s   time %.1f M ev/s\n",
	       b.own_cpu_mev_s[0][0], b.own_cpu_mev_s[0][1], b.own_cpu_mev_s[1][0],
	       b.own_cpu_mev_s[1][1], b.own_cpu_mev_s[2][0], b.own_cpu_mev_s[2][1]);
	if (decode_only) {
		if (json)
			printf("{\"reader_mev_s_stream\": %.2f, \"reader_mev_s_time\": %.2f, "
			       "\"reader_mev_s_stream_serial\": %.2f, \"reader_mev_s_time_serial\": %.2f, "
			       "\"reader_mev_s_stream_uncompressed\": %.2f, "
			       "\"reader_mev_s_time_uncompressed\": %.2f, "
			       "\"reader_mev_s_stream_own_cpu\": %.2f, \"reader_mev_s_time_own_cpu\": %.2f}\n",
			       b.stream_mev_s, b.time_mev_s, b.serial_mev_s[0], b.serial_mev_s[1],
			       b.plain_mev_s[0], b.plain_mev_s[1], b.own_cpu_mev_s[0][0], b.own_cpu_mev_s[0][1]);
		return 0;
	}
	printf("render                 text %.2f   chrome %.2f   perfetto %.2f   stats %.1f M ev/s\n",
	       b.text_mev_s, b.chrome_mev_s, b.perfetto_mev_s, b.stats_mev_s);
	printf("bytes per event        chrome %.1f   perfetto %.1f\n", b.chrome_bytes,
	       b.perfetto_bytes);
	printf("Trace2, %" PRIu64 " messages   normal %.2f   perf %.2f   event %.2f M ev/s\n",
	       b.t2_events, b.t2_mev_s[0], b.t2_mev_s[1], b.t2_mev_s[2]);
	printf("trace-import           %.1f MB/s of EVENT JSON\n", b.import_mb_s);
	printf("reader private memory  %ld KiB at 1 M events, %ld KiB at 10 M\n", b.anon_kb_1m,
	       b.anon_kb_10m);
	if (json)
		printf("{\"reader_mev_s_stream\": %.2f, \"reader_mev_s_time\": %.2f, "
		       "\"reader_mev_s_stream_serial\": %.2f, \"reader_mev_s_time_serial\": %.2f, "
		       "\"reader_mev_s_stream_uncompressed\": %.2f, "
		       "\"reader_mev_s_time_uncompressed\": %.2f, "
		       "\"reader_mev_s_stream_own_cpu\": %.2f, \"reader_mev_s_time_own_cpu\": %.2f, "
		       "\"render_text_mev_s\": %.3f, \"render_chrome_mev_s\": %.3f, "
		       "\"render_perfetto_mev_s\": %.3f, \"chrome_bytes_per_event_mixed\": %.2f, "
		       "\"perfetto_bytes_per_event_mixed\": %.2f, "
		       "\"render_stats_mev_s\": %.2f, \"render_trace2_normal_mev_s\": %.3f, "
		       "\"render_trace2_perf_mev_s\": %.3f, \"render_trace2_event_mev_s\": %.3f, "
		       "\"import_mb_s\": %.1f, \"reader_anon_kb_1m\": %ld, "
		       "\"reader_anon_kb_10m\": %ld}\n",
		       b.stream_mev_s, b.time_mev_s, b.serial_mev_s[0], b.serial_mev_s[1],
		       b.plain_mev_s[0], b.plain_mev_s[1], b.own_cpu_mev_s[0][0], b.own_cpu_mev_s[0][1],
		       b.text_mev_s, b.chrome_mev_s, b.perfetto_mev_s, b.chrome_bytes,
		       b.perfetto_bytes, b.stats_mev_s,
		       b.t2_mev_s[0], b.t2_mev_s[1], b.t2_mev_s[2], b.import_mb_s, b.anon_kb_1m,
		       b.anon_kb_10m);
	return 0;
}
