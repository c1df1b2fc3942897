/*
 * nt_bench_follow - live follow latency: how long after an event is published does a
 * follower deliver it? A thread publishes one event every --period-us (jittered), carrying
 * CLOCK_MONOTONIC at its publication; a filler thread records --filler events per ms
 * beside it, so each poll copies a busy arena. Measured two ways, per mode (oneshot,
 * circular, streaming file-backed arenas):
 *   library     a follower thread of this process: nt_follow_poll every --interval ms;
 *   trace-dump  with --trace-dump PATH: `trace-dump --follow --interval MS` on the file,
 *               its lines read from a pipe as they come (rendering and flushing included).
 * Latency = the time the event (or its line) arrived - the time in it. Prints the median,
 * p99 and max per way and mode, and the mean time of one poll (library); --json one object.
 * A benchmark, never a timed test: on a shared machine, repeat it and compare within a run.
 *
 *   nt_bench_follow [--seconds S] [--interval MS] [--period-us US] [--filler N]
 *                   [--trace-dump PATH] [--json]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>

#include "nt_bench_util.h"


typedef struct samples {
	int64_t *v;
	size_t n, cap;
} samples;

static void add_sample(samples *s, int64_t x)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (s->v == NULL)
			abort();
	}
	s->v[s->n++] = x;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static double pct_ms(samples *s, double p)
{
	if (s->n == 0)
		return -1;
	qsort(s->v, s->n, sizeof(*s->v), cmp64);
	size_t i = (size_t)(p * (double)(s->n - 1) + 0.5);
	return (double)s->v[i] / 1e6;
}

typedef struct config {
	double seconds;
	unsigned interval_ms, period_us, filler;
	const char *trace_dump;
	int json;
} config;

static volatile int stop_writers;

static void *publisher(void *arg)
{
	const config *c = arg;
	unsigned seed = 1;
	while (!__atomic_load_n(&stop_writers, __ATOMIC_RELAXED)) {
		NT_INSTANT("bench", "pub", NT_I64("t", now_ns()));
		usleep(c->period_us / 2 + (unsigned)rand_r(&seed) % (c->period_us + 1));
	}
	return NULL;
}

static void *filler(void *arg)
{
	const config *c = arg;
	while (!__atomic_load_n(&stop_writers, __ATOMIC_RELAXED)) {
		for (unsigned i = 0; i < c->filler; i++)
			NT_INSTANT("bench", "fill", NT_U64("i", i));
		usleep(1000);
	}
	return NULL;
}

/* ---- the library's follower ---- */

typedef struct lib_follow {
	const char *path;
	unsigned interval_ms;
	samples lat;
	double poll_ns_sum;
	uint64_t polls;
	volatile int done;
} lib_follow;

static int lib_event(void *ctx, const nt_reader_event *e)
{
	lib_follow *l = ctx;
	if (strcmp(e->name, "pub") == 0 && e->arg_count == 1)
		add_sample(&l->lat, now_ns() - e->args[0].value.i64);
	return 0;
}

static void *lib_main(void *arg)
{
	lib_follow *l = arg;
	nt_reader_error err;
	nt_follower *f = nt_follow_open(l->path, &err);
	if (f == NULL) {
		fprintf(stderr, "nt_bench_follow: %s\n", err.message);
		return NULL;
	}
	nt_reader_callbacks cb = { .on_event = lib_event };
	for (;;) {
		int64_t t0 = now_ns();
		int st = nt_follow_poll(f, &cb, l);
		l->poll_ns_sum += (double)(now_ns() - t0);
		l->polls++;
		if (st != NT_FOLLOW_RUNNING) {
			if (st == NT_FOLLOW_FAILED)
				fprintf(stderr, "nt_bench_follow: %s\n", nt_follow_error(f));
			break;
		}
		usleep(l->interval_ms * 1000u);
	}
	nt_follow_close(f);
	return NULL;
}

/* ---- trace-dump --follow, read from a pipe ---- */

typedef struct tool_follow {
	FILE *in;
	samples lat;
} tool_follow;

static void *tool_main(void *arg)
{
	tool_follow *t = arg;
	char line[4096];
	while (fgets(line, sizeof(line), t->in) != NULL) {
		int64_t at = now_ns();
		const char *p = strstr(line, " pub ");
		const char *v = p ? strstr(p, " t=") : NULL;
		if (v != NULL)
			add_sample(&t->lat, at - strtoll(v + 3, NULL, 10));
	}
	return NULL;
}

static pid_t start_tool(const config *c, const char *path, FILE **out)
{
	char iv[16];
	snprintf(iv, sizeof(iv), "%u", c->interval_ms);
	char *argv[] = { (char *)c->trace_dump, "--follow", "--interval", iv, (char *)path, NULL };
	int fd;
	pid_t pid = nt_bench_spawn_reading(argv, &fd);
	if (pid > 0)
		*out = fdopen(fd, "r");
	return pid;
}

