/*
 * nt_bench_manager - what recording through the trace manager costs, beside an in-process
 * session, measured in the same run (this machine is shared and noisy: the cases are
 * interleaved, repeated, and compared as medians).
 *
 *   hot path   NT_BEGIN + NT_END pairs on one thread, circular mode, 4 MiB: in a process
 *              with its own session (nt_start) vs in a process registered with trace-record's
 *              manager (the manager's memfd buffer). Each run is a fresh child process;
 *              the ratio is registered / in-process.
 *   start-up   from launching `trace-record -- COMMAND` to COMMAND's first moment with
 *              recording on (its main(); registration waited for the manager's START).
 *   fan-out    16 processes, one thread each, streaming mode with 1 MiB buffers, making
 *              events as fast as they can for a fixed count: events per second the manager
 *              saved (decoded from the archive over the recording's wall time) and the share
 *              dropped because the manager was late.
 *   sections   (--part sections: this alone) one process writing --shape-events events of the zone and of the mixed shape
 *              at full rate (nt_bench_shapes.h), recorded by trace-record in oneshot mode
 *              (a buffer that holds them all) and in streaming mode (the default buffer,
 *              saved by the manager's saver thread as it goes): bundle bytes on disk per
 *              event, streaming ÷ oneshot within each of --reps rounds, and the events
 *              streaming lost (issue 29: the manager's streaming sections compress too).
 *
 *   nt_bench_manager --trace-record PATH [--part sections] [--reps N] [--pairs N]
 *                    [--shape-events N] [--json]
 * With --json the last line is one JSON object.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>
#include "nt_bench_opts.h"
#include "nt_bench_scratch.h"
#include "nt_bench_shapes.h"
#include "nt_bench_util.h"

extern char **environ;

#define FANOUT 16

/* ---- the child roles (this program run again) --------------------------------------------- */

/* --child-pairs N: measures pairs in whatever session this process has (its own when not
 * registered) and prints "ns_per_event startup_ns recording". */
static int child_pairs(uint64_t pairs)
{
	uint64_t t = now_ns();
	const char *t0 = getenv("NT_BENCH_T0");
	int own = !nt_provider_is_registered();
	if (own) {
		nt_config cfg;
		nt_config_init(&cfg);
		cfg.mode = NT_MODE_CIRCULAR;
		cfg.buffer_size = 4u << 20;
		if (nt_start(&cfg) != NT_OK) {
			fprintf(stderr, "nt_bench_manager: %s\n", nt_last_error());
			return 1;
		}
	}
	int recording = nt_is_recording();
	pairs_loop(pairs / 10); /* warm up: thread and call site registered, chunk claimed */
	double ns = pairs_loop(pairs);
	if (own) { /* finished into a scratch file, removed at once: only the loop is measured */
		char path[600];
		nt_bench_scratch(path, sizeof(path), "own.ntrace");
		nt_finish(path);
		unlink(path);
	}
	printf("%.3f %" PRIu64 " %d\n", ns, t0 ? t - (uint64_t)strtoull(t0, NULL, 10) : 0, recording);
	return recording ? 0 : 1;
}

/* --child-stream N: N Instant events as fast as possible. */
static int child_stream(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		NT_INSTANT("bench", "stream", NT_U64("i", i));
	return nt_is_recording() ? 0 : 1;
}

/* --child-shape zone|mixed N: N events of the shape as fast as possible. */
static int child_shape(const char *shape, uint64_t n)
{
	nt_bench_shape sh = strcmp(shape, "zone") == 0 ? SHAPE_ZONE : SHAPE_MIXED;
	nt_shape_loops[sh](n / nt_bench_shape_events[sh]);
	return nt_is_recording() ? 0 : 1;
}

/* ---- the parent ------------------------------------------------------------------------------ */

typedef struct bench_args {
	const char *self, *trace_record;
	const char *dir; /* the sections part's private scratch folder */
	int reps;
	uint64_t pairs, shape_events;
	int json, sections_only;
} bench_args;

