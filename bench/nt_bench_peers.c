/*
 * nt_bench_peers - nanotrace beside LTTng-UST and the floor, in the same run, at 1, 2, 4,
 * 8 and 16 threads (those the machine has CPUs for), and what nanotrace leaves on disk.
 *
 *   scaling  every round measures, at each thread count, the floor (nt_bench_floor.h), then
 *            each shape of nt_bench_shapes.h with nanotrace and (with --lttng) LTTng-UST:
 *            ns per event per thread. Rounds are interleaved, so a ratio is taken within a
 *            round (subject ÷ the floor of the same round and thread count) and reported as
 *            the median of the rounds with their min and max. A floor that drifts beyond
 *            --band (default 1.25: its 3rd ÷ 1st quartile, or its median ÷ its fastest
 *            round; one preempted round is not a drift) makes its ratios null with why.
 *   disk     bytes per event of each shape as nt_finish saves it, and one writer thread
 *            streaming the mixed shape at full rate into the default arena: events lost,
 *            the saver's MB/s, and a plain write(2) of the same bytes to the same folder;
 *            then rounds of one writer making the same events (--stream-events, default
 *            --events) of the zone and the mixed shape in oneshot and in streaming mode:
 *            bytes per event on disk, the writer's ns per event and events lost, streaming
 *            ÷ oneshot within each round (issue 29).
 *
 * LTTng-UST is driven from outside (bench/nt_report.py starts the session daemon and the
 * session): --lttng fails unless the session enabled this process's nt_bench:* events.
 *
 *   nt_bench_peers [--part scaling|disk|all] [--lttng] [--rounds N] [--events N]
 *                  [--max-threads N] [--band X] [--stream-ms MS] [--stream-events N]
 *                  [--stream-rounds N] [--json]
 *   nt_bench_peers --has-lttng          prints 1 if built with lttng-ust, else 0
 *   nt_bench_peers --lttng-record N     N events of the mixed shape through LTTng-UST only
 * With --json the last line is one JSON object.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "nt_bench_disk.h"
#include "nt_bench_json.h"
#include "nt_bench_shapes.h"

#define MAX_COUNTS 5
static const int thread_counts[MAX_COUNTS] = { 1, 2, 4, 8, 16 };

typedef struct peers_opts {
	int scaling, disk, lttng, json, rounds, max_threads, stream_ms;
	uint64_t events;
	double band;
	uint64_t stream_events; /* per run of streaming beside oneshot (0: --events) */
	int stream_rounds;
} peers_opts;

/* Every measurement of the scaling part: ns per event per thread, by round. */
typedef struct scaling {
	int counts;                  /* thread counts measured: thread_counts[0 .. counts-1] */
	int rounds;
	double *v;                   /* [count][subject][shape][round] */
	uint64_t lttng_events;       /* events LTTng-UST was asked to record */
} scaling;

static double *cell(const scaling *s, int ti, int subject, int shape)
{
	return s->v + (((size_t)ti * SUBJECT_COUNT + (size_t)subject) * SHAPE_COUNT + (size_t)shape) *
			      (size_t)s->rounds;
}

/* ---- threads ------------------------------------------------------------------------------ */

typedef struct worker {
	nt_bench_subject subject;
	nt_bench_shape shape;
	uint64_t events;
	int cpu;
	double result;
	pthread_barrier_t *start;
} worker;

static void *worker_main(void *p)
{
	worker *w = p;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus > 1) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu % (int)cpus, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	/* warm-up: registers the thread and the call sites, faults in the rings */
	subject_loop(w->subject, w->shape, w->events / 10);
	pthread_barrier_wait(w->start);
	w->result = subject_loop(w->subject, w->shape, w->events);
	return NULL;
}

/* The mean over `n` threads of each thread's ns per event. */
static double run_threads(nt_bench_subject subject, nt_bench_shape shape, int n, uint64_t events)
{
	pthread_t th[16];
	worker w[16];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		w[i] = (worker){ subject, shape, events, i, 0, &start };
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	double sum = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		sum += w[i].result;
	}
	pthread_barrier_destroy(&start);
	return sum / n;
}

