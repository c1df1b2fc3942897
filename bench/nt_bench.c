/*
 * nt_bench - what an event costs, as a ratio to the floor measured in the same run.
 *
 *   floor     one clock read (the writer's own clock) + one 16-byte store into a thread-local
 *             ring: the least any tracer that timestamps events must do.
 *   1t, 2t    NT_BEGIN + NT_END pairs (no arguments) on 1 and on 2 threads, circular mode, so
 *             chunk claims and wraps are included; ns per event = thread time / events.
 *   bytes     bytes per argument-less event in the archive: event records alone, with the
 *             chunk headers spread over their events, and the whole file.
 *   disabled  an event macro while tracing is off (one load and a branch), and while
 *             recording with its category disabled (the call site's cached flag).
 *   streaming the fastest paced event rate that a 4 MiB streaming session saves to the
 *             archive with no drop, as MB/s of archive written.
 *   peers     the same events written the common ways: a JSON line through buffered fwrite,
 *             and Git Trace2's one write(2) per event; reported as nanotrace's speed-up.
 *
 * This machine is shared and noisy, so the cases are interleaved and repeated and the
 * medians are reported; ratios are taken between medians of the same run. Threads are pinned
 * to CPUs 0 and 1 when there are two.
 *
 *   nt_bench [--json] [--reps N] [--pairs N]
 * With --json the last line is one JSON object.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_trace2.h>
#include <nanotrace/nanotrace_reader.h>
#include "nt_bench_opts.h"
#include "nt_bench_scratch.h"
#include "nt_bench_util.h"
#include "nt_bench_floor.h"

/* ---- the measured loops (the floor: nt_bench_floor.h) ---------------------------------- */

/* Trace2 regions: returns ns per message (enter + leave = two). */
static double t2_pairs_loop(uint64_t pairs)
{
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < pairs; i++) {
		NT_T2_REGION_ENTER("bench", "pair", -1);
		NT_T2_REGION_LEAVE("bench", "pair", -1);
	}
	return (double)(now_ns() - t0) / (double)(2 * pairs);
}

static int start_session(int mode, size_t buffer);

/* A scratch file of this run, <tag><ext> in the run's private directory. */
static void tmp_path(char *buf, size_t cap, const char *tag, const char *ext)
{
	char name[64];
	snprintf(name, sizeof(name), "%s%s", tag, ext);
	nt_bench_scratch(buf, cap, name);
}

/* Finish the session into a temporary archive and open it (the file is removed at once:
 * the reader keeps its mapping). NULL after printing why. */
static nt_reader *finish_and_open(const char *tag)
{
	char path[256];
	tmp_path(path, sizeof(path), tag, ".ntrace");
	if (nt_finish(path) != NT_OK) {
		fprintf(stderr, "nt_bench: %s\n", nt_last_error());
		return NULL;
	}
	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	unlink(path);
	if (r == NULL)
		fprintf(stderr, "nt_bench: %s\n", err.message);
	return r;
}

/* Counts what a FILE writes. */
static ssize_t count_write(void *cookie, const char *buf, size_t n)
{
	(void)buf;
	*(uint64_t *)cookie += n;
	return (ssize_t)n;
}

/* A Git-status-like Trace2 session (the corpus's mix: nested regions with a data message
 * inside), recorded to an archive and rendered as EVENT JSON: bytes of JSON per byte of
 * archive. Every message is rendered (nesting 100), so both sides hold the same messages. */
