/* trace-dump - print nanotrace archives: text, Chrome JSON, statistics or Git's Trace2
 * formats, of one archive, a bundle, a directory or several at once. A thin layer over
 * libnanotrace-reader (doc/man/trace-dump.1 is its manual). Exit status: 0 success, 1 usage
 * error, 2 unreadable or damaged input (or an output that could not be written). An archive
 * whose writer could not save all of it (a full disk: nt_render_save_stopped) is a complete
 * account, not damage: a warning line on stderr and exit 0, as babeltrace2 does for
 * discarded events. */
#define _GNU_SOURCE /* mkostemp (runtime/nt_private_file.h) */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanotrace/nanotrace_reader.h>
#include "format/nt_bundle.h"
#include "format/nt_format.h"
#include "runtime/nt_sock.h"
#include "runtime/nt_private_file.h"
#include "runtime/nt_term_escape.h"
#include "nt_progress.h"
#include "format/nt_version.h"
#include "trace_dump_follow.h"

static const char usage[] =
	"usage: trace-dump [--format text|chrome] [--stats] [--order time|stream]\n"
	"                  [--on-corrupt skip|stop] ARCHIVE|DIRECTORY...\n"
	"       trace-dump --format normal|perf|event [--brief] [--nesting N]\n"
	"                  [--on-corrupt skip|stop] ARCHIVE|DIRECTORY...\n"
	"       trace-dump --format ctf -o DIR [--on-corrupt skip|stop] ARCHIVE|DIRECTORY...\n"
	"       trace-dump --format perfetto|otlp|otlp-json -o FILE [--order time|stream]\n"
	"                  [--on-corrupt skip|stop] ARCHIVE|DIRECTORY...\n"
	"       trace-dump --follow [--wait SECONDS] [--interval MS] ARCHIVE\n"
	"                  (as a program records it; see trace-dump --follow --help)\n"
	"\n"
	"  An ARCHIVE is one process's archive or a bundle of many (trace-record's); a\n"
	"  DIRECTORY stands for its archives. Several inputs are read as one trace: every\n"
	"  process, merged by time.\n"
	"\n"
	"  --format text    one aligned line per event (default)\n"
	"  --format chrome  Chrome Trace Event JSON for Perfetto UI or chrome://tracing\n"
	"  --format normal|perf|event\n"
	"                   Git Trace2's NORMAL, PERF or EVENT rendering of the Trace2 messages,\n"
	"                   byte for byte as git writes them; every process of the inputs in\n"
	"                   one stream, in the order the processes wrote them\n"
	"  --format ctf     a Common Trace Format 1.8 trace in DIR (made 0700; an existing\n"
	"                   empty directory is used) for babeltrace2 and Trace Compass: one\n"
	"                   stream per thread; a failure leaves nothing in DIR (damage\n"
	"                   skipped: the trace's metadata counts it)\n"
	"  --format perfetto\n"
	"                   Perfetto's protobuf trace in FILE (made 0600, replaced whole; a\n"
	"                   link there is refused) for Perfetto UI and trace_processor:\n"
	"                   interned names, typed arguments, counter tracks, losses as\n"
	"                   instants; about a fifth of Chrome JSON's bytes\n"
	"  --format otlp    OpenTelemetry's OTLP protobuf in FILE (made as for perfetto):\n"
	"                   each ExportTraceServiceRequest as field 1, each\n"
	"                   ExportMetricsServiceRequest as field 2 of one message; spans,\n"
	"                   span events, links and gauges (doc/otlp.md); OTEL_SERVICE_NAME,\n"
	"                   OTEL_RESOURCE_ATTRIBUTES and TRACEPARENT are read (a\n"
	"                   TRACEPARENT the process recorded comes first)\n"
	"  --format otlp-json\n"
	"                   the same requests as OTLP/JSON, one per line, as the\n"
	"                   Collector's otlpjsonfile receiver reads them\n"
	"  -o, --output DIR|FILE\n"
	"                   where --format ctf (DIR) or perfetto, otlp, otlp-json (FILE)\n"
	"                   writes\n"
	"  -o, --output af_unix:[stream:|dgram:]PATH\n"
	"                   normal, perf or event: each line to that Unix socket, one message\n"
	"                   per line, as git's af_unix Trace2 targets (no type: stream, then\n"
	"                   dgram); also with --follow\n"
	"  --brief          Git's brief mode (default: as each process was captured)\n"
	"  --nesting N      EVENT: omit regions and data nested deeper than N (default 2)\n"
	"  --stats          counts per record kind and thread, drops, wraps, bytes per event;\n"
	"                   per provider (process) for a bundle or several archives\n"
	"  --order time     merge all threads by timestamp (default for text and chrome)\n"
	"  --order stream   file order, chunk by chunk\n"
	"  --on-corrupt     skip damaged records and go on (default), or stop at the first\n"
	"  --salvage        damage (a truncated archive included) is still reported, but\n"
	"                   exits 0 when everything readable was rendered\n"
	"\n"
	"  --follow         render one ARCHIVE while a program still records it, as tail -f\n"
	"                   does: text or a Trace2 format (trace-dump --follow --help)\n"
	"  --wait SECONDS   --follow: wait this long for ARCHIVE to appear (default: forever)\n"
	"  --interval MS    --follow: between polls, 1-1000 (default 10)\n"
	"  --no-progress    no progress line (shown on stderr when it is a terminal and the\n"
	"                   output goes to a file or a pipe)\n"
	"  -h, --help       this text\n"
	"  --version        the version and the archive formats it reads\n"
	"\n"
	"Exit status: 0 success, 1 usage error, 2 unreadable or damaged archive (0 for damage\n"
	"with --salvage), or an output that could not be written. An archive that records\n"
	"that its writer's saving stopped (a full disk) is read with a warning: exit 0. A\n"
	"Trace2 format of inputs that hold no Trace2 message writes nothing, says so on\n"
	"stderr, and exits 0 (as git writes nothing when Trace2 is off).\n";

