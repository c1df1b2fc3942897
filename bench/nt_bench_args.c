/*
 * nt_bench_args - what an event with arguments costs, as a ratio to the floor measured in
 * the same run, interleaved.
 *
 *   floor      one clock read (the writer's own clock) + one 16-byte store into a
 *              thread-local ring (nt_bench_floor.h, every bench's floor): the least a
 *              timestamping tracer does
 *   zone       NT_BEGIN + NT_END without arguments (ns per event)
 *   i64x2      NT_INSTANT with two NT_I64 that fit 32 bits (each stored in 8 bytes)
 *   i64x2_wide NT_INSTANT with two NT_I64 that do not (each stored in 16 bytes)
 *   mixed4     NT_INSTANT with NT_U64, NT_F64, NT_BOOL and NT_PTR
 *   str        NT_INSTANT with one NT_STR of 12 bytes
 *   mixed      the iteration: NT_BEGIN + NT_INSTANT with two int64 + NT_END, ns per
 *              event (three events an iteration)
 *   async      NT_ASYNC_BEGIN + NT_ASYNC_END without arguments, a new id each pair (16 bytes
 *              an event: word 0 and the id)
 *   flow       NT_FLOW_STEP inside an NT_SCOPE: Begin, flow step, End (three events)
 * async_vs_zone and flow_vs_zone are the median over the repetitions of the case's ratio
 * over zone's in the same repetition (issue 26's goal: at most 1.15). After them, bytes per
 * event on disk of zone, async and flow, each alone in a oneshot session saved by
 * nt_finish(): the records (uncompressed, chunk headers excluded) and the file.
 *
 * One thread, pinned to CPU 0 where there are two, a circular session that never fills its
 * durable region (chunk claims and wraps included). Each repetition runs every case once, in
 * the same order, with a floor before and after; each repetition's ratio is the case over
 * the mean of the two floors around it, and a case's ratio is the median of its repetitions'
 * ratios, with their lowest and highest as its spread. When the floors of one run spread beyond FLOOR_BAND
 * (highest / lowest) the ratios are not trusted: the run says so and --json gives null.
 *
 *   nt_bench_args [--json] [--reps N] [--events N] [--buffer BYTES]
 * --buffer sets the arena's size (default nt_config's, 4 MiB); a buffer that fits the
 * cache shows what the writes to a larger one cost.
 * With --json the last line is one JSON object.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>
#include "nt_bench_floor.h"
#include "nt_bench_opts.h"
#include "nt_bench_util.h"

#define FLOOR_BAND 1.25

static double zone_loop(uint64_t n)
{
	return pairs_loop(n / 2);
}

static double i64x2_loop(uint64_t n)
{
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		NT_INSTANT("bench", "i64x2", NT_I64("a", i), NT_I64("b", i * 3));
	return (double)(now_ns() - t0) / (double)n;
}

static double i64x2_wide_loop(uint64_t n)
{
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		NT_INSTANT("bench", "i64x2_wide", NT_I64("a", i << 33), NT_I64("b", -(int64_t)(i << 33)));
	return (double)(now_ns() - t0) / (double)n;
}

static double mixed4_loop(uint64_t n)
{
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		NT_INSTANT("bench", "mixed4", NT_U64("u", i), NT_F64("f", (double)i * 0.5),
			   NT_BOOL("b", i & 1), NT_PTR("p", &nt_bench_ring[i & 7]));
	return (double)(now_ns() - t0) / (double)n;
}

static double str_loop(uint64_t n)
{
	static const char *const words[2] = { "hello, world", "other string" };
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		NT_INSTANT("bench", "str", NT_STR("s", words[i & 1]));
	return (double)(now_ns() - t0) / (double)n;
}

static double mixed_loop(uint64_t n)
{
	uint64_t iters = n / 3;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		NT_BEGIN("bench", "work");
		NT_INSTANT("bench", "step", NT_I64("i", i), NT_I64("j", i * 7));
		NT_END("bench", "work");
	}
	return (double)(now_ns() - t0) / (double)(3 * iters);
}

static double async_loop(uint64_t n)
{
	uint64_t pairs = n / 2;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < pairs; i++) {
		NT_ASYNC_BEGIN("bench", "request", i);
		NT_ASYNC_END("bench", "request", i);
	}
	return (double)(now_ns() - t0) / (double)(2 * pairs);
}

static double flow_loop(uint64_t n)
{
	uint64_t iters = n / 3;
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++) {
		NT_SCOPE("bench", "worker");
		NT_FLOW_STEP("bench", "handoff", i);
	}
	return (double)(now_ns() - t0) / (double)(3 * iters);
}

typedef struct bench_case {
	const char *name;
	double (*loop)(uint64_t);
} bench_case;

static const bench_case cases[] = {
	{ "zone", zone_loop },     { "i64x2", i64x2_loop }, { "i64x2_wide", i64x2_wide_loop },
	{ "mixed4", mixed4_loop }, { "str", str_loop },     { "mixed", mixed_loop },
	{ "async", async_loop },   { "flow", flow_loop },
};
#define CASE_ZONE 0
#define CASE_ASYNC 6
#define CASE_FLOW 7
#define NCASES (sizeof(cases) / sizeof(cases[0]))
_Static_assert(CASE_FLOW + 1 == NCASES, "the async and flow cases are the last two");

/* Bytes per event of case c alone in an archive nt_finish() saves (its default compression):
 * *records the uncompressed records without chunk headers, *file the whole file. 0 on
 * failure (said on stderr). */
