/* nt_record_options.c - trace-record's command line (nt_record_options.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/nt_arena_layout.h"
#include "format/nt_bundle.h"
#include "format/nt_wire.h"
#include "format/nt_zchunk.h"
#include "nt_record_options.h"
#include "nt_size_arg.h"
#include "format/nt_version.h"

#define say nt_record_say
#define MAX_PROVIDERS NT_RECORD_MAX_PROVIDERS
enum { OPT_OTLP = 256, OPT_OTLP_ENDPOINT, OPT_OTLP_SPOOL, OPT_OTLP_SPOOL_SIZE }; /* long options only */

void nt_record_say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "trace-record: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void nt_record_usage(FILE *f)
{
	fprintf(f,
		"usage: trace-record -o FILE [--categories LIST] [--buffering-mode MODE]\n"
		"                    [--buffer-size SIZE] [--buffer-disposition D]\n"
		"                    [--compression-level N]\n"
		"                    [--duration SECONDS] [--manager-timeout SECONDS]\n"
		"                    [--provider NAME]...\n"
		"                    [--otlp | --otlp-endpoint URL] [--otlp-spool DIR]\n"
		"                    [--otlp-spool-size SIZE]\n"
		"                    [--verbose] [-- COMMAND [ARGS...]]\n"
		"       trace-record --list\n"
		"Records every process registered with the nanotrace manager into one archive FILE\n"
		"(one section per process; trace-dump reads it). With COMMAND, runs it with\n"
		"NANOTRACE_MANAGER set, so it and every descendant linking libnanotrace register,\n"
		"and stops when it exits. Without COMMAND, records until --duration or Ctrl-C.\n"
		"When no manager answers on its socket ($NANOTRACE_MANAGER, else\n"
		"$XDG_RUNTIME_DIR/nanotrace/manager.sock, else /tmp/nanotrace-$UID/manager.sock),\n"
		"trace-record runs one itself on a private socket.\n"
		"  -o, --output FILE        the archive (created beside FILE, renamed at the end)\n"
		"  -c, --categories LIST    category patterns, comma-separated (default: all)\n"
		"  -m, --buffering-mode M   oneshot (default), circular or streaming\n"
		"  -b, --buffer-size SIZE   each process's buffer: bytes, or with K, M, G\n"
		"                           (64K to 4G; default 4M, 16M when streaming)\n"
		"  -D, --buffer-disposition clear (default: a fresh buffer), clear-nondurable or\n"
		"                           retain: a process still holding the previous trace's\n"
		"                           buffer (same mode, size, categories; not streaming)\n"
		"                           starts again on it, keeping its strings and threads\n"
		"                           (clear-nondurable) or everything (retain)\n"
		"  -z, --compression-level N  zstd level of the archive's chunks, -50 (fastest) to\n"
		"                           22 (smallest); 0 or off: uncompressed (default: the\n"
		"                           manager's, 1)\n"
		"  -d, --duration SECONDS   stop after this long\n"
		"  -T, --manager-timeout S  how long the manager may send nothing while the trace\n"
		"                           stops (it sends progress 4 times a second) before it\n"
		"                           counts as lost (default 60)\n"
		"  -p, --provider NAME      record only providers of this name (repeatable)\n"
		"      --otlp-endpoint URL  also send each process's section, once written (a\n"
		"                           streaming one as its buffers are saved, when no\n"
		"                           daemon records), to an OpenTelemetry collector over\n"
		"                           OTLP/HTTP (URL/v1/traces, URL/v1/metrics); the\n"
		"                           OTEL_EXPORTER_OTLP_* variables\n"
		"                           (headers, compression, timeout, certificate) apply.\n"
		"                           Requests wait in a spool; at the end trace-record waits\n"
		"                           for it at most the OTLP timeout and says what was sent,\n"
		"                           dropped and left (sent by the next run)\n"
		"      --otlp               the same, to the endpoint the variables name\n"
		"                           (OTEL_EXPORTER_OTLP_ENDPOINT, _TRACES_ENDPOINT,\n"
		"                           _METRICS_ENDPOINT; default http://localhost:4318)\n"
		"      --otlp-spool DIR     the spool (default $XDG_STATE_HOME/nanotrace/otlp-spool,\n"
		"                           else ~/.local/state/nanotrace/otlp-spool; made 0700)\n"
		"      --otlp-spool-size SIZE  the spool's cap (default 64M); a request past it is\n"
		"                           dropped and counted\n"
		"  -l, --list               list the registered providers (pid, name, state)\n"
		"  -v, --verbose            log the manager's events (timestamps from the start)\n"
		"  -h, --help               this text\n"
		"  -V, --version            the version, the manager protocol and formats\n"
		"Exit status: COMMAND's own status (128 + signal if it was killed), or 0 without\n"
		"COMMAND, when the archive was written; 1 usage error; 2 recording failed (no\n"
		"archive, or one kept under the temporary name it names when FILE cannot be\n"
		"replaced); 3 the manager went away mid-run (FILE holds the sections written before,\n"
		"ended by a 'manager lost' frame); 127 COMMAND cannot be run (no archive).\n");
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v > 0) || !isfinite(v) || v > 1e9)
		return -1;
	*out = v;
	return 0;
}