static int trace2_compression(double *ratio, uint64_t *json_bytes, uint64_t *archive_bytes)
{
	if (!start_session(NT_MODE_ONESHOT, 16u << 20))
		return 0;
	const char *argv[] = { "/usr/bin/git", "status", "--porcelain", NULL };
	NT_T2_CMD_START(argv);
	NT_T2_CMD_NAME("status");
	NT_T2_DEF_REPO(1, "/srv/t2/work");
	for (int i = 0; i < 20000; i++) {
		NT_T2_REGION_ENTER("index", "do_read_index", 1);
		NT_T2_REGION_ENTER("cache_tree", "read", -1);
		NT_T2_REGION_LEAVE("cache_tree", "read", -1);
		NT_T2_DATA_INTMAX("index", 1, "read/cache_nr", 3003 + i);
		NT_T2_REGION_LEAVE("index", "do_read_index", 1);
		NT_T2_REGION_ENTER("status", "worktrees", 1);
		NT_T2_REGION_LEAVE("status", "worktrees", 1);
	}
	NT_T2_CMD_EXIT(0);
	nt_reader *r = finish_and_open("t2");
	if (r == NULL)
		return 0;
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	*archive_bytes = sum.file_bytes;
	*json_bytes = 0;
	cookie_io_functions_t io = { .write = count_write };
	FILE *out = fopencookie(json_bytes, "w", io);
	nt_trace2_options opt;
	nt_trace2_options_init(&opt);
	opt.format = NT_TRACE2_EVENT;
	opt.brief = 0;
	opt.nesting = 100;
	int rc = out ? nt_render_trace2(&r, 1, out, &opt) : -1;
	if (out)
		fclose(out);
	nt_reader_close(r);
	*ratio = (double)*json_bytes / (double)*archive_bytes;
	return rc == 0;
}

/* Returns ns per call site; the category "bench-off" is never enabled. */
static double off_loop(uint64_t n)
{
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		NT_INSTANT("bench-off", "x", NT_U64("i", i));
	return (double)(now_ns() - t0) / (double)n;
}

/* ---- peers: what tracing costs without nanotrace, in the same run ----------------------- */

/* A JSON line per event, formatted with snprintf and appended with buffered fwrite: the
 * usual hand-made logger. Returns ns per event. */
static double peer_json_fwrite(const char *path, uint64_t n)
{
	/* A fresh file: a link planted at the (pid-derived) name is never followed. */
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL) {
		if (fd >= 0)
			close(fd), unlink(path);
		return -1;
	}
	static char vbuf[1 << 16];
	setvbuf(f, vbuf, _IOFBF, sizeof(vbuf));
	char line[256];
	const int tid = (int)gettid(); /* once: a fair peer caches it too */
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		int len = snprintf(line, sizeof(line),
				   "{\"ts\":%" PRIu64 ",\"tid\":%d,\"name\":\"pair\",\"ph\":\"B\",\"i\":%" PRIu64 "}\n",
				   now_ns(), tid, i);
		fwrite(line, 1, (size_t)len, f);
	}
	fflush(f);
	double ns = (double)(now_ns() - t0) / (double)n;
	fclose(f);
	unlink(path);
	return ns;
}

/* Git Trace2's way: one formatted line and one write(2) per event, O_APPEND. */
static double peer_write_per_event(const char *path, uint64_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	char line[256];
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		int len = snprintf(line, sizeof(line),
				   "12:00:00.000000 bench.c:100 region_enter pair %" PRIu64 "\n", i);
		if (write(fd, line, (size_t)len) != len)
			break;
	}
	double ns = (double)(now_ns() - t0) / (double)n;
	close(fd);
	unlink(path);
	return ns;
}

typedef enum { CASE_FLOOR, CASE_PAIRS } bench_case;

typedef struct thread_arg {
	bench_case what;
	uint64_t n;
	int cpu;
	double result;
	pthread_barrier_t *start;
} thread_arg;

static void pin(int cpu)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *thread_main(void *p)
{
	thread_arg *a = p;
	pin(a->cpu);
	/* warm up: registers the thread and call site, faults in the TLS ring */
	if (a->what == CASE_FLOOR)
		floor_loop(a->n / 10);
	else
		pairs_loop(a->n / 10);
	pthread_barrier_wait(a->start);
	a->result = a->what == CASE_FLOOR ? floor_loop(a->n) : pairs_loop(a->n);
	return NULL;
}

/* Mean over the threads of each thread's own ns per operation. */
static double run_threads(bench_case what, int nthreads, uint64_t n)
{
	pthread_t th[2];
	thread_arg args[2];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	for (int i = 0; i < nthreads; i++) {
		args[i] = (thread_arg){ what, n, i, 0, &start };
		pthread_create(&th[i], NULL, thread_main, &args[i]);
	}
	double sum = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		sum += args[i].result;
	}
	pthread_barrier_destroy(&start);
	return sum / nthreads;
}

static int start_session(int mode, size_t buffer)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	cfg.buffer_size = buffer;
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nt_bench: %s\n", nt_last_error());
		return 0;
	}
	return 1;
}