static int disk_bytes(size_t c, uint64_t events, double *records, double *file)
{
	char path[] = "/tmp/nt-bench-args-disk-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return 0;
	close(fd);
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = (size_t)(events * 24 + (16u << 20));
	cfg.categories = "bench";
	int ok = nt_start(&cfg) == NT_OK;
	if (ok) {
		cases[c].loop(events);
		ok = nt_finish(path) == NT_OK;
	}
	struct stat st;
	nt_reader *r = ok && stat(path, &st) == 0 ? nt_reader_open(path, NULL) : NULL;
	unlink(path);
	if (r == NULL) {
		fprintf(stderr, "nt_bench_args: %s: %s\n", cases[c].name,
			ok ? "the archive just saved did not open" : nt_last_error());
		return 0;
	}
	nt_reader_summary s;
	nt_reader_get_summary(r, &s);
	uint64_t plain = 0, n = nt_reader_info(r)->events_written;
	nt_reader_get_compression(r, NULL, &plain);
	nt_reader_close(r);
	if (n == 0)
		return 0;
	*records = (double)(plain - s.chunks * sizeof(nt_chunk_header)) / (double)n;
	*file = (double)st.st_size / (double)n;
	return 1;
}

typedef struct results {
	double floor_ns, floor_spread;
	double ns[NCASES], ratio[NCASES], lo[NCASES], hi[NCASES];
	double async_vs_zone, flow_vs_zone; /* medians of the per-repetition quotients */
	double disk_records[3], disk_file[3]; /* zone, async, flow: bytes per event */
	int disk_ok;
	uint64_t dropped;
} results;