/* Runs argv, its stdout into `out` (cap bytes); returns the exit status or -1. */
static int run_capture(char *const argv[], char *out, size_t cap)
{
	int pfd[2];
	if (pipe(pfd) != 0)
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	pid_t pid;
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		errno = rc;
		return -1;
	}
	size_t n = 0;
	ssize_t k;
	while (n + 1 < cap && (k = read(pfd[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = '\0';
	close(pfd[0]);
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void tmp_archive(char *buf, size_t cap, const char *tag)
{
	char name[64];
	snprintf(name, sizeof(name), "%s.ntrace", tag);
	nt_bench_scratch(buf, cap, name);
}

/* One child measuring pairs, registered (under trace-record) or not. Returns ns per event,
 * and *startup_ns for the registered one; < 0 on failure. */
static double one_pairs_run(const bench_args *b, int registered, double *startup_ns)
{
	char pairs[32], out[256], path[600], t0[32];
	snprintf(pairs, sizeof(pairs), "%" PRIu64, b->pairs);
	tmp_archive(path, sizeof(path), "pairs");
	snprintf(t0, sizeof(t0), "%" PRIu64, now_ns());
	setenv("NT_BENCH_T0", t0, 1);
	char *direct[] = { (char *)b->self, "--child-pairs", pairs, NULL };
	char *traced[] = { (char *)b->trace_record, "-o", path, "--buffering-mode", "circular",
			   "--buffer-size", "4M", "--", (char *)b->self, "--child-pairs", pairs,
			   NULL };
	int rc = run_capture(registered ? traced : direct, out, sizeof(out));
	unlink(path);
	double ns;
	uint64_t startup;
	int recording;
	if (rc != 0 || sscanf(out, "%lf %" SCNu64 " %d", &ns, &startup, &recording) != 3 ||
	    !recording) {
		fprintf(stderr, "nt_bench_manager: the %s run failed (status %d, output '%s')\n",
			registered ? "registered" : "in-process", rc, out);
		return -1;
	}
	if (startup_ns)
		*startup_ns = (double)startup;
	return ns;
}

static int count_event(void *ctx, const nt_reader_event *ev)
{
	(void)ev;
	++*(uint64_t *)ctx;
	return 0;
}

/* The fan-out: FANOUT streaming processes under one trace-record. */
static int fanout_run(const bench_args *b, uint64_t per_process, double *events_s,
		      double *drop_share)
{
	char path[600], script[512], out[64];
	tmp_archive(path, sizeof(path), "fanout");
	snprintf(script, sizeof(script),
		 "i=0; while [ $i -lt %d ]; do \"$0\" --child-stream %" PRIu64 " & i=$((i+1)); "
		 "done; wait",
		 FANOUT, per_process);
	char *argv[] = { (char *)b->trace_record, "-o", path, "--buffering-mode", "streaming",
			 "--buffer-size", "1M", "--", "/bin/sh", "-c", script,
			 (char *)b->self, NULL };
	uint64_t t0 = now_ns();
	int rc = run_capture(argv, out, sizeof(out));
	double secs = (double)(now_ns() - t0) / 1e9;
	nt_reader_error err;
	nt_reader *r = rc == 0 ? nt_reader_open(path, &err) : NULL;
	unlink(path);
	if (r == NULL) {
		fprintf(stderr, "nt_bench_manager: the fan-out run failed (status %d%s%s)\n", rc,
			rc == 0 ? ": " : "", rc == 0 ? err.message : "");
		return 0;
	}
	uint64_t decoded = 0;
	nt_reader_callbacks cb = { .on_event = count_event };
	nt_reader_visit(r, &cb, &decoded, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP);
	uint64_t dropped = nt_reader_info(r)->events_dropped;
	uint32_t sections = nt_reader_section_count(r);
	nt_reader_close(r);
	if (sections != FANOUT)
		fprintf(stderr, "nt_bench_manager: %u sections, not %d\n", sections, FANOUT);
	*events_s = (double)decoded / secs;
	*drop_share = (double)dropped / (double)(decoded + dropped ? decoded + dropped : 1);
	return sections == FANOUT;
}

/* One process writing b->shape_events events of `shape` under trace-record in `mode`
 * (oneshot with a buffer for all of them, or streaming with the default one): the bundle's
 * bytes on disk per event saved, and the events made but not saved. */
static int section_run(const bench_args *b, const char *shape, const char *mode, double *bpe,
		       uint64_t *lost)
{
	char path[4096], out[64], events[32], size[32];
	snprintf(path, sizeof(path), "%s/%s-%s.ntrace", b->dir, shape, mode);
	snprintf(events, sizeof(events), "%" PRIu64, b->shape_events);
	snprintf(size, sizeof(size), "%" PRIu64 "M", (b->shape_events * 16 >> 20) + 16);
	int oneshot = strcmp(mode, "oneshot") == 0;
	char *argv[] = { (char *)b->trace_record, "-o", path, "--buffering-mode", (char *)mode,
			 "--buffer-size", oneshot ? size : "16M", "--", (char *)b->self,
			 "--child-shape", (char *)shape, events, NULL };
	int rc = run_capture(argv, out, sizeof(out));
	struct stat sb;
	nt_reader_error err;
	nt_reader *r = rc == 0 && stat(path, &sb) == 0 ? nt_reader_open(path, &err) : NULL;
	unlink(path);
	if (r == NULL) {
		fprintf(stderr, "nt_bench_manager: the %s %s run failed (status %d)\n", mode, shape,
			rc);
		return 0;
	}
	uint64_t decoded = 0;
	nt_reader_callbacks cb = { .on_event = count_event };
	nt_reader_visit(r, &cb, &decoded, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP);
	nt_reader_close(r);
	unsigned per = strcmp(shape, "zone") == 0 ? 2 : 3;
	uint64_t made = b->shape_events / per * per;
	*lost = made > decoded ? made - decoded : 0;
	*bpe = (double)sb.st_blocks * 512.0 / (double)(decoded ? decoded : 1);
	return decoded > 0;
}

typedef struct section_figures {
	double oneshot_bpe, stream_bpe, ratio, lost_pct;
} section_figures;

/* b->reps rounds of oneshot then streaming: medians, and the worst round's loss. */
static int sections_compare(const bench_args *b, const char *shape, section_figures *f)
{
	double one[101], str[101], ratio[101];
	f->lost_pct = 0;
	for (int i = 0; i < b->reps; i++) {
		uint64_t lost_one, lost;
		if (!section_run(b, shape, "oneshot", &one[i], &lost_one) ||
		    !section_run(b, shape, "streaming", &str[i], &lost))
			return 0;
		ratio[i] = str[i] / one[i];
		double pct = 100.0 * (double)lost / (double)b->shape_events;
		f->lost_pct = pct > f->lost_pct ? pct : f->lost_pct;
	}
	f->oneshot_bpe = median(one, b->reps);
	f->stream_bpe = median(str, b->reps);
	f->ratio = median(ratio, b->reps);
	printf("trace-record sections, %s, %" PRIu64 " events: bytes/event oneshot %.3f streaming "
	       "%.3f (x%.2f, median of %d), streaming lost %.2f%% (worst round)\n", shape,
	       b->shape_events, f->oneshot_bpe, f->stream_bpe, f->ratio, b->reps, f->lost_pct);
	return 1;
}

static int sections_part(bench_args *b)
{
	char dir[1024];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/nt-bench-sections-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "nt_bench_manager: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	b->dir = dir;
	section_figures z, m;
	int ok = sections_compare(b, "zone", &z) && sections_compare(b, "mixed", &m);
	rmdir(dir);
	if (!ok)
		return 1;
	if (b->json)
		printf("{\"manager_streaming_disk_bytes_per_event_zone\": %.4f, "
		       "\"manager_streaming_disk_bytes_per_event_mixed\": %.4f, "
		       "\"manager_streaming_vs_oneshot_bytes_zone\": %.4f, "
		       "\"manager_streaming_vs_oneshot_bytes_mixed\": %.4f, "
		       "\"manager_streaming_lost_pct_zone\": %.4f, "
		       "\"manager_streaming_lost_pct_mixed\": %.4f}\n",
		       z.stream_bpe, m.stream_bpe, z.ratio, m.ratio, z.lost_pct, m.lost_pct);
	return 0;
}

/* Reads the command line into *b: 1, or 0 after saying what is wrong. */
static int parse(int argc, char **argv, bench_args *b)
{
	uint64_t reps = (uint64_t)b->reps;
	const char *part = NULL;
	const nt_bench_opt opts[] = {
		NT_BENCH_TEXT("--trace-record", "PATH", &b->trace_record),
		NT_BENCH_TEXT("--part", "sections", &part),
		NT_BENCH_NUMBER("--reps", "N", &reps, 1, 101),
		NT_BENCH_NUMBER("--pairs", "N", &b->pairs, 1, NT_BENCH_MANY),
		NT_BENCH_NUMBER("--shape-events", "N", &b->shape_events, 1000, NT_BENCH_MANY),
		NT_BENCH_FLAG("--json", &b->json),
	};
	if (!NT_BENCH_PARSE("nt_bench_manager", argc, argv, opts))
		return 0;
	b->reps = (int)reps;
	if (part != NULL && strcmp(part, "sections") != 0) {
		fprintf(stderr, "nt_bench_manager: --part takes 'sections', not '%s'\n", part);
		return 0;
	}
	b->sections_only = part != NULL;
	if (b->trace_record == NULL)
		fputs("nt_bench_manager: --trace-record PATH is needed\n", stderr);
	return b->trace_record != NULL;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--child-pairs") == 0)
		return child_pairs(strtoull(argv[2], NULL, 10));
	if (argc == 3 && strcmp(argv[1], "--child-stream") == 0)
		return child_stream(strtoull(argv[2], NULL, 10));
	if (argc == 4 && strcmp(argv[1], "--child-shape") == 0)
		return child_shape(argv[2], strtoull(argv[3], NULL, 10));
	bench_args b = { .reps = 7, .pairs = 2000000, .shape_events = 8000000 };
	if (!parse(argc, argv, &b))
		return 2;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	b.self = self;
	unsetenv("NANOTRACE_MANAGER"); /* the in-process runs must not register */
	if (b.sections_only)
		return sections_part(&b);

	double own[101], reg[101], startup[101];
	for (int i = 0; i < b.reps; i++) { /* interleaved: drift hits both cases alike */
		own[i] = one_pairs_run(&b, 0, NULL);
		reg[i] = one_pairs_run(&b, 1, &startup[i]);
		if (own[i] < 0 || reg[i] < 0)
			return 1;
	}
	double m_own = median(own, b.reps), m_reg = median(reg, b.reps);
	double m_start = median(startup, b.reps) / 1e6;
	double events_s = 0, drops = 0;
	if (!fanout_run(&b, 2000000, &events_s, &drops))
		return 1;
	printf("hot path, ns/event      in-process %.2f   registered %.2f   ratio %.3f\n", m_own,
	       m_reg, m_reg / m_own);
	printf("start-up, trace-record launch to first event possible: %.2f ms (median of %d)\n",
	       m_start, b.reps);
	printf("fan-out, %d streaming processes: %.2f M events/s saved, %.2f%% dropped\n", FANOUT,
	       events_s / 1e6, drops * 100);
	if (b.json)
		printf("{\"inprocess_ns_per_event\": %.3f, \"registered_ns_per_event\": %.3f, "
		       "\"registered_ratio\": %.4f, \"startup_ms\": %.3f, "
		       "\"fanout_events_per_s\": %.0f, \"fanout_drop_share\": %.5f}\n",
		       m_own, m_reg, m_reg / m_own, m_start, events_s, drops);
	return 0;
}
