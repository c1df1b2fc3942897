/* trace-dump - print a nanotrace archive: text, Chrome JSON, or statistics. A thin layer over
 * libnanotrace-reader. Exit status: 0 success, 1 usage error, 2 unreadable or damaged input
 * (or an output that could not be written). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nanotrace_reader.h"

static const char usage[] =
	"usage: trace-dump [--format text|chrome] [--stats] [--order time|stream]\n"
	"                  [--on-corrupt skip|stop] ARCHIVE\n"
	"\n"
	"  --format text    one aligned line per event (default)\n"
	"  --format chrome  Chrome Trace Event JSON for Perfetto UI or chrome://tracing\n"
	"  --stats          counts per record kind and thread, drops, wraps, bytes per event\n"
	"  --order time     merge all threads by timestamp (default for text and chrome)\n"
	"  --order stream   file order, chunk by chunk\n"
	"  --on-corrupt     skip damaged records and go on (default), or stop at the first\n"
	"\n"
	"Exit status: 0 success, 1 usage error, 2 unreadable or damaged archive.\n";

typedef struct err_ctx {
	const char *path;
	unsigned long count;
} err_ctx;

static void print_damage(void *ctx, uint64_t offset, const char *message)
{
	err_ctx *e = ctx;
	e->count++;
	fprintf(stderr, "trace-dump: %s: %s at byte %" PRIu64 "\n", e->path, message, offset);
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "trace-dump: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", usage);
	return 1;
}

int main(int argc, char **argv)
{
	const char *format = "text", *path = NULL;
	int stats = 0;
	nt_render_options opt = { .order = NT_ORDER_TIME, .policy = NT_ON_CORRUPT_SKIP };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(a, "--version") == 0) {
			printf("trace-dump (nanotrace) 0.1.0\n");
			return 0;
		} else if (strcmp(a, "--stats") == 0) {
			stats = 1;
		} else if (strcmp(a, "--format") == 0 || strcmp(a, "--order") == 0 ||
			   strcmp(a, "--on-corrupt") == 0) {
			if (i + 1 >= argc)
				return bad_usage("option %s needs a value", a);
			const char *v = argv[++i];
			if (strcmp(a, "--format") == 0) {
				if (strcmp(v, "text") != 0 && strcmp(v, "chrome") != 0)
					return bad_usage("unknown format '%s' (text or chrome)", v);
				format = v;
			} else if (strcmp(a, "--order") == 0) {
				if (strcmp(v, "time") != 0 && strcmp(v, "stream") != 0)
					return bad_usage("unknown order '%s' (time or stream)", v);
				opt.order = strcmp(v, "time") == 0 ? NT_ORDER_TIME : NT_ORDER_STREAM;
			} else {
				if (strcmp(v, "skip") != 0 && strcmp(v, "stop") != 0)
					return bad_usage("unknown --on-corrupt policy '%s' (skip or stop)", v);
				opt.policy = strcmp(v, "skip") == 0 ? NT_ON_CORRUPT_SKIP : NT_ON_CORRUPT_STOP;
			}
		} else if (a[0] == '-' && a[1] != '\0') {
			return bad_usage("unknown option '%s'", a);
		} else if (path != NULL) {
			return bad_usage("only one archive may be given (also got '%s')", a);
		} else {
			path = a;
		}
	}
	if (path == NULL)
		return bad_usage("%s", "no archive given");

	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	if (r == NULL) {
		if (err.offset)
			fprintf(stderr, "trace-dump: %s at byte %" PRIu64 "\n", err.message, err.offset);
		else
			fprintf(stderr, "trace-dump: %s\n", err.message);
		return 2;
	}
	err_ctx ec = { path, 0 };
	opt.on_error = print_damage;
	opt.error_ctx = &ec;
	int rc;
	if (stats)
		rc = nt_render_stats(r, stdout, &opt);
	else if (strcmp(format, "chrome") == 0)
		rc = nt_render_chrome(r, stdout, &opt);
	else
		rc = nt_render_text(r, stdout, &opt);

	int status = rc < 0 || ec.count > 0 ? 2 : 0;
	if (rc < 0 && ec.count == 0)
		fprintf(stderr, "trace-dump: %s: out of memory while reading\n", path);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "trace-dump: writing output: %s\n", strerror(errno));
		status = 2;
	}
	nt_reader_close(r);
	return status;
}