/* ---- the scaling part --------------------------------------------------------------------- */

static int measure_scaling(const peers_opts *o, scaling *s)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	s->counts = 0;
	while (s->counts < MAX_COUNTS && thread_counts[s->counts] <= cpus &&
	       thread_counts[s->counts] <= o->max_threads)
		s->counts++;
	s->rounds = o->rounds;
	s->v = calloc((size_t)s->counts * SUBJECT_COUNT * SHAPE_COUNT * (size_t)s->rounds, sizeof(double));
	if (s->v == NULL)
		return 0;
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_CIRCULAR; /* never fills: every event is a real write, wraps included */
	cfg.categories = "bench";
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nt_bench_peers: nt_start: %s\n", nt_last_error());
		return 0;
	}
	for (int r = 0; r < s->rounds; r++) {
		for (int ti = 0; ti < s->counts; ti++) {
			int n = thread_counts[ti];
			cell(s, ti, SUBJECT_FLOOR, 0)[r] = run_threads(SUBJECT_FLOOR, 0, n, o->events);
			for (int sh = 0; sh < SHAPE_COUNT; sh++) {
				cell(s, ti, SUBJECT_NANOTRACE, sh)[r] =
					run_threads(SUBJECT_NANOTRACE, (nt_bench_shape)sh, n, o->events);
				if (!o->lttng)
					continue;
				cell(s, ti, SUBJECT_LTTNG, sh)[r] =
					run_threads(SUBJECT_LTTNG, (nt_bench_shape)sh, n, o->events);
				s->lttng_events += (uint64_t)n * (o->events + o->events / 10);
				/* LTTng's consumer daemon drains the sub-buffers after the loop: let it
				 * finish, or it runs during the next subject's time (2 cores). */
				usleep(50000);
			}
		}
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/nt-bench-peers-circular-XXXXXX",
		 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	int fd = mkostemp(path, O_CLOEXEC); /* a private name for an archive nobody reads */
	if (fd >= 0)
		close(fd);
	nt_finish(fd >= 0 ? path : NULL);
	if (fd >= 0)
		unlink(path);
	return 1;
}

/* ---- statistics --------------------------------------------------------------------------- */

typedef struct spread {
	double med, lo, hi;
	int ok;
	char reason[200];
	double q1, q3; /* the middle half of the rounds lies in [q1, q3] */
} spread;

static spread spread_of(const double *v, int n)
{
	double c[256];
	spread s = { 0, 0, 0, 1, "", 0, 0 };
	for (int i = 0; i < n; i++)
		c[i] = v[i];
	s.med = median(c, n), s.lo = c[0], s.hi = c[n - 1];
	s.q1 = c[n / 4], s.q3 = c[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1];
	return s;
}

/* A floor drifts when the middle half of its rounds spreads beyond the band, or its median
 * round is beyond the band of its fastest: one round that a busy machine preempted does not
 * drift it (the per-round ratios' median ignores that round too), a trend or a machine busy
 * for most of the run does. Writes why into `reason`. */
static int floor_drifts(const spread *f, const peers_opts *o, int threads, int rounds,
			char *reason, size_t cap)
{
	if (f->q3 <= f->q1 * o->band && f->med <= f->lo * o->band)
		return 0;
	snprintf(reason, cap,
		 "floor unstable at %d thread%s (middle rounds %.2f-%.2f ns, all %.2f-%.2f ns, "
		 "over %d rounds; band %g): ratio not reported",
		 threads, threads > 1 ? "s" : "", f->q1, f->q3, f->lo, f->hi, rounds, o->band);
	return 1;
}

/* Per-round ratios num[r] / den[r]. */
static spread ratio_of(const double *num, const double *den, int n)
{
	double q[256];
	for (int i = 0; i < n; i++)
		q[i] = num[i] / den[i];
	return spread_of(q, n);
}