/* One paced streaming run: `rate` events per second (0: as fast as possible) from one thread
 * for `ms` milliseconds. Returns MB/s of records saved (uncompressed), and *dropped. */
static double streaming_run(const char *path, double rate, int ms, uint64_t *dropped)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_STREAMING;
	cfg.buffer_size = 4u << 20;
	cfg.categories = "bench";
	cfg.path = path;
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nt_bench: %s\n", nt_last_error());
		return -1;
	}
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)ms * 1000000u, n = 0;
	for (uint64_t now = t0; now < end; now = now_ns()) {
		uint64_t due = rate > 0 ? (uint64_t)((double)(now - t0) * rate / 1e9) : n + 1024;
		for (; n < due; n++)
			NT_INSTANT("bench", "stream", NT_U64("i", n));
	}
	uint64_t t1 = now_ns();
	nt_stats st;
	nt_get_stats(&st);
	*dropped = st.events_dropped;
	if (nt_finish(NULL) != NT_OK) {
		fprintf(stderr, "nt_bench: %s\n", nt_last_error());
		return -1;
	}
	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	unlink(path);
	if (r == NULL)
		return -1;
	uint64_t record_bytes = 0; /* the chunks uncompressed: what the saver kept up with */
	nt_reader_get_compression(r, NULL, &record_bytes);
	nt_reader_close(r);
	return (double)record_bytes / 1e6 / ((double)(t1 - t0) / 1e9);
}

/* The highest paced rate with no drop: start from what an unpaced writer got saved, then
 * step down by 15% until a run drops nothing. */
static double streaming_mb_s(double *unpaced_mb_s)
{
	char path[256];
	tmp_path(path, sizeof(path), "s", ".ntrace");
	uint64_t dropped;
	*unpaced_mb_s = streaming_run(path, 0, 300, &dropped);
	if (*unpaced_mb_s <= 0)
		return -1;
	if (dropped == 0)
		return *unpaced_mb_s; /* the saver kept up with the writer at full speed */
	double rate = *unpaced_mb_s * 1e6 / 16.0; /* 16-byte events */
	for (int i = 0; i < 12; i++) {
		double mb = streaming_run(path, rate, 400, &dropped);
		if (mb > 0 && dropped == 0)
			return mb;
		rate *= 0.85;
	}
	return 0;
}

/* Bytes per argument-less event as stored: record 1 M begin/end events and read them back. */
static int measure_bytes(double *record_bpe, double *chunk_bpe, double *file_bpe)
{
	if (!start_session(NT_MODE_ONESHOT, 64u << 20))
		return 0;
	pairs_loop(500000);
	nt_reader *r = finish_and_open("bytes");
	if (r == NULL)
		return 0;
	nt_reader_summary s;
	nt_reader_get_summary(r, &s);
	uint64_t chunk_bytes = 0; /* uncompressed: the records' own size */
	nt_reader_get_compression(r, NULL, &chunk_bytes);
	uint64_t events = nt_reader_info(r)->events_written;
	nt_reader_close(r);
	if (events != 1000000) {
		fprintf(stderr, "nt_bench: expected 1000000 events in the archive, found %" PRIu64 "\n",
			events);
		return 0;
	}
	*record_bpe = (double)(chunk_bytes - s.chunks * sizeof(nt_chunk_header)) / (double)events;
	*chunk_bpe = (double)chunk_bytes / (double)events;
	*file_bpe = (double)s.file_bytes / (double)events;
	return 1;
}

/* Everything the benchmark measures (medians over the reps). */
typedef struct bench_results {
	int reps;
	uint64_t pairs;
	double ns_disabled, ns_category_off, ns_t2, ns_t2_base;
	double floor1, floor2, ns1, ns2;
	nt_stats st; /* of the circular session */
	double record_bpe, chunk_bpe, file_bpe;
	double stream_mb, unpaced;
	double t2_ratio;
	uint64_t t2_json, t2_archive;
	double json_ns, write_ns;
} bench_results;

/* The median of `reps` runs of one case, each over `n`. */
static double median_of(double (*run)(uint64_t), int reps, uint64_t n)
{
	double *v = calloc((size_t)reps, sizeof(double));
	if (v == NULL)
		return -1;
	for (int r = 0; r < reps; r++)
		v[r] = run(n);
	double m = median(v, reps);
	free(v);
	return m;
}