static int parse_mode(const char *s)
{
	if (strcmp(s, "oneshot") == 0)
		return NT_MODE_ONESHOT;
	if (strcmp(s, "circular") == 0)
		return NT_MODE_CIRCULAR;
	if (strcmp(s, "streaming") == 0)
		return NT_MODE_STREAMING;
	return -1;
}

/* --compression-level: CTL_START's compression (nt_wire_start_d), or 1 after saying what is
 * wrong. */
static int parse_compression(const char *s, int32_t *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (strcmp(s, "off") == 0) {
		*out = NT_WIRE_NO_COMPRESSION;
		return 0;
	}
	if (errno != 0 || end == s || *end != '\0' || !nt_zchunk_level_ok((int)v) ||
	    v != (int)v) {
		say("--compression-level: '%s' is not off or a level from %d to %d", s,
		    NT_ZCHUNK_LEVEL_MIN, NT_ZCHUNK_LEVEL_MAX);
		return 1;
	}
	*out = v == 0 ? NT_WIRE_NO_COMPRESSION : (int32_t)v;
	return 0;
}

static int parse_disposition(const char *s)
{
	/* nt_buffer_disposition's numbers */
	if (strcmp(s, "clear") == 0)
		return 0;
	if (strcmp(s, "clear-nondurable") == 0)
		return 1;
	if (strcmp(s, "retain") == 0)
		return 2;
	return -1;
}

/* What the options say together: -1 after saying what is wrong. */
static int check_options(const options *o)
{
	if (o->list)
		return o->output || o->command ? (say("--list takes no other option"), -1) : 0;
	if (o->output == NULL) {
		say("-o FILE is required");
		return -1;
	}
	const char *slash = strrchr(o->output, '/');
	if ((slash ? slash + 1 : o->output)[0] == '\0') { /* "", "dir/": no file named */
		say("-o '%s' names a directory, not a file", o->output);
		return -1;
	}
	struct stat st;
	if (lstat(o->output, &st) == 0 && S_ISDIR(st.st_mode)) {
		/* Refused now, not when the trace is over and could not be renamed onto it. */
		say("-o '%s' is a directory; name a file", o->output);
		return -1;
	}
	if ((o->otlp_spool || o->otlp_spool_size) && !o->otlp) {
		say("--otlp-spool and --otlp-spool-size go with --otlp or --otlp-endpoint");
		return -1;
	}
	if (o->categories && strlen(o->categories) > NT_WIRE_MAX_TEXT) {
		say("--categories: longer than %u bytes", NT_WIRE_MAX_TEXT);
		return -1;
	}
	return 0;
}

