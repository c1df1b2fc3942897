/*
 * nanotrace-demo - records a realistic multi-threaded trace: a request server with worker
 * threads (nested durations, typed arguments), a cache with counters, and a logger.
 *
 *     nanotrace-demo OUTPUT [options]      (see --help)
 *     trace-dump OUTPUT
 *
 * It always records through a file-backed arena at OUTPUT, so killing it at any moment
 * leaves OUTPUT readable by trace-dump.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nanotrace/nanotrace.h>
#include "format/nt_format.h"

static const char usage[] =
	"usage: nanotrace-demo OUTPUT [options]\n"
	"  Records a multi-threaded request-server trace into OUTPUT, a nanotrace archive.\n"
	"  The arena is the file itself while recording: killing the demo at any moment\n"
	"  (even with SIGKILL) leaves OUTPUT readable by trace-dump; a normal end compacts it.\n"
	"\n"
	"  --mode M            oneshot (default), circular or streaming\n"
	"  --buffer-size B     arena bytes, 65536 to 4294967296 (default 4194304, 16777216\n"
	"                      when streaming)\n"
	"  --duration-ms N     keep serving requests for N ms (default: --requests per worker)\n"
	"  --threads N         worker threads, 1-64 (default 4)\n"
	"  --requests N        requests per worker when no duration is given, 1-1000000\n"
	"                      (default 200)\n"
	"  -h, --help          this text\n"
	"  --version           the version and the archive format it writes\n"
	"\n"
	"Exit status: 0 success, 1 usage error or a trace that could not be written.\n";

typedef struct worker {
	int id;
	int requests;
	long duration_ms;
	pthread_t thread;
} worker;

static long elapsed_ms(const struct timespec *since)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000L + (now.tv_nsec - since->tv_nsec) / 1000000L;
}

static unsigned cache_hits, cache_misses; /* approximate: only a demo figure */

static void spin_ns(long ns)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static int cache_lookup(unsigned key)
{
	NT_SCOPE("cache", "lookup", NT_U32("key", key));
	int hit = key % 3 != 0;
	if (hit)
		__atomic_add_fetch(&cache_hits, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&cache_misses, 1, __ATOMIC_RELAXED);
	spin_ns(hit ? 200 : 2000);
	return hit;
}

static void handle_request(worker *w, int n)
{
	static const char *const paths[] = { "/index.html", "/api/users", "/api/orders",
					     "/static/app.js" };
	const char *path = paths[(unsigned)(n + w->id) % 4];
	NT_BEGIN("http", "request", NT_STR("path", path), NT_I64("request", n),
		 NT_I32("worker", w->id));
	{
		NT_SCOPE("http", "parse");
		spin_ns(500);
	}
	if (!cache_lookup((unsigned)(n * 7 + w->id))) {
		uint64_t t0 = nt_now();
		spin_ns(5000);
		NT_COMPLETE("db", "query", t0, NT_STR("sql", "SELECT * FROM orders WHERE id = ?"),
			    NT_F64("cost", 1.5 + n % 7), NT_BOOL("cached_plan", n % 2));
	}
	if (n % 50 == 49)
		NT_INSTANT("http", "slow_client", NT_PTR("conn", w), NT_U64("bytes", 1ull << 33));
	NT_END("http", "request", NT_I32("status", n % 17 == 0 ? 503 : 200));
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	char name[32];
	snprintf(name, sizeof(name), "worker-%d", w->id);
	pthread_setname_np(pthread_self(), name);
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int n = 0; w->duration_ms > 0 ? elapsed_ms(&start) < w->duration_ms : n < w->requests; n++)
		handle_request(w, n);
	return NULL;
}

static int parse_num(const char *s, unsigned long long lo, unsigned long long hi,
		     unsigned long long *out)
{
	char *end;
	if (*s == '\0' || *s == '-')
		return 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end != '\0' || v < lo || v > hi)
		return 0;
	*out = v;
	return 1;
}

/* A usage error: one line naming what is wrong, a pointer to --help, exit status 1. */
static int bad_usage(void)
{
	fprintf(stderr, "Try 'nanotrace-demo --help'.\n");
	return 1;
}

static int option_value(const char *v, const char *name, unsigned long long lo,
			unsigned long long hi, unsigned long long *out)
{
	if (!parse_num(v, lo, hi, out)) {
		fprintf(stderr, "nanotrace-demo: %s needs a number from %llu to %llu, not '%s'\n",
			name, lo, hi, v);
		return 0;
	}
	return 1;
}

typedef struct demo_args {
	const char *output;
	unsigned long long threads, requests, duration_ms, buffer;
} demo_args;

enum { OPT_MODE = 256, OPT_THREADS, OPT_REQUESTS, OPT_DURATION_MS, OPT_BUFFER_SIZE,
       OPT_VERSION };