/* Text from the input (a section's name inside a message, a path a directory listed) as it
 * may reach a terminal: controls shown as '?' (runtime/nt_term_escape.h). One static
 * buffer per argument slot: a message line shows at most two. */
static const char *shown(int slot, const char *s)
{
	static char buf[2][8192];
	nt_term_escape(buf[slot], sizeof(buf[slot]), s, strlen(s));
	return buf[slot];
}

typedef struct err_ctx {
	const char *path;
	unsigned long count;
} err_ctx;

static void print_damage(void *ctx, uint64_t offset, const char *message)
{
	err_ctx *e = ctx;
	e->count++;
	if (e->path)
		fprintf(stderr, "trace-dump: %s: %s at byte %" PRIu64 "\n", shown(0, e->path),
			shown(1, message), offset);
	else
		fprintf(stderr, "trace-dump: %s at byte %" PRIu64 "\n", shown(1, message), offset);
}

/* A usage error: one line naming what is wrong, a pointer to --help, exit status 1. */
static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "trace-dump: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'trace-dump --help'.\n");
	return 1;
}

static int is_trace2_format(const char *f)
{
	return strcmp(f, "normal") == 0 || strcmp(f, "perf") == 0 || strcmp(f, "event") == 0;
}

/* -o af_unix:...: Git's socket target, for a Trace2 format (nt_trace2_socket_open). */
static int is_socket_target(const char *o)
{
	return strncmp(o, "af_unix:", 8) == 0;
}

/* The formats that write a FILE named by -o (written beside it and renamed into place). */
static int writes_one_file(const char *f)
{
	return strcmp(f, "perfetto") == 0 || strcmp(f, "otlp") == 0 ||
	       strcmp(f, "otlp-json") == 0;
}

/* The formats that write to -o (a directory for ctf, a file for the others). */
static int writes_file(const char *f)
{
	return strcmp(f, "ctf") == 0 || writes_one_file(f);
}

static void print_open_error(const nt_reader_error *err)
{
	if (err->offset)
		fprintf(stderr, "trace-dump: %s at byte %" PRIu64 "\n", shown(0, err->message),
			err->offset);
	else
		fprintf(stderr, "trace-dump: %s\n", shown(0, err->message));
}

/* What the command line asks for. */
typedef struct dump_args {
	const char *format;
	const char *output; /* -o DIR (--format ctf) or FILE (--format perfetto) */
	const char **paths; /* the ARCHIVE arguments, in order */
	size_t npaths;
	int stats;
	int salvage; /* damage is reported but is no failure */
	int no_progress; /* --no-progress: never a progress line */
	nt_trace2_options t2;
	nt_render_options opt;
} dump_args;

/* An option that takes a value: --format, --order or --on-corrupt. Returns -1, or the exit
 * status of a usage error. */
