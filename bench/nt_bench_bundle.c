/*
 * nt_bench_bundle - a bundle of many short processes against one archive holding the same
 * events (issue 29: "bundles scale with sections"), read in the same run:
 *
 *   text       trace-dump's text rendering (open, render into /dev/null, close), M ev/s of
 *              each, and the bundle's rate over the single archive's (goal >= 0.5)
 *   stats      --stats (nt_render_stats), seconds of each, and the bundle's over the
 *              single archive's (goal <= 2)
 *   memory     the reader's private (anonymous) memory at its peak while rendering text,
 *              in KiB over what the process had before, for each; the limit the issue sets
 *              is 2 x the single archive's + 1 KiB per section
 *
 * Both are recorded by trace-record, as a user records a build: the bundle over a process
 * tree (/bin/sh starting SECTIONS copies of this program, a few at a time, each making
 * EVENTS one-argument instants and exiting), the single archive over one copy making
 * SECTIONS x EVENTS. The text and stats timings are interleaved, medians of --reps.
 *
 *   nt_bench_bundle --trace-record PATH [--sections N] [--events N] [--reps N] [--json]
 *
 * Defaults: 20,000 sections of 50 events (1 M events). With --json the last line is one
 * JSON object (bundle20k_*: the keys name the case; bundle20k_sections says how
 * many sections were measured).
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
#include "nt_bench_opts.h"
#include "nt_bench_scratch.h"
#include "nt_bench_util.h"

/* How many leaves the tree runs at once. */
#define TREE_WIDTH 8

/* --leaf N: N instants with one argument, in whatever session the manager gave this
 * process (automatic registration waits for its START); exit 1 when it gave none. */
static int leaf(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		NT_INSTANT("bench", "step", NT_I64("i", (int64_t)i));
	return nt_is_recording() ? 0 : 1;
}