/* A ratio to the floor at thread-count index ti, or null with why. */
static spread floor_ratio(const scaling *s, const peers_opts *o, int ti, int subject, int shape)
{
	const double *fl = cell(s, ti, SUBJECT_FLOOR, 0);
	spread f = spread_of(fl, s->rounds);
	spread q = ratio_of(cell(s, ti, subject, shape), fl, s->rounds);
	if (floor_drifts(&f, o, thread_counts[ti], s->rounds, q.reason, sizeof(q.reason))) {
		q.ok = 0;
	} else if (q.med < 0.95) {
		q.ok = 0;
		snprintf(q.reason, sizeof(q.reason),
			 "ratio %.3f is below the floor: the floor measurement is suspect, not reported",
			 q.med);
	}
	return q;
}

/* The worst per-thread cost of the mixed shape at any thread count ÷ its 1-thread cost
 * (per-round ratios, median). *at is the thread count. */
static spread threads_max(const scaling *s, const peers_opts *o, int subject, int *at)
{
	spread worst = { 0, 0, 0, 0, "one CPU: no thread count above 1 to compare", 0, 0 };
	*at = 1;
	for (int ti = 0; ti < s->counts; ti++) { /* a drifting floor: the machine was too busy */
		spread f = spread_of(cell(s, ti, SUBJECT_FLOOR, 0), s->rounds);
		if (floor_drifts(&f, o, thread_counts[ti], s->rounds, worst.reason, sizeof(worst.reason)))
			return worst;
	}
	for (int ti = 1; ti < s->counts; ti++) {
		spread q = ratio_of(cell(s, ti, subject, SHAPE_MIXED), cell(s, 0, subject, SHAPE_MIXED),
				    s->rounds);
		if (!worst.ok || q.med > worst.med)
			worst = q, *at = thread_counts[ti];
	}
	if (worst.ok && worst.med < 0.95) {
		worst.ok = 0;
		snprintf(worst.reason, sizeof(worst.reason),
			 "per-thread cost at %d threads is %.3f of the 1-thread cost: the 1-thread "
			 "figure is suspect (noise), not reported", *at, worst.med);
	}
	return worst;
}

/* ---- output ------------------------------------------------------------------------------- */

/* Per-thread cost at thread-count index ti ÷ the 1-thread cost, mixed shape (the floor:
 * its own), per-round ratios. */
static spread vs_1t(const scaling *s, int ti, int subject)
{
	int shape = subject == SUBJECT_FLOOR ? 0 : SHAPE_MIXED;
	return ratio_of(cell(s, ti, subject, shape), cell(s, 0, subject, shape), s->rounds);
}

static void print_vs_1t(const scaling *s, const peers_opts *o, int ti)
{
	printf("     per-thread cost / 1 thread:");
	for (int subj = 0; subj < SUBJECT_COUNT; subj++) {
		if (subj == SUBJECT_LTTNG && !o->lttng)
			continue;
		spread q = vs_1t(s, ti, subj);
		printf("  %s%s %.3f [%.3f-%.3f]", nt_bench_subject_names[subj],
		       subj == SUBJECT_FLOOR ? "" : " (mixed)", q.med, q.lo, q.hi);
	}
	printf("\n");
}