static void pin_cpu0(void)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static double min_of(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static double max_of(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/* Runs every case `reps` times, interleaved with the floor. Returns 0 on failure. */
static int measure(results *r, int reps, uint64_t events)
{
	double *v = calloc((size_t)(reps + 1) * (2 * NCASES + 1), sizeof(double));
	if (v == NULL)
		return 0;
	double *floors = v, *ns = v + reps + 1, *ratio = ns + (size_t)reps * NCASES;
	floor_loop(events / 10); /* warm up: faults the ring, registers thread and sites */
	for (size_t c = 0; c < NCASES; c++)
		cases[c].loop(events / 10);
	floors[0] = floor_loop(events);
	for (int k = 0; k < reps; k++) {
		for (size_t c = 0; c < NCASES; c++)
			ns[c * reps + k] = cases[c].loop(events);
		floors[k + 1] = floor_loop(events);
		for (size_t c = 0; c < NCASES; c++)
			ratio[c * reps + k] = ns[c * reps + k] / ((floors[k] + floors[k + 1]) / 2);
	}
	/* Each case over zone in the same repetition (the floors cancel), taken before the
	 * medians below sort the ratios in place. */
	double vs_async[reps], vs_flow[reps];
	for (int k = 0; k < reps; k++) {
		vs_async[k] = ratio[CASE_ASYNC * reps + k] / ratio[CASE_ZONE * reps + k];
		vs_flow[k] = ratio[CASE_FLOW * reps + k] / ratio[CASE_ZONE * reps + k];
	}
	r->async_vs_zone = median(vs_async, reps);
	r->flow_vs_zone = median(vs_flow, reps);
	r->floor_spread = max_of(floors, reps + 1) / min_of(floors, reps + 1);
	r->floor_ns = median(floors, reps + 1);
	for (size_t c = 0; c < NCASES; c++) {
		r->ns[c] = median(ns + c * reps, reps);
		r->lo[c] = min_of(ratio + c * reps, reps);
		r->hi[c] = max_of(ratio + c * reps, reps);
		r->ratio[c] = median(ratio + c * reps, reps);
	}
	free(v);
	return 1;
}

static void print_table(const results *r, int trusted)
{
	printf("nt_bench_args: 1 thread, ns per event, medians; ratio to the floors around it, "
	       "median of the repetitions (lowest..highest)\n");
	printf("  %-12s %8.2f ns  (floors spread %.2fx%s)\n", "floor", r->floor_ns, r->floor_spread,
	       trusted ? "" : ": beyond the band, ratios not trusted");
	for (size_t c = 0; c < NCASES; c++) {
		if (trusted)
			printf("  %-12s %8.2f ns  ratio %.3f (%.3f..%.3f)\n", cases[c].name, r->ns[c],
			       r->ratio[c], r->lo[c], r->hi[c]);
		else
			printf("  %-12s %8.2f ns\n", cases[c].name, r->ns[c]);
	}
	printf("  async / zone %.3f, flow / zone %.3f (goal: at most 1.15)\n", r->async_vs_zone,
	       r->flow_vs_zone);
	if (r->disk_ok)
		printf("  on disk, bytes per event (records / file): zone %.2f / %.2f, async %.2f / "
		       "%.2f, flow %.2f / %.2f\n", r->disk_records[0], r->disk_file[0],
		       r->disk_records[1], r->disk_file[1], r->disk_records[2], r->disk_file[2]);
	printf("  events dropped: %llu\n", (unsigned long long)r->dropped);
}

static void print_json(const results *r, int trusted)
{
	printf("{\"floor_ns\":%.3f,\"floor_spread\":%.4f,\"floor_band\":%.2f,\"dropped\":%llu",
	       r->floor_ns, r->floor_spread, FLOOR_BAND, (unsigned long long)r->dropped);
	for (size_t c = 0; c < NCASES; c++) {
		printf(",\"%s_ns\":%.3f", cases[c].name, r->ns[c]);
		if (trusted)
			printf(",\"%s_ratio\":%.4f,\"%s_ratio_lo\":%.4f,\"%s_ratio_hi\":%.4f",
			       cases[c].name, r->ratio[c], cases[c].name, r->lo[c], cases[c].name,
			       r->hi[c]);
		else
			printf(",\"%s_ratio\":null", cases[c].name);
	}
	if (trusted)
		printf(",\"async_vs_zone\":%.4f,\"flow_vs_zone\":%.4f", r->async_vs_zone,
		       r->flow_vs_zone);
	static const char *const disk_names[3] = { "zone", "async", "flow" };
	for (int i = 0; r->disk_ok && i < 3; i++)
		printf(",\"disk_record_bytes_%s\":%.3f,\"disk_file_bytes_%s\":%.3f", disk_names[i],
		       r->disk_records[i], disk_names[i], r->disk_file[i]);
	printf("}\n");
}

int main(int argc, char **argv)
{
	int json = 0;
	uint64_t events = 3000000, buffer = 0, nreps = 9;
	const nt_bench_opt opts[] = {
		NT_BENCH_FLAG("--json", &json),
		NT_BENCH_NUMBER("--reps", "N", &nreps, 1, 1000),
		NT_BENCH_NUMBER("--events", "N", &events, 30, 1000000000),
		NT_BENCH_NUMBER("--buffer", "BYTES", &buffer, 0, NT_BENCH_MANY),
	};
	if (!NT_BENCH_PARSE("nt_bench_args", argc, argv, opts))
		return 2;
	int reps = (int)nreps;
	pin_cpu0();
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_CIRCULAR;
	cfg.categories = "bench";
	if (buffer != 0)
		cfg.buffer_size = (size_t)buffer;
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nt_bench_args: %s\n", nt_last_error());
		return 1;
	}
	results r;
	memset(&r, 0, sizeof(r));
	int ok = measure(&r, reps, events);
	nt_stats st;
	nt_get_stats(&st);
	r.dropped = st.events_dropped;
	char path[] = "/tmp/nt-bench-args-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		if (nt_finish(path) != NT_OK)
			fprintf(stderr, "nt_bench_args: %s\n", nt_last_error());
		unlink(path);
	}
	if (!ok) {
		fprintf(stderr, "nt_bench_args: out of memory\n");
		return 1;
	}
	const size_t disk_cases[3] = { CASE_ZONE, CASE_ASYNC, CASE_FLOW };
	r.disk_ok = 1;
	for (int i = 0; i < 3; i++)
		r.disk_ok = r.disk_ok && disk_bytes(disk_cases[i], 300000, &r.disk_records[i],
						    &r.disk_file[i]);
	int trusted = r.floor_spread <= FLOOR_BAND;
	print_table(&r, trusted);
	if (json)
		print_json(&r, trusted);
	return 0;
}