static void report(const config *c, const char *mode, const char *way, samples *s,
		   double poll_ms, int *first)
{
	double med = pct_ms(s, 0.5), p99 = pct_ms(s, 0.99), mx = pct_ms(s, 1.0);
	if (c->json)
		printf("%s\"%s_%s\": {\"samples\": %zu, \"median_ms\": %.3f, \"p99_ms\": %.3f, "
		       "\"max_ms\": %.3f, \"poll_ms\": %.3f}",
		       *first ? "" : ", ", mode, way, s->n, med, p99, mx, poll_ms);
	else
		printf("%-10s %-10s %7zu events  median %7.3f ms  p99 %7.3f ms  max %7.3f ms%s",
		       mode, way, s->n, med, p99, mx, poll_ms >= 0 ? "" : "\n");
	if (!c->json && poll_ms >= 0)
		printf("  (a poll: %.3f ms)\n", poll_ms);
	*first = 0;
}

static int run_mode(const config *c, int mode, const char *name, const char *dir, int *first)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/follow-%s.ntrace", dir, name);
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	cfg.path = path;
	cfg.clock = NT_CLOCK_USE_MONOTONIC;
	cfg.handle_signals = 0;
	if (mode == NT_MODE_ONESHOT)
		cfg.buffer_size = 64u << 20; /* the run's events fit: nothing dropped */
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nt_bench_follow: %s\n", nt_last_error());
		return 2;
	}
	lib_follow lib = { .path = path, .interval_ms = c->interval_ms };
	tool_follow tool = { 0 };
	pthread_t lt, tt = 0, pw, fw;
	pid_t tool_pid = -1;
	pthread_create(&lt, NULL, lib_main, &lib);
	if (c->trace_dump && (tool_pid = start_tool(c, path, &tool.in)) > 0)
		pthread_create(&tt, NULL, tool_main, &tool);
	stop_writers = 0;
	pthread_create(&pw, NULL, publisher, (void *)c);
	pthread_create(&fw, NULL, filler, (void *)c);
	usleep((useconds_t)(c->seconds * 1e6));
	__atomic_store_n(&stop_writers, 1, __ATOMIC_RELAXED);
	pthread_join(pw, NULL);
	pthread_join(fw, NULL);
	usleep(200000); /* the last events are followed live too */
	if (nt_finish(NULL) != NT_OK)
		fprintf(stderr, "nt_bench_follow: %s\n", nt_last_error());
	pthread_join(lt, NULL);
	if (tool_pid > 0) {
		pthread_join(tt, NULL);
		fclose(tool.in);
		waitpid(tool_pid, NULL, 0);
	}
	report(c, name, "library", &lib.lat, lib.polls ? lib.poll_ns_sum / lib.polls / 1e6 : 0, first);
	if (tool_pid > 0)
		report(c, name, "trace_dump", &tool.lat, -1, first);
	unlink(path);
	free(lib.lat.v);
	free(tool.lat.v);
	return lib.lat.n == 0 ? 2 : 0;
}

int main(int argc, char **argv)
{
	config c = { 3.0, 10, 2000, 50, NULL, 0 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--json") == 0)
			c.json = 1;
		else if (v && strcmp(a, "--seconds") == 0 && (c.seconds = atof(v)) > 0 && ++i)
			continue;
		else if (v && strcmp(a, "--interval") == 0 && (c.interval_ms = (unsigned)atoi(v)) > 0 && ++i)
			continue;
		else if (v && strcmp(a, "--period-us") == 0 && (c.period_us = (unsigned)atoi(v)) > 0 && ++i)
			continue;
		else if (v && strcmp(a, "--filler") == 0 && ++i)
			c.filler = (unsigned)atoi(v);
		else if (v && strcmp(a, "--trace-dump") == 0 && ++i)
			c.trace_dump = v;
		else {
			fprintf(stderr, "usage: nt_bench_follow [--seconds S] [--interval MS] "
					"[--period-us US] [--filler N] [--trace-dump PATH] [--json]\n");
			return 2;
		}
	}
	char dir[] = "/tmp/nt-bench-follow-XXXXXX";
	if (mkdtemp(dir) == NULL) {
		perror("nt_bench_follow: mkdtemp");
		return 2;
	}
	int first = 1, rc = 0;
	if (c.json)
		printf("{\"interval_ms\": %u, \"period_us\": %u, \"filler_per_ms\": %u, ", c.interval_ms,
		       c.period_us, c.filler);
	static const struct { int mode; const char *name; } modes[] = {
		{ NT_MODE_ONESHOT, "oneshot" }, { NT_MODE_CIRCULAR, "circular" },
		{ NT_MODE_STREAMING, "streaming" } };
	for (size_t m = 0; m < 3; m++)
		rc |= run_mode(&c, modes[m].mode, modes[m].name, dir, &first);
	if (c.json)
		printf("}\n");
	rmdir(dir);
	return rc;
}