static void print_scaling_text(const scaling *s, const peers_opts *o)
{
	printf("nanotrace %s, %d rounds x %" PRIu64 " events per thread, ns/event per thread (median [min-max])\n",
	       NT_VERSION_STRING, s->rounds, o->events);
	for (int ti = 0; ti < s->counts; ti++) {
		spread f = spread_of(cell(s, ti, SUBJECT_FLOOR, 0), s->rounds);
		printf("  %2d thread%s floor %6.2f [%.2f-%.2f]\n", thread_counts[ti],
		       ti ? "s" : " ", f.med, f.lo, f.hi);
		for (int sh = 0; sh < SHAPE_COUNT; sh++) {
			spread n = spread_of(cell(s, ti, SUBJECT_NANOTRACE, sh), s->rounds);
			spread q = floor_ratio(s, o, ti, SUBJECT_NANOTRACE, sh);
			printf("     %-6s nanotrace %7.2f", nt_bench_shape_names[sh], n.med);
			if (q.ok)
				printf("  ratio %.3f [%.3f-%.3f]", q.med, q.lo, q.hi);
			else
				printf("  ratio: %s", q.reason);
			if (o->lttng) {
				spread l = spread_of(cell(s, ti, SUBJECT_LTTNG, sh), s->rounds);
				spread x = ratio_of(cell(s, ti, SUBJECT_LTTNG, sh),
						    cell(s, ti, SUBJECT_NANOTRACE, sh), s->rounds);
				printf("   LTTng-UST %7.2f  (nanotrace %.1fx faster [%.1f-%.1f])", l.med,
				       x.med, x.lo, x.hi);
			}
			printf("\n");
		}
		if (ti > 0)
			print_vs_1t(s, o, ti);
	}
	for (int c = s->counts; c < MAX_COUNTS; c++)
		printf("  %2d threads skipped: %ld CPUs online (or --max-threads)\n", thread_counts[c],
		       sysconf(_SC_NPROCESSORS_ONLN));
}

static void json_spread(nt_json *j, const char *key, spread q)
{
	nt_json_num(j, key, q.med, q.ok, q.reason);
	if (q.ok) {
		char k[128];
		snprintf(k, sizeof(k), "%s_min", key);
		nt_json_num(j, k, q.lo, 1, NULL);
		snprintf(k, sizeof(k), "%s_max", key);
		nt_json_num(j, k, q.hi, 1, NULL);
	}
}

/* "scaling": {"threads": [...], "skipped_threads": [...], "<subject>_<shape>": [...]}. */
static void json_scaling_series(nt_json *j, const scaling *s, const peers_opts *o)
{
	nt_json_nest(j, "scaling", '{');
	nt_json_nest(j, "threads", '[');
	for (int ti = 0; ti < s->counts; ti++)
		nt_json_item(j, thread_counts[ti]);
	nt_json_unnest(j, ']');
	nt_json_nest(j, "skipped_threads", '[');
	for (int c = s->counts; c < MAX_COUNTS; c++)
		nt_json_item(j, thread_counts[c]);
	nt_json_unnest(j, ']');
	nt_json_num(j, "rounds", s->rounds, 1, NULL);
	nt_json_num(j, "events_per_thread", (double)o->events, 1, NULL);
	nt_json_num(j, "floor_band", o->band, 1, NULL);
	for (int subj = 0; subj < SUBJECT_COUNT; subj++) {
		if (subj == SUBJECT_LTTNG && !o->lttng)
			continue;
		for (int sh = 0; sh < (subj == SUBJECT_FLOOR ? 1 : SHAPE_COUNT); sh++) {
			char key[64];
			snprintf(key, sizeof(key), "%s%s%s", nt_bench_subject_names[subj],
				 subj == SUBJECT_FLOOR ? "" : "_", subj == SUBJECT_FLOOR ? "" : nt_bench_shape_names[sh]);
			nt_json_nest(j, key, '[');
			for (int ti = 0; ti < s->counts; ti++)
				nt_json_item(j, spread_of(cell(s, ti, subj, sh), s->rounds).med);
			nt_json_unnest(j, ']');
		}
		char key[64]; /* each thread count's per-thread cost ÷ the 1-thread cost */
		snprintf(key, sizeof(key), "%s_vs_1t", nt_bench_subject_names[subj]);
		nt_json_nest(j, key, '[');
		for (int ti = 0; ti < s->counts; ti++)
			nt_json_item(j, vs_1t(s, ti, subj).med);
		nt_json_unnest(j, ']');
	}
	nt_json_unnest(j, '}');
}