static int parse_value(dump_args *d, const char *a, const char *v)
{
	if (strcmp(a, "--format") == 0) {
		if (strcmp(v, "text") != 0 && strcmp(v, "chrome") != 0 && !writes_file(v) &&
		    !is_trace2_format(v))
			return bad_usage("unknown format '%s' (text, chrome, ctf, perfetto, otlp, "
					 "otlp-json, normal, perf or event)", v);
		d->format = v;
	} else if (strcmp(a, "--order") == 0) {
		if (strcmp(v, "time") != 0 && strcmp(v, "stream") != 0)
			return bad_usage("unknown order '%s' (time or stream)", v);
		d->opt.order = strcmp(v, "time") == 0 ? NT_ORDER_TIME : NT_ORDER_STREAM;
	} else {
		if (strcmp(v, "skip") != 0 && strcmp(v, "stop") != 0)
			return bad_usage("unknown --on-corrupt policy '%s' (skip or stop)", v);
		d->opt.policy = strcmp(v, "skip") == 0 ? NT_ON_CORRUPT_SKIP : NT_ON_CORRUPT_STOP;
	}
	return -1;
}

/* Options without a short letter: codes above any character. */
enum { OPT_FORMAT = 256, OPT_ORDER, OPT_ON_CORRUPT, OPT_STATS, OPT_SALVAGE, OPT_BRIEF,
       OPT_NESTING, OPT_NO_PROGRESS, OPT_VERSION, OPT_FOLLOW_ONLY };

/* The command line: adding an option is one row here and one case in parse_option(). */
static const struct option long_options[] = {
	{ "format", required_argument, 0, OPT_FORMAT },
	{ "order", required_argument, 0, OPT_ORDER },
	{ "on-corrupt", required_argument, 0, OPT_ON_CORRUPT },
	{ "stats", no_argument, 0, OPT_STATS },
	{ "salvage", no_argument, 0, OPT_SALVAGE },
	{ "brief", no_argument, 0, OPT_BRIEF },
	{ "nesting", required_argument, 0, OPT_NESTING },
	{ "output", required_argument, 0, 'o' },
	{ "follow", no_argument, 0, OPT_FOLLOW_ONLY }, /* trace_dump_follow.c takes these */
	{ "wait", required_argument, 0, OPT_FOLLOW_ONLY },
	{ "interval", required_argument, 0, OPT_FOLLOW_ONLY },
	{ "no-progress", no_argument, 0, OPT_NO_PROGRESS },
	{ "help", no_argument, 0, 'h' },
	{ "version", no_argument, 0, OPT_VERSION },
	{ 0, 0, 0, 0 },
};

static int print_version(void)
{
	printf("trace-dump (nanotrace) %s\n"
	       "reads archive format %d.0 to %d.%d and bundle format %u\n",
	       NT_VERSION_STRING, NT_FORMAT_MAJOR_OLDEST, NT_FORMAT_MAJOR, NT_FORMAT_MINOR,
	       NT_BUNDLE_VERSION);
	return 0;
}

/* One option getopt_long returned. Returns -1 to go on, or the exit status. */
static int parse_option(dump_args *d, int c, const char *v)
{
	switch (c) {
	case 'h': fputs(usage, stdout); return 0;
	case 'o': d->output = v; return -1;
	case OPT_VERSION: return print_version();
	case OPT_STATS: d->stats = 1; return -1;
	case OPT_SALVAGE: d->salvage = 1; return -1;
	case OPT_BRIEF: d->t2.brief = 1; return -1;
	case OPT_NO_PROGRESS: d->no_progress = 1; return -1;
	case OPT_FOLLOW_ONLY: return bad_usage("%s", "--wait and --interval go with --follow");
	case OPT_FORMAT: return parse_value(d, "--format", v);
	case OPT_ORDER: return parse_value(d, "--order", v);
	case OPT_ON_CORRUPT: return parse_value(d, "--on-corrupt", v);
	case OPT_NESTING: {
		char *end;
		errno = 0;
		long n = strtol(v, &end, 10);
		if (*v == '\0' || *end != '\0' || errno != 0 || n < 1 || n > 1000000)
			return bad_usage("--nesting needs a positive number, not '%s'", v);
		d->t2.nesting = (int)n;
		return -1;
	}
	default: /* getopt_long named the option already */
		fprintf(stderr, "Try 'trace-dump --help'.\n");
		return 1;
	}
}