int nt_record_parse_options(int argc, char **argv, options *o)
{
	static const struct option opts[] = {
		{ "output", required_argument, 0, 'o' },  { "categories", required_argument, 0, 'c' },
		{ "buffering-mode", required_argument, 0, 'm' },
		{ "buffer-size", required_argument, 0, 'b' },
		{ "buffer-disposition", required_argument, 0, 'D' },
		{ "compression-level", required_argument, 0, 'z' },
		{ "duration", required_argument, 0, 'd' },
		{ "manager-timeout", required_argument, 0, 'T' }, { "provider", required_argument, 0, 'p' },
		{ "list", no_argument, 0, 'l' },            { "verbose", no_argument, 0, 'v' },
		{ "help", no_argument, 0, 'h' },            { "version", no_argument, 0, 'V' },
		{ "otlp", no_argument, 0, OPT_OTLP },
		{ "otlp-endpoint", required_argument, 0, OPT_OTLP_ENDPOINT },
		{ "otlp-spool", required_argument, 0, OPT_OTLP_SPOOL },
		{ "otlp-spool-size", required_argument, 0, OPT_OTLP_SPOOL_SIZE },
		{ 0, 0, 0, 0 },
	};
	memset(o, 0, sizeof(*o));
	o->buffer_size = 0; /* the manager's default for the mode (format/nt_format.h) */
	o->manager_timeout = 60;
	/* getopt_long names the program by argv[0] in its messages: the name, not the path it
	 * was run by. */
	char *slash = strrchr(argv[0], '/');
	if (slash != NULL && slash[1] != '\0')
		argv[0] = slash + 1;
	int c;
	while ((c = getopt_long(argc, argv, "+o:c:m:b:D:z:d:T:p:lvhV", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o->output = optarg; break;
		case 'c': o->categories = optarg; break;
		case 'l': o->list = 1; break;
		case 'v': o->verbose = 1; break;
		case 'h': nt_record_usage(stdout); exit(0);
		case 'V':
			printf("trace-record (nanotrace) %s\nspeaks manager protocol %u, writes "
			       "bundle format %u of archive format %d.%d\n",
			       NT_VERSION_STRING, NT_WIRE_VERSION, NT_BUNDLE_VERSION, NT_FORMAT_MAJOR,
			       NT_FORMAT_MINOR);
			exit(0);
		case 'm':
			if ((o->mode = parse_mode(optarg)) < 0) {
				say("--buffering-mode: '%s' is not oneshot, circular or streaming", optarg);
				return -1;
			}
			break;
		case 'D':
			if ((o->disposition = parse_disposition(optarg)) < 0) {
				say("--buffer-disposition: '%s' is not clear, clear-nondurable or retain",
				    optarg);
				return -1;
			}
			break;
		case 'z':
			if (parse_compression(optarg, &o->compression) != 0)
				return -1;
			break;
		case 'b':
			if (nt_size_arg(optarg, &o->buffer_size) != 0 || o->buffer_size < NT_MIN_BUFFER ||
			    o->buffer_size > NT_MAX_BUFFER) {
				say("--buffer-size: '%s' is not a size from 64K to 4G", optarg);
				return -1;
			}
			break;
		case 'd':
		case 'T':
			if (parse_seconds(optarg, c == 'd' ? &o->duration : &o->manager_timeout) != 0) {
				say("--%s: '%s' is not a positive number of seconds",
				    c == 'd' ? "duration" : "manager-timeout", optarg);
				return -1;
			}
			break;
		case OPT_OTLP: o->otlp = 1; break;
		case OPT_OTLP_ENDPOINT: o->otlp = 1; o->otlp_endpoint = optarg; break;
		case OPT_OTLP_SPOOL: o->otlp_spool = optarg; break;
		case OPT_OTLP_SPOOL_SIZE:
			if (nt_size_arg(optarg, &o->otlp_spool_size) != 0 || o->otlp_spool_size == 0) {
				say("--otlp-spool-size: '%s' is not a size (bytes, or with K, M, G)",
				    optarg);
				return -1;
			}
			break;
		case 'p':
			if (o->nproviders == MAX_PROVIDERS || strlen(optarg) > NT_WIRE_MAX_NAME) {
				say("--provider: at most %d names of at most %u bytes", MAX_PROVIDERS,
				    NT_WIRE_MAX_NAME);
				return -1;
			}
			o->providers[o->nproviders++] = optarg;
			break;
		default:
			return -1;
		}
	}
	if (optind < argc)
		o->command = argv + optind;
	return check_options(o);
}