static void json_scaling(nt_json *j, const scaling *s, const peers_opts *o)
{
	spread f = spread_of(cell(s, 0, SUBJECT_FLOOR, 0), s->rounds);
	nt_json_num(j, "floor_ns", f.med, 1, NULL);
	nt_json_num(j, "floor_min_ns", f.lo, 1, NULL);
	nt_json_num(j, "floor_max_ns", f.hi, 1, NULL);
	nt_json_num(j, "ns_per_event_1t",
		    spread_of(cell(s, 0, SUBJECT_NANOTRACE, SHAPE_ZONE), s->rounds).med, 1, NULL);
	nt_json_num(j, "ns_per_event_mixed_1t",
		    spread_of(cell(s, 0, SUBJECT_NANOTRACE, SHAPE_MIXED), s->rounds).med, 1, NULL);
	json_spread(j, "ratio_1t", floor_ratio(s, o, 0, SUBJECT_NANOTRACE, SHAPE_ZONE));
	json_spread(j, "ratio_mixed_1t", floor_ratio(s, o, 0, SUBJECT_NANOTRACE, SHAPE_MIXED));
	int at;
	json_spread(j, "ratio_threads_max", threads_max(s, o, SUBJECT_NANOTRACE, &at));
	nt_json_num(j, "ratio_threads_max_at", at, 1, NULL);
	const char *no = "LTTng-UST not measured (--lttng not given)";
	if (o->lttng) {
		spread l = spread_of(cell(s, 0, SUBJECT_LTTNG, SHAPE_MIXED), s->rounds);
		nt_json_num(j, "lttng_ns_per_event_1t", l.med, 1, NULL);
		nt_json_num(j, "lttng_ns_per_event_zone_1t",
			    spread_of(cell(s, 0, SUBJECT_LTTNG, SHAPE_ZONE), s->rounds).med, 1, NULL);
		json_spread(j, "speedup_vs_lttng",
			    ratio_of(cell(s, 0, SUBJECT_LTTNG, SHAPE_MIXED),
				     cell(s, 0, SUBJECT_NANOTRACE, SHAPE_MIXED), s->rounds));
		json_spread(j, "lttng_ratio_threads_max", threads_max(s, o, SUBJECT_LTTNG, &at));
		nt_json_num(j, "lttng_events_made", (double)s->lttng_events, 1, NULL);
	} else {
		nt_json_num(j, "lttng_ns_per_event_1t", 0, 0, no);
		nt_json_num(j, "speedup_vs_lttng", 0, 0, no);
	}
	json_scaling_series(j, s, o);
}

static void print_disk(const nt_bench_disk *d)
{
	printf("nanotrace on disk (nt_finish's default), per event:\n");
	for (int sh = 0; sh < SHAPE_COUNT; sh++)
		printf("  %-6s records %6.3f B   file %6.3f B   (%" PRIu64 " events)\n",
		       nt_bench_shape_names[sh], d->record_bpe[sh], d->file_bpe[sh], d->archive_events[sh]);
	printf("streaming, 1 thread, mixed shape at full rate, default %u MiB arena: %.2f%% lost (%" PRIu64
	       " of %" PRIu64 "), saver %.1f MB/s, plain write(2) %.1f MB/s\n",
	       (unsigned)(nt_default_buffer_bytes(NT_MODE_STREAMING) >> 20), d->stream_lost_pct,
	       d->stream_dropped, d->stream_events, d->saver_mb_s, d->plain_write_mb_s);
	printf("streaming beside oneshot, 1 thread at full rate, the same %" PRIu64
	       " events, medians of the rounds:\n", d->vs[0].events);
	static const char *const shape[2] = { "zone", "mixed" };
	for (int i = 0; i < 2; i++) {
		const nt_bench_stream_shape *v = &d->vs[i];
		printf("  %-6s disk B/event oneshot %.3f streaming %.3f (x%.2f; st_size %.3f)   "
		       "ns/event oneshot %.2f streaming %.2f (x%.3f)   lost %.2f%% (worst round)   "
		       "compressed chunks %" PRIu64 " of %" PRIu64 "   saver CPU %.0f%% of the loop's time\n",
		       shape[i], v->oneshot_bpe, v->stream_bpe, v->bytes_ratio, v->apparent_bpe,
		       v->oneshot_ns, v->stream_ns, v->ns_ratio, v->lost_pct, v->zchunks, v->chunks, 100 * v->saver_cpu);
	}
}

