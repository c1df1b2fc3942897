/*
 * nanotrace-demo - records a realistic multi-threaded trace: a request server with worker
 * threads (nested durations, typed arguments), a cache with counters, and a logger.
 *
 *     nanotrace-demo OUTPUT [--mode oneshot|circular] [--threads N] [--requests N]
 *     trace-dump OUTPUT
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nanotrace.h"

static const char usage[] =
	"usage: nanotrace-demo OUTPUT [--mode oneshot|circular] [--threads N] [--requests N]\n"
	"  Records a multi-threaded request-server trace into OUTPUT (a nanotrace archive).\n"
	"  --mode       buffering mode (default oneshot)\n"
	"  --threads    worker threads, 1-64 (default 4)\n"
	"  --requests   requests per worker, 1-1000000 (default 200)\n";

typedef struct worker {
	int id;
	int requests;
	pthread_t thread;
} worker;

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
	for (int n = 0; n < w->requests; n++)
		handle_request(w, n);
	return NULL;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v < lo || v > hi)
		return 0;
	*out = (int)v;
	return 1;
}

int main(int argc, char **argv)
{
	const char *output = NULL;
	int threads = 4, requests = 200;
	nt_config cfg;
	nt_config_init(&cfg);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc) {
			const char *m = argv[++i];
			if (strcmp(m, "oneshot") == 0)
				cfg.mode = NT_MODE_ONESHOT;
			else if (strcmp(m, "circular") == 0)
				cfg.mode = NT_MODE_CIRCULAR;
			else {
				fprintf(stderr, "nanotrace-demo: unknown mode '%s'\n%s", m, usage);
				return 1;
			}
		} else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
			if (!parse_int(argv[++i], 1, 64, &threads)) {
				fprintf(stderr, "nanotrace-demo: --threads must be 1-64\n");
				return 1;
			}
		} else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
			if (!parse_int(argv[++i], 1, 1000000, &requests)) {
				fprintf(stderr, "nanotrace-demo: --requests must be 1-1000000\n");
				return 1;
			}
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "nanotrace-demo: unknown option '%s'\n%s", argv[i], usage);
			return 1;
		} else if (output == NULL) {
			output = argv[i];
		} else {
			fprintf(stderr, "nanotrace-demo: only one OUTPUT may be given\n%s", usage);
			return 1;
		}
	}
	if (output == NULL) {
		fprintf(stderr, "nanotrace-demo: no OUTPUT given\n%s", usage);
		return 1;
	}
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nanotrace-demo: %s\n", nt_last_error());
		return 1;
	}
	nt_thread_set_name("main");
	NT_INSTANT("app", "startup", NT_I32("workers", threads), NT_I32("requests", requests));
	worker *ws = calloc((size_t)threads, sizeof(*ws));
	if (ws == NULL) {
		fprintf(stderr, "nanotrace-demo: out of memory\n");
		return 1;
	}
	{
		NT_SCOPE("app", "serve");
		for (int i = 0; i < threads; i++) {
			ws[i].id = i;
			ws[i].requests = requests;
			if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
				fprintf(stderr, "nanotrace-demo: cannot start thread %d\n", i);
				return 1;
			}
		}
		for (int tick = 0; tick < 5; tick++) {
			spin_ns(200000);
			NT_COUNTER("cache", "entries", NT_U32("hits", __atomic_load_n(&cache_hits, __ATOMIC_RELAXED)),
				   NT_U32("misses", __atomic_load_n(&cache_misses, __ATOMIC_RELAXED)));
		}
		for (int i = 0; i < threads; i++)
			pthread_join(ws[i].thread, NULL);
	}
	NT_INSTANT("app", "shutdown");
	free(ws);
	if (nt_finish(output) != NT_OK) {
		fprintf(stderr, "nanotrace-demo: %s\n", nt_last_error());
		return 1;
	}
	nt_stats st;
	nt_get_stats(&st);
	fprintf(stderr, "nanotrace-demo: wrote %s (%u threads, %llu events dropped)\n", output,
		st.threads, (unsigned long long)st.events_dropped);
	return 0;
}
