/* trace_dump_follow.c - `trace-dump --follow`: renders an archive while its writer still
 * writes it, as `tail -f` does, and exits when the writer finishes (libnanotrace-reader's
 * LIVE FOLLOW). Its own command line, so that trace_dump.c only hands over to it.
 *
 *   trace-dump --follow [--format text|normal|perf|event] [-o af_unix:...] [--wait SECONDS]
 *              [--interval MS] ARCHIVE
 *
 * Exit status: 0 when the writer finished its archive (or its process ended without
 * finishing: a note says so on stderr), 1 usage error, 2 an archive that never appeared
 * within --wait, damage, or an output that could not be written, 130 on SIGINT (what was
 * read is written first). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <nanotrace/nanotrace_reader.h>
#include "trace_dump_follow.h"
#include "runtime/nt_term_escape.h"

static const char follow_usage[] =
	"usage: trace-dump --follow [--format text|normal|perf|event] [-o af_unix:...]\n"
	"                  [--wait SECONDS] [--interval MS] ARCHIVE\n"
	"  Renders ARCHIVE while a program still records it (a file-backed arena, oneshot or\n"
	"  circular, or a streaming file), new events within an interval of their\n"
	"  publication, and exits when the writer finishes (or its process is gone).\n"
	"  --format         text lines (default), or Git Trace2's NORMAL, PERF or EVENT of\n"
	"                   its Trace2 messages\n"
	"  -o, --output af_unix:[stream:|dgram:]PATH\n"
	"                   a Trace2 format: each line to that Unix socket, one message per\n"
	"                   line, as git's af_unix targets (no type: stream, then dgram)\n"
	"  --wait SECONDS  wait this long for ARCHIVE to appear (default: until SIGINT)\n"
	"  --interval MS   between polls, 1-1000 (default 10)\n"
	"Exit status: 0 the writer finished (or ended: a note on stderr), 1 usage error,\n"
	"2 no archive, damage or an output that could not be written, 130 SIGINT.\n";

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int keep_going(void *arg)
{
	(void)arg;
	return !interrupted;
}

int trace_dump_wants_follow(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--follow") == 0)
			return 1;
	return 0;
}

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "trace-dump: ");
	fprintf(stderr, what, arg);
	fprintf(stderr, "\nTry 'trace-dump --follow --help'.\n");
	return 1;
}

typedef struct follow_args {
	const char *path;
	const char *format;
	const char *output; /* -o af_unix:...: a Trace2 format's lines to a socket */
	double wait_s; /* < 0: until SIGINT */
	unsigned interval_ms;
} follow_args;

/* --follow's own options (getopt_long, as trace-dump's: --opt=value or --opt value). */
enum { FOLLOW_OPT_FOLLOW = 256, FOLLOW_OPT_FORMAT, FOLLOW_OPT_WAIT, FOLLOW_OPT_INTERVAL };

static const struct option follow_options[] = {
	{ "follow", no_argument, 0, FOLLOW_OPT_FOLLOW },
	{ "format", required_argument, 0, FOLLOW_OPT_FORMAT },
	{ "wait", required_argument, 0, FOLLOW_OPT_WAIT },
	{ "interval", required_argument, 0, FOLLOW_OPT_INTERVAL },
	{ "output", required_argument, 0, 'o' },
	{ "help", no_argument, 0, 'h' },
	{ 0, 0, 0, 0 },
};

/* One option. Returns -1 to go on, or the exit status. */
static int follow_option(follow_args *a, int c, const char *v, const char *arg)
{
	char *end;
	switch (c) {
	case FOLLOW_OPT_FOLLOW: return -1;
	case 'h': fputs(follow_usage, stdout); return 0;
	case 'o': a->output = v; return -1;
	case FOLLOW_OPT_FORMAT:
		if (strcmp(v, "text") != 0 && strcmp(v, "normal") != 0 && strcmp(v, "perf") != 0 &&
		    strcmp(v, "event") != 0)
			return usage_error("--follow renders text, normal, perf or event, not '%s'", v);
		a->format = v;
		return -1;
	case FOLLOW_OPT_WAIT:
		a->wait_s = strtod(v, &end);
		if (*v == '\0' || *end != '\0' || !(a->wait_s >= 0 && a->wait_s <= 1e6))
			return usage_error("--wait needs seconds from 0 to 1000000, not '%s'", v);
		return -1;
	case FOLLOW_OPT_INTERVAL: {
		long ms = strtol(v, &end, 10);
		if (*v == '\0' || *end != '\0' || ms < 1 || ms > 1000)
			return usage_error("--interval needs 1 to 1000 ms, not '%s'", v);
		a->interval_ms = (unsigned)ms;
		return -1;
	}
	default: /* an unknown option, one that does not combine, or a missing value */
		return usage_error("'%s': --follow takes --format, -o, --wait and --interval, each "
				   "with a value", arg);
	}
}