static void json_disk(nt_json *j, const nt_bench_disk *d)
{
	nt_json_num(j, "bytes_per_event_mixed", d->record_bpe[SHAPE_MIXED], 1, NULL);
	nt_json_num(j, "bytes_per_event_zone", d->record_bpe[SHAPE_ZONE], 1, NULL);
	nt_json_num(j, "disk_bytes_per_event_zone", d->file_bpe[SHAPE_ZONE], 1, NULL);
	nt_json_num(j, "disk_bytes_per_event_mixed", d->file_bpe[SHAPE_MIXED], 1, NULL);
	nt_json_num(j, "disk_bytes_per_event_int2", d->file_bpe[SHAPE_INT2], 1, NULL);
	nt_json_num(j, "disk_bytes_per_event_str", d->file_bpe[SHAPE_STR], 1, NULL);
	nt_json_num(j, "streaming_lost_pct_1t_mixed", d->stream_lost_pct, 1, NULL);
	nt_json_num(j, "streaming_events_1t_mixed", (double)d->stream_events, 1, NULL);
	nt_json_num(j, "saver_mb_s", d->saver_mb_s, 1, NULL);
	static const char *const shape[2] = { "zone", "mixed" };
	char key[64];
	double worst_ns = 0;
	for (int i = 0; i < 2; i++) {
		const nt_bench_stream_shape *v = &d->vs[i];
		snprintf(key, sizeof(key), "streaming_disk_bytes_per_event_%s", shape[i]);
		nt_json_num(j, key, v->stream_bpe, 1, NULL);
		snprintf(key, sizeof(key), "streaming_vs_oneshot_bytes_%s", shape[i]);
		nt_json_num(j, key, v->bytes_ratio, 1, NULL);
		snprintf(key, sizeof(key), "streaming_lost_pct_%s", shape[i]);
		nt_json_num(j, key, v->lost_pct, 1, NULL);
		snprintf(key, sizeof(key), "streaming_ns_vs_oneshot_%s", shape[i]);
		nt_json_num(j, key, v->ns_ratio, 1, NULL);
		snprintf(key, sizeof(key), "streaming_compressed_chunk_share_%s", shape[i]);
		nt_json_num(j, key, v->chunks ? (double)v->zchunks / (double)v->chunks : 0, 1, NULL);
		worst_ns = v->ns_ratio > worst_ns ? v->ns_ratio : worst_ns;
	}
	nt_json_num(j, "streaming_ns_vs_oneshot", worst_ns, 1, NULL);
	nt_json_num(j, "plain_write_mb_s", d->plain_write_mb_s, 1, NULL);
}

/* ---- main --------------------------------------------------------------------------------- */

/* --lttng-record N: N events of the mixed shape through LTTng-UST, nothing else, paced to
 * at most 2 M events/s so the default sub-buffers keep them all (the trace babeltrace2
 * reads holds the same events as nanotrace's). */
static int lttng_record(uint64_t events)
{
#ifdef NT_BENCH_HAVE_LTTNG
	if (!lttng_events_enabled()) {
		fputs("nt_bench_peers: the LTTng session did not enable nt_bench:* in this process\n", stderr);
		return 2;
	}
	uint64_t t0 = now_ns(), done = 0, iterations = events / 3;
	while (done < iterations) {
		uint64_t n = iterations - done < 1024 ? iterations - done : 1024;
		lttng_mixed_loop(n);
		done += n;
		uint64_t due = t0 + done * 3 * 500; /* 500 ns per event: 2 M events/s */
		for (uint64_t now = now_ns(); now < due; now = now_ns())
			usleep((useconds_t)((due - now) / 1000 + 1));
	}
	printf("%" PRIu64 " events through LTTng-UST in %.2f s\n", iterations * 3,
	       (double)(now_ns() - t0) / 1e9);
	return 0;
#else
	(void)events;
	fputs("nt_bench_peers: built without lttng-ust\n", stderr);
	return 2;
#endif
}