/* Returns -1 to go on, or the exit status (help, version, usage error). */
static int parse_args(int argc, char **argv, dump_args *d)
{
	int c;
	opterr = 1; /* getopt_long's own one-line message: "unrecognized option '--x'" */
	while ((c = getopt_long(argc, argv, "ho:", long_options, NULL)) != -1) {
		int rc = parse_option(d, c, optarg);
		if (rc >= 0)
			return rc;
	}
	for (int i = optind; i < argc; i++)
		d->paths[d->npaths++] = argv[i]; /* room for every argument: see main() */
	if (d->npaths == 0)
		return bad_usage("%s", "no archive given");
	if (is_trace2_format(d->format) && d->stats)
		return bad_usage("%s", "--stats does not combine with a Trace2 format");
	if (is_trace2_format(d->format) && d->output != NULL && is_socket_target(d->output)) {
		int type;
		const char *path, *why;
		if (nt_sock_target_parse(d->output, &type, &path, &why) != 0) {
			char msg[8400];
			snprintf(msg, sizeof(msg), "-o '%s': %s (af_unix:[stream:|dgram:]<absolute "
				 "path>)", shown(0, d->output), why);
			return bad_usage("%s", msg);
		}
		return -1;
	}
	if (writes_file(d->format) != (d->output != NULL) || (d->output && d->stats))
		return bad_usage("%s", "--format ctf, perfetto, otlp and otlp-json need -o, and -o "
				       "needs one of them (or af_unix:... with normal, perf or event)");
	return -1;
}

/* The exit status, once everything is written: an output that could not be is status 2.
 * A renderer stops at the first failed write and leaves its errno (ENOSPC, EPIPE with
 * SIGPIPE ignored, EIO), which `render_errno` carries here. */
static int flush_output(int status, int render_errno)
{
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		int err = errno ? errno : render_errno ? render_errno : EIO;
		fprintf(stderr, "trace-dump: writing standard output: %s\n", strerror(err));
		status = 2;
	}
	return status;
}

/* The inputs as one reader: an archive, a bundle, a directory, or several of them. */
static nt_reader *open_inputs(const dump_args *d)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_many(d->paths, d->npaths, &err);
	if (r == NULL)
		print_open_error(&err);
	return r;
}

/* What to call the input in messages that do not name it themselves. */
static const char *input_name(const dump_args *d)
{
	return d->npaths == 1 ? d->paths[0] : "(several archives)";
}

/* An archive whose writer could not save all of it says why and how many events it lost
 * (nt_render_save_stopped): a complete account, not damage, so a warning on stderr, once
 * per section, and no change to the exit status. */
static void warn_save_stopped(const dump_args *d, const nt_reader *r)
{
	char line[256];
	if (nt_reader_info(r)->save_errno == 0)
		return; /* a many-process reader's is the first section's reason: none stopped */
	for (uint32_t i = 0; i < nt_reader_section_count(r); i++) {
		const nt_reader_section *s = nt_reader_section_peek(r, i);
		nt_archive_info hdr;
		if ((s->header_notes & NT_HEADER_NOTE_SAVE_STOPPED) == 0 ||
		    nt_reader_section_header(r, i, &hdr) != 0 ||
		    nt_render_save_stopped(&hdr, line, sizeof(line)) == NULL)
			continue;
		if (s->reader == r)
			fprintf(stderr, "trace-dump: %s: %s\n", shown(0, input_name(d)), line);
		else
			fprintf(stderr, "trace-dump: %s (pid %" PRIu32 "): %s\n", shown(0, s->source),
				s->pid, line);
	}
}

/* What each process's writer lost (nt_render_losses), for the renderings that have no place
 * for it in their own bytes (Git's Trace2 formats): a warning on stderr per section. */
static void warn_losses(const dump_args *d, const nt_reader *r)
{
	char line[256];
	uint32_t n = nt_reader_section_count(r);
	for (uint32_t i = 0; i < n; i++) {
		const nt_reader_section *s = nt_reader_section_peek(r, i);
		if ((s->header_notes & NT_HEADER_NOTE_LOSSES) == 0)
			continue; /* no header decoded for a section that lost nothing */
		nt_archive_info hdr;
		const nt_archive_info *in = n == 1 ? nt_reader_info(r)
				: nt_reader_section_header(r, i, &hdr) == 0 ? &hdr : NULL;
		if (nt_render_losses(in, line, sizeof(line)) == NULL)
			continue;
		if (n == 1)
			fprintf(stderr, "trace-dump: %s: lost: %s\n", shown(0, input_name(d)), line);
		else
			fprintf(stderr, "trace-dump: %s (pid %" PRIu32 "): lost: %s\n",
				shown(0, s->source), s->pid, line);
	}
}