/* The event costs: tracing off, a disabled category, begin/end and Trace2 regions against
 * the floor, in one circular session that never fills (every event is a real write, with
 * chunk claims and wraps included; only "bench" is enabled). Returns 0 on failure. */
static int measure_events(bench_results *b)
{
	int reps = b->reps;
	uint64_t pairs = b->pairs;
	off_loop(pairs / 10); /* tracing off: no session at all */
	b->ns_disabled = median_of(off_loop, reps, 4 * pairs);
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_CIRCULAR;
	cfg.categories = "bench";
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nt_bench: %s\n", nt_last_error());
		return 0;
	}
	off_loop(pairs / 10);
	b->ns_category_off = median_of(off_loop, reps, 4 * pairs);
	/* Trace2 joins the running session (no NANOTRACE needed). */
	NT_T2_INITIALIZE("bench");
	double *v = calloc(6 * (size_t)reps, sizeof(double));
	if (v == NULL)
		return 0;
	double *t2 = v, *b1 = v + reps, *f1 = v + 2 * reps, *f2 = v + 3 * reps;
	double *e1 = v + 4 * reps, *e2 = v + 5 * reps;
	t2_pairs_loop(pairs / 10);
	for (int r = 0; r < reps; r++) {
		b1[r] = pairs_loop(pairs);
		t2[r] = t2_pairs_loop(pairs);
	}
	for (int r = 0; r < reps; r++) {
		f1[r] = run_threads(CASE_FLOOR, 1, 2 * pairs);
		e1[r] = run_threads(CASE_PAIRS, 1, pairs);
		f2[r] = run_threads(CASE_FLOOR, 2, 2 * pairs);
		e2[r] = run_threads(CASE_PAIRS, 2, pairs);
	}
	b->ns_t2 = median(t2, reps), b->ns_t2_base = median(b1, reps);
	b->floor1 = median(f1, reps), b->floor2 = median(f2, reps);
	b->ns1 = median(e1, reps), b->ns2 = median(e2, reps);
	free(v);
	nt_get_stats(&b->st);
	char path[256];
	tmp_path(path, sizeof(path), "c", ".ntrace");
	nt_finish(path);
	unlink(path);
	return 1;
}

/* Bytes per event, streaming throughput, Trace2 compression and the peers' costs. Returns
 * 0 on failure. */
static int measure_rest(bench_results *b)
{
	if (!measure_bytes(&b->record_bpe, &b->chunk_bpe, &b->file_bpe))
		return 0;
	b->stream_mb = streaming_mb_s(&b->unpaced);
	if (!trace2_compression(&b->t2_ratio, &b->t2_json, &b->t2_archive))
		return 0;
	char peer_path[256];
	tmp_path(peer_path, sizeof(peer_path), "peer", "");
	double *pj = calloc((size_t)b->reps, sizeof(double)), *pw = calloc((size_t)b->reps, sizeof(double));
	if (pj == NULL || pw == NULL) {
		free(pj), free(pw);
		return 0;
	}
	for (int r = 0; r < b->reps; r++) {
		pj[r] = peer_json_fwrite(peer_path, b->pairs / 4);
		pw[r] = peer_write_per_event(peer_path, b->pairs / 40);
	}
	b->json_ns = median(pj, b->reps), b->write_ns = median(pw, b->reps);
	free(pj), free(pw);
	return 1;
}