static int parse(int argc, char **argv, peers_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--json") == 0)
			o->json = 1;
		else if (strcmp(a, "--lttng") == 0)
			o->lttng = 1;
		else if (strcmp(a, "--part") == 0 && v && (!strcmp(v, "scaling") || !strcmp(v, "disk") || !strcmp(v, "all")))
			o->scaling = strcmp(v, "disk") != 0, o->disk = strcmp(v, "scaling") != 0, i++;
		else if (strcmp(a, "--rounds") == 0 && v)
			o->rounds = atoi(v), i++;
		else if (strcmp(a, "--events") == 0 && v)
			o->events = strtoull(v, NULL, 10), i++;
		else if (strcmp(a, "--max-threads") == 0 && v)
			o->max_threads = atoi(v), i++;
		else if (strcmp(a, "--band") == 0 && v)
			o->band = strtod(v, NULL), i++;
		else if (strcmp(a, "--stream-ms") == 0 && v)
			o->stream_ms = atoi(v), i++;
		else if (strcmp(a, "--stream-events") == 0 && v)
			o->stream_events = strtoull(v, NULL, 10), i++;
		else if (strcmp(a, "--stream-rounds") == 0 && v)
			o->stream_rounds = atoi(v), i++;
		else
			return 0;
	}
	return o->rounds >= 1 && o->rounds <= 255 && o->events >= 1000 && o->max_threads >= 1 &&
	       o->band > 1.0 && o->stream_ms >= 10 && o->stream_rounds >= 1 && o->stream_rounds <= NT_BENCH_MAX_REPS;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--has-lttng") == 0) {
#ifdef NT_BENCH_HAVE_LTTNG
		puts("1");
#else
		puts("0");
#endif
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--lttng-record") == 0)
		return lttng_record(strtoull(argv[2], NULL, 10));
	peers_opts o = { 1, 1, 0, 0, 9, 16, 1000, 2000000, 1.25, 0, 3 };
	int parsed = parse(argc, argv, &o);
	if (o.stream_events == 0)
		o.stream_events = o.events;
	if (!parsed || o.stream_events < 1000) {
		fputs("usage: nt_bench_peers [--part scaling|disk|all] [--lttng] [--rounds 1-255] "
		      "[--events N>=1000] [--max-threads N] [--band X>1] [--stream-ms MS>=10]\n"
		      "                      [--stream-events N>=1000] [--stream-rounds 1-15] [--json]\n"
		      "       nt_bench_peers --has-lttng | --lttng-record N\n", stderr);
		return 1;
	}
#ifdef NT_BENCH_HAVE_LTTNG
	if (o.lttng && !lttng_events_enabled()) {
		fputs("nt_bench_peers: --lttng, but no LTTng session enabled nt_bench:* in this process\n", stderr);
		return 2;
	}
#else
	if (o.lttng) {
		fputs("nt_bench_peers: --lttng, but this build has no lttng-ust\n", stderr);
		return 2;
	}
#endif
	scaling s = { 0 };
	nt_bench_disk d;
	if (o.scaling && !measure_scaling(&o, &s))
		return 1;
	if (o.disk && !nt_bench_measure_disk(&d, o.events, o.stream_ms, o.stream_events,
					     o.stream_rounds))
		return 1;
	if (o.scaling)
		print_scaling_text(&s, &o);
	if (o.disk)
		print_disk(&d);
	if (o.json) {
		nt_json j;
		nt_json_begin(&j, stdout);
		if (o.scaling)
			json_scaling(&j, &s, &o);
		if (o.disk)
			json_disk(&j, &d);
		nt_json_end(&j);
	}
	free(s.v);
	return 0;
}