/* Where damage messages come from: a plain archive's are named here; a many-process
 * reader's name their file and section themselves. */
static err_ctx damage_ctx(dump_args *d, nt_reader *r)
{
	err_ctx ec = { nt_reader_section_count(r) == 1 &&
				       nt_reader_section_peek(r, 0)->reader == r ? input_name(d) : NULL,
		       0 };
	return ec;
}

/* Where the rendering goes: stdout, through a progress line's counting stream when one
 * belongs on the terminal (nt_progress.h). */
static FILE *start_output(const dump_args *d, nt_progress *prog)
{
	*prog = (nt_progress){ .out = stdout }; /* nothing shown: nt_progress_end erases nothing */
	if (!d->no_progress && nt_progress_wanted())
		nt_progress_start(prog, "trace-dump");
	return prog->out;
}

/* The inputs, opened for a renderer: a warning for each section whose saving stopped, and
 * damage reported through `ec` (which must outlive the rendering). NULL after a message. */
static nt_reader *open_for_render(dump_args *d, err_ctx *ec)
{
	nt_reader *r = open_inputs(d);
	if (r == NULL)
		return NULL;
	warn_save_stopped(d, r);
	*ec = damage_ctx(d, r);
	d->opt.on_error = print_damage;
	d->opt.error_ctx = ec;
	return r;
}

/* Does any process of the inputs hold Trace2 messages (a Trace2 process record: written once
 * a program initializes Trace2, one per SID in an imported log)? */
static int has_trace2(const nt_reader *r)
{
	for (uint32_t i = 0; i < nt_reader_process_count(r); i++)
		if (nt_reader_process_at(r, i) != NULL)
			return 1;
	return 0;
}

/* Git's Trace2 renderings of every process the inputs hold, as one stream. An input with no
 * Trace2 process renders as nothing, as git writes nothing when Trace2 is off: a script
 * reading the stream gets what is there (exit 0), and a person is told why it is empty. */
static int dump_trace2(dump_args *d)
{
	nt_trace2_options *t2 = &d->t2;
	t2->format = strcmp(d->format, "normal") == 0 ? NT_TRACE2_NORMAL
		     : strcmp(d->format, "perf") == 0 ? NT_TRACE2_PERF : NT_TRACE2_EVENT;
	t2->policy = d->opt.policy;
	err_ctx ec;
	nt_reader *r = open_for_render(d, &ec);
	if (r == NULL)
		return 2;
	t2->on_error = print_damage;
	t2->error_ctx = &ec;
	warn_losses(d, r);
	if (!has_trace2(r))
		fprintf(stderr, "trace-dump: %s: no Trace2 messages (no process in it used Git's "
				"Trace2): nothing to show as %s; --format text shows its events\n",
			shown(0, input_name(d)), d->format);
	nt_progress prog;
	FILE *sock = NULL;
	if (d->output != NULL && (sock = nt_trace2_socket_open(d->output,
							       "trace-dump: --output")) == NULL) {
		nt_reader_close(r); /* the socket's sender said why */
		return 2;
	}
	FILE *out = sock ? sock : start_output(d, &prog);
	errno = 0;
	int rc = nt_render_trace2(&r, 1, out, t2);
	int render_errno = errno;
	if (sock == NULL)
		nt_progress_end(&prog);
	else if (fclose(sock) != 0) /* a failed send was said by the sender */
		rc = -1;
	int status = flush_output(rc < 0 || (ec.count && !d->salvage) ? 2 : 0, render_errno);
	nt_reader_close(r);
	return status;
}

/* Text, Chrome JSON or statistics of every process the inputs hold. */
static int dump_one(dump_args *d)
{
	err_ctx ec;
	nt_reader *r = open_for_render(d, &ec);
	if (r == NULL)
		return 2;
	int rc;
	nt_progress prog;
	FILE *out = start_output(d, &prog);
	errno = 0;
	if (d->stats)
		rc = nt_render_stats(r, out, &d->opt);
	else if (strcmp(d->format, "chrome") == 0)
		rc = nt_render_chrome(r, out, &d->opt);
	else
		rc = nt_render_text(r, out, &d->opt);
	int render_errno = errno;
	nt_progress_end(&prog);
	if (rc < 0 && ec.count == 0 && !ferror(stdout)) /* else: a write failed, said below */
		fprintf(stderr, "trace-dump: %s: out of memory while reading\n",
			shown(0, input_name(d)));
	int status = flush_output(rc < 0 || (ec.count > 0 && !d->salvage) ? 2 : 0, render_errno);
	nt_reader_close(r);
	return status;
}