static void print_text(const bench_results *b)
{
	printf("nanotrace %s, clock %s, %d reps x %" PRIu64 " begin/end pairs, medians\n",
	       NT_VERSION_STRING, nt_clock_use_tsc_ ? "tsc" : "monotonic", b->reps, b->pairs);
	printf("  floor (clock + 16 B TLS store), 1 thread   %7.2f ns\n", b->floor1);
	printf("  floor, 2 threads (per thread)              %7.2f ns\n", b->floor2);
	printf("  begin/end event, 1 thread                  %7.2f ns   ratio %.3f\n", b->ns1,
	       b->ns1 / b->floor1);
	printf("  begin/end event, 2 threads (per thread)    %7.2f ns   ratio %.3f (to the 2-thread floor), %.3f (to the 1-thread floor)\n",
	       b->ns2, b->ns2 / b->floor2, b->ns2 / b->floor1);
	printf("  bytes per event: %.3f event records, %.3f with chunk headers, %.3f whole file\n",
	       b->record_bpe, b->chunk_bpe, b->file_bpe);
	printf("  session: %" PRIu64 " chunks, %" PRIu64 " wraps, %" PRIu64 " dropped\n",
	       b->st.chunks_claimed, b->st.wraps, b->st.events_dropped);
	printf("  event while tracing is off                 %7.2f ns\n", b->ns_disabled);
	printf("  event in a disabled category               %7.2f ns\n", b->ns_category_off);
	printf("  streaming to the archive, 0 drops          %7.1f MB/s (unpaced writer: %.1f MB/s saved)\n",
	       b->stream_mb, b->unpaced);
	printf("  Trace2 region enter/leave                  %7.2f ns   (begin/end in the same reps: %.2f ns, ratio %.3f)\n",
	       b->ns_t2, b->ns_t2_base, b->ns_t2 / b->ns_t2_base);
	printf("  Trace2 EVENT JSON / archive bytes          %7.1f   (%" PRIu64 " / %" PRIu64 " bytes)\n",
	       b->t2_ratio, b->t2_json, b->t2_archive);
	printf("  peer: JSON line + buffered fwrite          %7.1f ns   nanotrace is %.1fx faster\n",
	       b->json_ns, b->json_ns / b->ns1);
	printf("  peer: Trace2-style write(2) per event      %7.1f ns   nanotrace is %.1fx faster\n",
	       b->write_ns, b->write_ns / b->ns1);
}

static void print_json(const bench_results *b)
{
	printf("{\"ns_per_event_1t\":%.3f,\"ns_per_event_2t\":%.3f,\"floor_ns\":%.3f,"
	       "\"floor_2t_ns\":%.3f,\"ratio_1t\":%.4f,\"ratio_2t\":%.4f,"
	       "\"ratio_2t_vs_1t_floor\":%.4f,\"bytes_per_event\":%.4f,"
	       "\"chunk_bytes_per_event\":%.4f,\"file_bytes_per_event\":%.4f,"
	       "\"ns_disabled\":%.3f,\"ns_category_off\":%.3f,\"streaming_mb_s\":%.1f,"
	       "\"streaming_unpaced_mb_s\":%.1f,\"peer_json_fwrite_ns\":%.1f,"
	       "\"peer_write_per_event_ns\":%.1f,\"speedup_vs_json_fwrite\":%.1f,"
	       "\"speedup_vs_write_per_event\":%.1f,\"ns_trace2_region\":%.3f,"
	       "\"trace2_region_ratio\":%.4f,\"trace2_compression_ratio\":%.2f,"
	       "\"clock\":\"%s\",\"reps\":%d,\"pairs\":%" PRIu64 "}\n",
	       b->ns1, b->ns2, b->floor1, b->floor2, b->ns1 / b->floor1, b->ns2 / b->floor2,
	       b->ns2 / b->floor1, b->record_bpe, b->chunk_bpe, b->file_bpe, b->ns_disabled,
	       b->ns_category_off, b->stream_mb, b->unpaced, b->json_ns, b->write_ns,
	       b->json_ns / b->ns1, b->write_ns / b->ns1, b->ns_t2, b->ns_t2 / b->ns_t2_base,
	       b->t2_ratio, nt_clock_use_tsc_ ? "tsc" : "monotonic", b->reps, b->pairs);
}

int main(int argc, char **argv)
{
	int json = 0;
	uint64_t reps = 7, pairs = 2000000;
	const nt_bench_opt opts[] = {
		NT_BENCH_FLAG("--json", &json),
		NT_BENCH_NUMBER("--reps", "N", &reps, 1, 101),
		NT_BENCH_NUMBER("--pairs", "N", &pairs, 1000, NT_BENCH_MANY),
	};
	if (!NT_BENCH_PARSE("nt_bench", argc, argv, opts))
		return 2;
	bench_results b = { .reps = (int)reps, .pairs = pairs };
	if (!measure_events(&b) || !measure_rest(&b))
		return 1;
	print_text(&b);
	if (json)
		print_json(&b);
	return 0;
}