/* Runs argv to its end with stdout and stderr to /dev/null; its exit status, or -1. */
static int run_quiet(char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		FILE *null = freopen("/dev/null", "w", stdout);
		(void)null;
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* trace-record of `procs` leaves of `events` each (procs 1: the leaf alone, no shell). */
static int record(const char *trace_record, const char *self, const char *path,
		  uint64_t procs, uint64_t events)
{
	char n[32], script[512], size[32];
	snprintf(n, sizeof(n), "%" PRIu64, events);
	/* oneshot: room for every event of the one process (the tree's each fit in 64 KiB) */
	snprintf(size, sizeof(size), "%" PRIu64 "M", events * 32 / (1u << 20) + 4);
	snprintf(script, sizeof(script),
		 "i=0; while [ $i -lt %" PRIu64 " ]; do \"$0\" --leaf %" PRIu64 " & "
		 "i=$((i+1)); [ $((i %% %d)) -eq 0 ] && wait; done; wait",
		 procs, events, TREE_WIDTH);
	char *tree[] = { (char *)trace_record, "-o", (char *)path, "--buffer-size", "64K", "--",
			 "/bin/sh", "-c", script, (char *)self, NULL };
	char *one[] = { (char *)trace_record, "-o", (char *)path, "--buffer-size", size, "--",
			(char *)self, "--leaf", n, NULL };
	uint64_t t0 = now_ns();
	int rc = run_quiet(procs == 1 ? one : tree);
	fprintf(stderr, "nt_bench_bundle: recorded %" PRIu64 " process%s in %.1f s\n", procs,
		procs == 1 ? "" : "es", (double)(now_ns() - t0) / 1e9);
	if (rc != 0)
		fprintf(stderr, "nt_bench_bundle: trace-record exited with status %d\n", rc);
	return rc == 0;
}

enum { RENDER_TEXT, RENDER_STATS };

/* Seconds for one open + rendering into `out` + close; -1 when it fails. */
static double time_render(const char *path, int what, FILE *out)
{
	uint64_t t0 = now_ns();
	nt_reader *r = nt_reader_open(path, NULL);
	if (r == NULL)
		return -1;
	nt_render_options opt;
	nt_render_options_init(&opt);
	int rc = what == RENDER_TEXT ? nt_render_text(r, out, &opt) : nt_render_stats(r, out, &opt);
	fflush(out);
	nt_reader_close(r);
	return rc < 0 ? -1 : (double)(now_ns() - t0) / 1e9;
}

/* A sink for the text rendering that samples the memory at each block written. */
static ssize_t sample_write(void *cookie, const char *buf, size_t n)
{
	(void)buf;
	long *peak = cookie, kb = nt_bench_anon_kb();
	if (kb > *peak)
		*peak = kb;
	return (ssize_t)n;
}

/* --child-memory PATH: in a fresh process (exec'd: no heap of earlier measurements), the
 * peak anonymous memory of open + text rendering + before the close, over the process's
 * before; printed in KiB. */
static int child_memory(const char *path)
{
	long before = nt_bench_anon_kb(), peak = before;
	cookie_io_functions_t io = { .write = sample_write };
	FILE *out = fopencookie(&peak, "w", io);
	nt_reader *r = out ? nt_reader_open(path, NULL) : NULL;
	if (r == NULL)
		return 1;
	nt_render_options opt;
	nt_render_options_init(&opt);
	int rc = nt_render_text(r, out, &opt);
	fflush(out);
	sample_write(&peak, NULL, 0);
	nt_reader_close(r);
	fclose(out);
	printf("%ld\n", peak - before);
	return rc < 0;
}

static long reader_anon_kb(const char *self, const char *path)
{
	char *argv[] = { (char *)self, "--child-memory", (char *)path, NULL };
	return nt_bench_run_number(argv);
}

static uint64_t events_of(const char *path, uint32_t *sections)
{
	nt_reader *r = nt_reader_open(path, NULL);
	uint64_t n = 0;
	if (r == NULL)
		return 0;
	*sections = nt_reader_section_count(r);
	for (uint32_t i = 0; i < *sections; i++)
		n += nt_reader_section_at(r, i)->info ? nt_reader_section_at(r, i)->info->events_written : 0;
	nt_reader_close(r);
	return n;
}

typedef struct results {
	uint64_t events;
	uint32_t sections;
	double text_s[2], stats_s[2]; /* [bundle, single] */
	long kb[2];
} results;

/* Text and stats of both files, interleaved; medians of `reps`. */
static int measure(results *b, const char *self, const char *paths[2], int reps)
{
	FILE *devnull = fopen("/dev/null", "w");
	double t[2][2][101];
	int ok = devnull != NULL;
	for (int i = 0; ok && i < reps; i++)
		for (int f = 0; f < 2 && ok; f++)
			for (int w = 0; w < 2 && ok; w++)
				ok = (t[f][w][i] = time_render(paths[f], w, devnull)) >= 0;
	if (devnull)
		fclose(devnull);
	for (int f = 0; ok && f < 2; f++) {
		b->text_s[f] = median(t[f][RENDER_TEXT], reps);
		b->stats_s[f] = median(t[f][RENDER_STATS], reps);
		ok = (b->kb[f] = reader_anon_kb(self, paths[f])) >= 0;
	}
	return ok;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--leaf") == 0)
		return leaf(strtoull(argv[2], NULL, 10));
	if (argc == 3 && strcmp(argv[1], "--child-memory") == 0)
		return child_memory(argv[2]);
	const char *trace_record = NULL;
	uint64_t sections = 20000, events = 50, nreps = 3;
	int json = 0;
	const nt_bench_opt opts[] = {
		NT_BENCH_TEXT("--trace-record", "PATH", &trace_record),
		NT_BENCH_NUMBER("--sections", "N", &sections, 2, 1000000),
		NT_BENCH_NUMBER("--events", "N", &events, 1, 1000000),
		NT_BENCH_NUMBER("--reps", "N", &nreps, 1, 101),
		NT_BENCH_FLAG("--json", &json),
	};
	if (!NT_BENCH_PARSE("nt_bench_bundle", argc, argv, opts))
		return 2;
	if (trace_record == NULL) {
		fputs("nt_bench_bundle: --trace-record PATH is needed\n", stderr);
		return 2;
	}
	int reps = (int)nreps;
	char self[4096], bundle[600], single[600];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	nt_bench_scratch(bundle, sizeof(bundle), "many.ntbundle");
	nt_bench_scratch(single, sizeof(single), "one.ntbundle");
	const char *paths[2] = { bundle, single };
	results b;
	memset(&b, 0, sizeof(b));
	uint32_t one_sections = 0;
	int ok = record(trace_record, self, bundle, sections, events) &&
		 record(trace_record, self, single, 1, sections * events);
	uint64_t one_events = ok ? events_of(single, &one_sections) : 0;
	ok = ok && (b.events = events_of(bundle, &b.sections)) == sections * events &&
	     one_events == b.events && measure(&b, self, paths, reps);
	unlink(bundle);
	unlink(single);
	if (!ok) {
		fprintf(stderr, "nt_bench_bundle: failed (%u sections, %" PRIu64 " events; the single "
			"archive %" PRIu64 ")\n", b.sections, b.events, one_events);
		return 1;
	}
	double text[2], limit = 2.0 * (double)b.kb[1] + (double)b.sections;
	for (int f = 0; f < 2; f++)
		text[f] = (double)b.events / b.text_s[f] / 1e6;
	printf("%u sections, %" PRIu64 " events (%" PRIu64 " each)\n", b.sections, b.events, events);
	printf("text       bundle %.2f M ev/s   single %.2f M ev/s   ratio %.3f (goal >= 0.5)\n",
	       text[0], text[1], text[0] / text[1]);
	printf("--stats    bundle %.3f s   single %.3f s   ratio %.2f (goal <= 2)\n", b.stats_s[0],
	       b.stats_s[1], b.stats_s[0] / b.stats_s[1]);
	printf("memory     bundle %ld KiB   single %ld KiB   limit %.0f KiB (2 x single + 1 KiB "
	       "per section)\n", b.kb[0], b.kb[1], limit);
	if (json)
		printf("{\"bundle20k_sections\": %u, \"bundle20k_events\": %" PRIu64 ", "
		       "\"bundle20k_text_mev_s\": %.3f, \"bundle20k_single_text_mev_s\": %.3f, "
		       "\"bundle20k_text_vs_single\": %.3f, \"bundle20k_stats_s\": %.4f, "
		       "\"bundle20k_single_stats_s\": %.4f, \"bundle20k_stats_vs_single\": %.3f, "
		       "\"bundle20k_reader_kb\": %ld, \"bundle20k_single_reader_kb\": %ld, "
		       "\"bundle20k_reader_kb_limit\": %.0f}\n",
		       b.sections, b.events, text[0], text[1], text[0] / text[1], b.stats_s[0],
		       b.stats_s[1], b.stats_s[0] / b.stats_s[1], b.kb[0], b.kb[1], limit);
	return 0;
}
