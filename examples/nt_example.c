/*
 * nt_example.c - nanotrace as an installed library: record a multi-threaded program with
 * libnanotrace, then read the archive back with libnanotrace-reader and check that every
 * event arrived. Built outside this source tree, against what `meson install` put in a
 * prefix (README "Install and use the library"):
 *
 *     cc -o nt_example nt_example.c $(pkg-config --cflags --libs nanotrace nanotrace-reader) \
 *        -Wl,-rpath,"$(pkg-config --variable=libdir nanotrace)"
 *     ./nt_example out.ntrace [THREADS [ITEMS]]
 *     trace-dump out.ntrace
 *
 * Exit status: 0 when the archive holds every item of every thread, 1 otherwise (or on a
 * usage error), with one line on stderr saying what is wrong.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>

#define MAX_THREADS 16

typedef struct worker {
	int id;
	unsigned items;
	pthread_t thread;
} worker;

/* Each worker names its thread, wraps its work in one duration (NT_SCOPE ends it when the
 * function returns) and records one instant event per item. Recording never blocks or
 * allocates: each thread writes into its own chunk of the shared arena. */
static void *work(void *arg)
{
	worker *w = arg;
	char name[32];
	snprintf(name, sizeof(name), "worker-%d", w->id);
	nt_thread_set_name(name); /* copied: a local buffer is fine */
	NT_SCOPE("example", "work");
	for (unsigned i = 0; i < w->items; i++)
		NT_INSTANT("example", "item", NT_U32("index", i));
	return NULL;
}

/* Record: start a session writing to `path`, run the workers, finish (writes the archive). */
static int record(const char *path, worker *ws, int threads)
{
	nt_config cfg;
	nt_config_init(&cfg); /* oneshot mode, 4 MiB arena, every category */
	cfg.path = path;      /* the arena is the file itself while recording */
	if (nt_start(&cfg) != NT_OK) {
		fprintf(stderr, "nt_example: %s\n", nt_last_error());
		return 0;
	}
	for (int t = 0; t < threads; t++)
		if (pthread_create(&ws[t].thread, NULL, work, &ws[t]) != 0) {
			fprintf(stderr, "nt_example: cannot start thread %d\n", t);
			return 0;
		}
	for (int t = 0; t < threads; t++)
		pthread_join(ws[t].thread, NULL);
	if (nt_finish(NULL) != NT_OK) { /* NULL: compact the arena file at cfg.path */
		fprintf(stderr, "nt_example: %s\n", nt_last_error());
		return 0;
	}
	return 1;
}

/* What the read-back counts: items per worker thread, found by its name. */
typedef struct tally {
	unsigned long long items[MAX_THREADS];
	unsigned long long index_sum[MAX_THREADS];
} tally;

static int on_event(void *ctx, const nt_reader_event *ev)
{
	tally *t = ctx;
	int id;
	if (ev->kind != NT_KIND_INSTANT || strcmp(ev->name, "item") != 0 ||
	    sscanf(ev->thread->name, "worker-%d", &id) != 1 || id < 0 || id >= MAX_THREADS)
		return 0;
	t->items[id]++;
	if (ev->arg_count == 1 && strcmp(ev->args[0].name, "index") == 0)
		t->index_sum[id] += ev->args[0].value.u64;
	return 0; /* go on */
}

static void on_error(void *ctx, uint64_t offset, const char *message)
{
	(void)ctx;
	fprintf(stderr, "nt_example: damaged archive at byte %llu: %s\n",
		(unsigned long long)offset, message);
}

/* Read back: open the archive (validated: it is untrusted input), visit every event. */
static int read_back(const char *path, const worker *ws, int threads)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	if (r == NULL) {
		fprintf(stderr, "nt_example: %s\n", err.message);
		return 0;
	}
	tally t = { { 0 }, { 0 } };
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error };
	int rc = nt_reader_visit(r, &cb, &t, NT_ORDER_TIME, NT_ON_CORRUPT_STOP);
	nt_reader_close(r);
	int ok = rc == 0;
	for (int i = 0; i < threads; i++) {
		unsigned long long n = ws[i].items;
		if (t.items[i] != n || t.index_sum[i] != n * (n - 1) / 2) {
			fprintf(stderr, "nt_example: worker-%d: %llu items read back, %llu recorded\n",
				i, t.items[i], n);
			ok = 0;
		}
	}
	if (ok)
		printf("nt_example: %s: %d threads x %u items read back (libnanotrace %s, "
		       "libnanotrace-reader %s)\n", path, threads, ws[0].items, nt_version(),
		       nt_reader_version());
	return ok;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 4;
	long items = argc > 3 ? atol(argv[3]) : 1000;
	if (argc < 2 || argc > 4 || threads < 1 || threads > MAX_THREADS || items < 1 ||
	    items > 100000) {
		fprintf(stderr, "usage: nt_example ARCHIVE [THREADS (1-%d) [ITEMS (1-100000)]]\n",
			MAX_THREADS);
		return 1;
	}
	worker ws[MAX_THREADS];
	for (int i = 0; i < threads; i++)
		ws[i] = (worker){ .id = i, .items = (unsigned)items };
	if (!record(argv[1], ws, threads))
		return 1;
	return read_back(argv[1], ws, threads) ? 0 : 1;
}