/* A CTF trace in d->output: the renderer makes the directory and its files, and removes
 * them when it fails. */
static int dump_ctf(dump_args *d)
{
	err_ctx ec;
	nt_reader *r = open_for_render(d, &ec);
	if (r == NULL)
		return 2;
	nt_reader_error err;
	int rc = nt_render_ctf(r, d->output, &d->opt, &err);
	if (rc < 0)
		fprintf(stderr, "trace-dump: %s\n", shown(0, err.message));
	else if (ec.count > 0)
		fprintf(stderr, "trace-dump: %s holds what could be read (its metadata's env "
				"damage_reports = %lu)\n", d->output, ec.count);
	nt_reader_close(r);
	return rc < 0 || (ec.count > 0 && !d->salvage) ? 2 : 0;
}

/* d->format's renderer writing a file. */
static int render_file(dump_args *d, nt_reader *r, FILE *out)
{
	if (strcmp(d->format, "perfetto") == 0)
		return nt_render_perfetto(r, out, &d->opt);
	return nt_render_otlp(r, out, strcmp(d->format, "otlp") == 0 ? NT_OTLP_PROTOBUF
								      : NT_OTLP_JSON, &d->opt);
}

/* A Perfetto trace or OTLP requests in d->output: written under a random name beside it
 * and renamed into place (runtime/nt_private_file.h), so FILE is whole or untouched; a
 * link at FILE is refused, never followed. */
static int dump_file(dump_args *d)
{
	err_ctx ec;
	nt_reader *r = open_for_render(d, &ec);
	if (r == NULL)
		return 2;
	char *tmp = NULL;
	int fd = nt_private_target_ok(d->output) != 0
			 ? -1 : nt_private_create_beside(d->output, 0, &tmp);
	FILE *out = fd < 0 ? NULL : fdopen(fd, "wb");
	if (out == NULL) {
		fprintf(stderr, "trace-dump: %s: %s\n", shown(0, d->output),
			nt_private_strerror(errno));
		if (fd >= 0)
			close(fd), unlink(tmp);
		free(tmp);
		nt_reader_close(r);
		return 2;
	}
	errno = 0;
	int rc = render_file(d, r, out);
	int err = errno ? errno : EIO;
	if (rc >= 0 && fclose(out) != 0)
		rc = -1, err = errno;
	else if (rc < 0)
		fclose(out);
	if (rc >= 0 && nt_private_publish(tmp, d->output) != 0)
		rc = -1, err = errno;
	if (rc < 0) {
		unlink(tmp);
		if (ec.count == 0)
			fprintf(stderr, "trace-dump: %s: %s; nothing written\n", shown(0, d->output),
				nt_private_strerror(err));
		else
			fprintf(stderr, "trace-dump: %s: damage stopped the rendering; nothing "
					"written\n", shown(0, d->output));
	}
	free(tmp);
	nt_reader_close(r);
	return rc < 0 || (ec.count > 0 && !d->salvage) ? 2 : 0;
}

int main(int argc, char **argv)
{
	argv[0] = "trace-dump"; /* getopt's messages name the program, not its path */
	if (trace_dump_wants_follow(argc, argv))
		return trace_dump_follow(argc, argv);
	dump_args d = { .format = "text" };
	d.paths = calloc((size_t)argc, sizeof(*d.paths));
	if (d.paths == NULL) {
		fprintf(stderr, "trace-dump: out of memory\n");
		return 2;
	}
	nt_trace2_options_init(&d.t2); /* brief -1 (as captured), nesting 2, skip damage */
	nt_render_options_init(&d.opt); /* time order, skip damage */
	int rc = parse_args(argc, argv, &d);
	if (rc < 0)
		rc = is_trace2_format(d.format) ? dump_trace2(&d)
		     : strcmp(d.format, "ctf") == 0 ? dump_ctf(&d)
		     : writes_one_file(d.format) ? dump_file(&d) : dump_one(&d);
	free(d.paths);
	return rc;
}