/* The command line: adding an option is one row here and one case in parse_option(). */
static const struct option long_options[] = {
	{ "mode", required_argument, 0, OPT_MODE },
	{ "threads", required_argument, 0, OPT_THREADS },
	{ "requests", required_argument, 0, OPT_REQUESTS },
	{ "duration-ms", required_argument, 0, OPT_DURATION_MS },
	{ "buffer-size", required_argument, 0, OPT_BUFFER_SIZE },
	{ "help", no_argument, 0, 'h' },
	{ "version", no_argument, 0, OPT_VERSION },
	{ 0, 0, 0, 0 },
};

/* One option getopt_long returned: -1 to go on, or the exit status. */
static int parse_option(int c, const char *v, demo_args *a, nt_config *cfg)
{
	switch (c) {
	case 'h': fputs(usage, stdout); return 0;
	case OPT_VERSION:
		printf("nanotrace-demo (nanotrace) %s\nwrites archive format %d.%d\n",
		       nt_version(), NT_FORMAT_MAJOR, NT_FORMAT_MINOR);
		return 0;
	case OPT_MODE:
		cfg->mode = nt_mode_from_name(v);
		if (cfg->mode < 0) {
			fprintf(stderr, "nanotrace-demo: unknown mode '%s' (oneshot, circular or "
					"streaming)\n", v);
			return bad_usage();
		}
		return -1;
	case OPT_THREADS: return option_value(v, "--threads", 1, 64, &a->threads) ? -1 : bad_usage();
	case OPT_REQUESTS:
		return option_value(v, "--requests", 1, 1000000, &a->requests) ? -1 : bad_usage();
	case OPT_DURATION_MS:
		return option_value(v, "--duration-ms", 1, 86400000, &a->duration_ms) ? -1 : bad_usage();
	case OPT_BUFFER_SIZE:
		return option_value(v, "--buffer-size", 65536, 4ull << 30, &a->buffer) ? -1 : bad_usage();
	default: return bad_usage(); /* getopt_long named the option */
	}
}

/* Returns -1 to go on, or the exit status (help, version, usage error). */
static int parse_args(int argc, char **argv, demo_args *a, nt_config *cfg)
{
	int c;
	while ((c = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
		int rc = parse_option(c, optarg, a, cfg);
		if (rc >= 0)
			return rc;
	}
	if (optind == argc) {
		fprintf(stderr, "nanotrace-demo: no OUTPUT given\n");
		return bad_usage();
	}
	if (argc - optind > 1) {
		fprintf(stderr, "nanotrace-demo: only one OUTPUT may be given\n");
		return bad_usage();
	}
	a->output = argv[optind];
	return -1;
}

/* The "serve" span: the workers, and the main thread's counter ticks until they are done.
 * Returns 0 when a worker cannot be started. */
static int serve(worker *ws, const demo_args *a)
{
	NT_SCOPE("app", "serve");
	for (int i = 0; i < (int)a->threads; i++) {
		ws[i].id = i;
		ws[i].requests = (int)a->requests;
		ws[i].duration_ms = (long)a->duration_ms;
		if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
			fprintf(stderr, "nanotrace-demo: cannot start thread %d\n", i);
			return 0;
		}
	}
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (int tick = 0; tick < 5 || elapsed_ms(&start) < (long)a->duration_ms; tick++) {
		spin_ns(200000);
		NT_COUNTER("cache", "entries", NT_U32("hits", __atomic_load_n(&cache_hits, __ATOMIC_RELAXED)),
			   NT_U32("misses", __atomic_load_n(&cache_misses, __ATOMIC_RELAXED)));
	}
	for (int i = 0; i < (int)a->threads; i++)
		pthread_join(ws[i].thread, NULL);
	return 1;
}

int main(int argc, char **argv)
{
	demo_args a = { .threads = 4, .requests = 200, .buffer = 0 };
	nt_config cfg;
	nt_config_init(&cfg);
	int rc = parse_args(argc, argv, &a, &cfg);
	if (rc >= 0)
		return rc;
	cfg.path = a.output;
	cfg.buffer_size = (size_t)a.buffer;
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nanotrace-demo: %s\n", nt_last_error());
		return 1;
	}
	nt_thread_set_name("main");
	NT_INSTANT("app", "startup", NT_I32("workers", a.threads), NT_I32("requests", a.requests),
		   NT_I64("duration_ms", a.duration_ms));
	worker *ws = calloc((size_t)a.threads, sizeof(*ws));
	if (ws == NULL) {
		fprintf(stderr, "nanotrace-demo: out of memory\n");
		return 1;
	}
	if (!serve(ws, &a))
		return 1;
	NT_INSTANT("app", "shutdown");
	free(ws);
	/* Under a trace manager (trace-record) the session is the manager's: no file of ours. */
	int managed = nt_provider_is_registered();
	if (nt_finish(NULL) != NT_OK) { /* compacts the arena file in place */
		fprintf(stderr, "nanotrace-demo: %s\n", nt_last_error());
		return 1;
	}
	nt_stats st;
	nt_get_stats(&st);
	fprintf(stderr, "nanotrace-demo: %s %s (%u threads, %llu events dropped, %llu overwritten)\n",
		managed ? "recorded into the trace manager's buffer, not" : "wrote", a.output,
		st.threads, (unsigned long long)st.events_dropped,
		(unsigned long long)st.events_overwritten);
	return 0;
}