static int parse_follow(int argc, char **argv, follow_args *a)
{
	int c;
	optind = 0; /* glibc: start afresh */
	opterr = 0; /* usage_error names the option, as "trace-dump:" */
	while ((c = getopt_long(argc, argv, "ho:", follow_options, NULL)) != -1) {
		int rc = follow_option(a, c, optarg, argv[optind - 1]);
		if (rc >= 0)
			return rc;
	}
	for (int i = optind; i < argc; i++) {
		if (a->path != NULL)
			return usage_error("--follow takes one ARCHIVE, not also '%s'", argv[i]);
		a->path = argv[i];
	}
	if (a->path == NULL)
		return usage_error("%s", "--follow needs an ARCHIVE");
	if (a->output != NULL && strcmp(a->format, "text") == 0)
		return usage_error("%s", "-o af_unix:... needs a Trace2 format (normal, perf or event)");
	return -1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The archive, once it exists and can be opened (a writer creates it complete); NULL after
 * a message when --wait runs out, SIGINT comes, or what is there is no archive. */
static nt_follower *wait_for(const follow_args *a)
{
	double until = a->wait_s < 0 ? -1 : now_s() + a->wait_s;
	for (;;) {
		struct stat st;
		/* An empty file is one a writer has created and not yet written its header into
		 * (Git's Trace2 targets are opened before the session maps them): wait too. */
		int there = stat(a->path, &st) == 0;
		if ((there && (st.st_size > 0 || !S_ISREG(st.st_mode))) || (!there && errno != ENOENT)) {
			nt_reader_error err;
			nt_follower *f = nt_follow_open(a->path, &err);
			char shown[sizeof(err.message)];
			if (f == NULL)
				fprintf(stderr, "trace-dump: %s\n", nt_term_escape_str(shown, sizeof(shown),
										 err.message));
			return f;
		}
		if (interrupted || (until >= 0 && now_s() >= until)) {
			fprintf(stderr, "trace-dump: %s: %s%s\n", a->path,
				there ? "still empty: no archive" : "does not exist",
				interrupted ? "" : " (waited --wait seconds)");
			return NULL;
		}
		struct timespec ts = { 0, (long)a->interval_ms * 1000000L };
		nanosleep(&ts, NULL);
	}
}

static int render(const follow_args *a, nt_follower *f, FILE *out)
{
	if (strcmp(a->format, "text") == 0) {
		nt_render_options opt;
		nt_render_options_init(&opt);
		return nt_render_text_follow(f, out, &opt, a->interval_ms, keep_going, NULL);
	}
	nt_trace2_options t2;
	nt_trace2_options_init(&t2);
	t2.format = strcmp(a->format, "normal") == 0 ? NT_TRACE2_NORMAL
		    : strcmp(a->format, "perf") == 0 ? NT_TRACE2_PERF : NT_TRACE2_EVENT;
	return nt_render_trace2_follow(f, out, &t2, a->interval_ms, keep_going, NULL);
}

/* A Trace2 format's stream stays Git's bytes: once the archive is done, what its writer lost
 * (text ends with the same line) and a stream that had nothing to show are said on stderr,
 * as trace-dump says them without --follow. */
static void warn_trace2_done(const follow_args *a, const nt_reader *r)
{
	char line[256], path[4096];
	if (r == NULL)
		return;
	nt_term_escape_str(path, sizeof(path), a->path);
	if (nt_render_losses(nt_reader_info(r), line, sizeof(line)) != NULL)
		fprintf(stderr, "trace-dump: %s: lost: %s\n", path, line);
	if (nt_reader_process_count(r) == 0 || nt_reader_process_at(r, 0) == NULL)
		fprintf(stderr, "trace-dump: %s: no Trace2 messages (no process in it used Git's "
				"Trace2): nothing to show as %s; --format text shows its events\n",
			path, a->format);
}

int trace_dump_follow(int argc, char **argv)
{
	follow_args a = { NULL, "text", NULL, -1, 10 };
	int rc = parse_follow(argc, argv, &a);
	if (rc >= 0)
		return rc;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	/* SA_RESTART: a write to stdout interrupted by Ctrl-C goes on (no EINTR failure); the
	 * sleep between polls ends at once anyway (nanosleep is never restarted). */
	sa.sa_handler = on_sigint;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	/* A socket target is connected first: a listener that is not there is said at once. */
	FILE *out = a.output ? nt_trace2_socket_open(a.output, "trace-dump: --output") : stdout;
	if (out == NULL)
		return 2;
	nt_follower *f = wait_for(&a);
	if (f == NULL) {
		if (out != stdout)
			fclose(out);
		return interrupted ? 130 : 2;
	}
	errno = 0;
	int st = render(&a, f, out);
	int status = 0;
	if (st == NT_FOLLOW_FAILED && ferror(out)) {
		if (out == stdout) /* a socket's sender said why itself */
			fprintf(stderr, "trace-dump: writing standard output: %s\n",
				strerror(errno ? errno : EIO));
		status = 2;
	} else if (st == NT_FOLLOW_FAILED) {
		char shown[1024];
		fprintf(stderr, "trace-dump: %s\n", nt_follow_error(f)[0] ? nt_term_escape_str(
				shown, sizeof(shown), nt_follow_error(f)) : "out of memory");
		status = 2;
	} else if (st == NT_FOLLOW_ENDED) {
		fprintf(stderr, "trace-dump: %s: the writer's process ended without finishing the "
				"archive; shown as it left it\n", a.path);
	} else if (st == NT_FOLLOW_STOPPED) {
		status = 130;
	}
	if (strcmp(a.format, "text") != 0 && (st == NT_FOLLOW_FINISHED || st == NT_FOLLOW_ENDED))
		warn_trace2_done(&a, nt_follow_reader(f));
	if (nt_follow_lost(f) > 0)
		fprintf(stderr, "trace-dump: %s: %llu event%s lost before they could be shown "
				"(dropped by the writer, or overwritten first)\n",
			a.path, (unsigned long long)nt_follow_lost(f), nt_follow_lost(f) == 1 ? "" : "s");
	nt_follow_close(f);
	if (out != stdout && fclose(out) != 0)
		status = 2;
	return status;
}
