/* trace-import - convert Git Trace2 EVENT streams into a nanotrace archive. A thin layer
 * over nt_trace2_import() and nt_trace2_import_paths() (doc/man/trace-import.1 is its
 * manual). Exit status: 0 success, 1 usage
 * error, 2 unreadable or malformed input, or an output that could not be written. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nanotrace/nanotrace_reader.h>
#include "format/nt_format.h"
#include "runtime/nt_private_file.h"
#include "nt_progress.h"
#include "format/nt_version.h"
#include "reader/common/nt_grow.h"
#include "runtime/nt_term_escape.h"

static const char usage[] =
	"usage: trace-import [-o ARCHIVE] [--compression-level N] [--no-progress]\n"
	"                    [FILE|DIRECTORY ...]\n"
	"\n"
	"Reads Git Trace2 EVENT lines (what GIT_TRACE2_EVENT writes) from each FILE, from the\n"
	"files of each DIRECTORY (a GIT_TRACE2_EVENT directory target: one file per process;\n"
	"empty files are skipped), or from standard input (no FILE, or -), and writes one\n"
	"nanotrace archive to ARCHIVE (default: the first FILE or DIRECTORY + .ntrace, or\n"
	"trace2.ntrace for standard input). Several streams are interleaved by time, as if\n"
	"the processes had written one file. Keys and events this version does not know are\n"
	"kept. Inputs that hold no Trace2 event at all (an empty file, empty standard input)\n"
	"are an error: no archive is written. Render it with\n"
	"  trace-dump --format normal|perf|event ARCHIVE\n"
	"\n"
	"  -o, --output ARCHIVE       where to write the archive\n"
	"  --compression-level N      zstd level of the archive's chunks, -50 (fastest) to 22\n"
	"                             (smallest); 0 or off: uncompressed (default 3)\n"
	"  --no-progress              no progress line (shown on stderr when it is a terminal\n"
	"                             and FILEs or DIRECTORYs are imported)\n"
	"\n"
	"  -h, --help                 this text\n"
	"  --version                  the version and the archive format it writes\n"
	"\n"
	"Exit status: 0 success, 1 usage error, 2 unreadable or malformed input or output, or\n"
	"inputs with no Trace2 event.\n";

/* An import is not in a hurry: a smaller archive is worth more than the saver's speed. */
#define DEFAULT_LEVEL 3

/* --compression-level's value: 0 (off), or a level nt_archive_compress takes; -1000 when
 * it is neither. */
static int parse_level(const char *s)
{
	if (strcmp(s, "off") == 0)
		return 0;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && v >= -50 && v <= 22 ? (int)v : -1000;
}

/* The archive with its chunks compressed at `level` (in place of *archive); 0 after saying
 * why not. */
static int compress_archive(void **archive, size_t *asize, int level)
{
	void *z = NULL;
	size_t zsize = 0;
	nt_reader_error err;
	if (level == 0)
		return 1;
	if (nt_archive_compress(*archive, *asize, level, &z, &zsize, &err) != 0) {
		fprintf(stderr, "trace-import: compressing the archive: byte %llu: %s\n",
			(unsigned long long)err.offset, err.message);
		return 0;
	}
	free(*archive);
	*archive = z;
	*asize = zsize;
	return 1;
}

static int read_all(FILE *in, char **data, size_t *len)
{
	size_t cap = 0, n = 0;
	char *buf = NULL;
	for (;;) {
		/* At least 64 KiB of room for each read. */
		if (!nt_grow(&buf, &cap, n + (1 << 16), 1)) {
			free(buf);
			errno = ENOMEM;
			return 0;
		}
		size_t got = fread(buf + n, 1, cap - n, in);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(in)) {
		free(buf);
		return 0;
	}
	*data = buf;
	*len = n;
	return 1;
}

/* Written beside the target under a random name (runtime/nt_private_file.h: mkostemp,
 * O_EXCL, mode 0600, so a link planted at any name is never followed) and renamed over it:
 * never a half-written archive, and a symbolic link at `path` itself is refused (errno
 * ELOOP), never followed or replaced. */
static int write_archive(const char *path, const void *data, size_t len)
{
	char *tmp;
	int fd = nt_private_create_beside(path, NT_PRIVATE_FILE_MODE, &tmp);
	if (fd < 0)
		return 0;
	const char *p = data;
	size_t left = len;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			close(fd);
			unlink(tmp);
			free(tmp);
			errno = e;
			return 0;
		}
		p += w;
		left -= (size_t)w;
	}
	if (close(fd) != 0 || nt_private_publish(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		free(tmp);
		errno = e;
		return 0;
	}
	free(tmp);
	return 1;
}

/* The standard input, imported. */
static int import_stdin(void **archive, size_t *asize)
{
	char *data = NULL;
	size_t len = 0;
	if (!read_all(stdin, &data, &len)) {
		fprintf(stderr, "trace-import: (standard input): %s\n", strerror(errno));
		return 0;
	}
	nt_trace2_import_error err;
	int rc = nt_trace2_import(data, len, archive, asize, &err);
	if (rc != 0)
		fprintf(stderr, "trace-import: (standard input): %s\n",
			nt_term_escape_str(err.message, sizeof(err.message), err.message));
	free(data);
	return rc == 0;
}

/* nt_trace2_import_paths_progress's report, as the progress line. */
static void show_progress(void *ctx, uint64_t done, uint64_t total)
{
	nt_progress_update(ctx, done, total);
}

/* A usage error: one line naming what is wrong, a pointer to --help, exit status 1. */
static int bad_usage(const char *what, const char *arg)
{
	if (what)
		fprintf(stderr, "trace-import: %s%s%s\n", what, arg ? arg : "", arg ? "'" : "");
	fprintf(stderr, "Try 'trace-import --help'.\n");
	return 1;
}

enum { OPT_COMPRESSION_LEVEL = 256, OPT_VERSION, OPT_NO_PROGRESS };

/* The command line: adding an option is one row here and one case in parse_args(). */
static const struct option long_options[] = {
	{ "output", required_argument, 0, 'o' },
	{ "compression-level", required_argument, 0, OPT_COMPRESSION_LEVEL },
	{ "no-progress", no_argument, 0, OPT_NO_PROGRESS },
	{ "help", no_argument, 0, 'h' },
	{ "version", no_argument, 0, OPT_VERSION },
	{ 0, 0, 0, 0 },
};

/* What the command line asks for. */
typedef struct import_args {
	const char *out;
	const char **in; /* room for argc names */
	size_t n;
	int use_stdin, level;
	int no_progress; /* --no-progress: never a progress line */
} import_args;

/* Returns -1 to go on, or the exit status (help, version, usage error). */
static int parse_args(int argc, char **argv, import_args *a)
{
	int c;
	while ((c = getopt_long(argc, argv, "ho:", long_options, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(usage, stdout); return 0;
		case OPT_VERSION:
			printf("trace-import (nanotrace) %s\nwrites archive format %d.%d\n",
			       NT_VERSION_STRING, NT_FORMAT_MAJOR, NT_FORMAT_MINOR);
			return 0;
		case 'o': a->out = optarg; break;
		case OPT_NO_PROGRESS: a->no_progress = 1; break;
		case OPT_COMPRESSION_LEVEL:
			if ((a->level = parse_level(optarg)) == -1000)
				return bad_usage("--compression-level needs off or a level from -50 to "
						 "22, not '", optarg);
			break;
		default: return bad_usage(NULL, NULL); /* getopt_long named the option */
		}
	}
	for (int i = optind; i < argc; i++) {
		if (strcmp(argv[i], "-") == 0)
			a->use_stdin = 1;
		else
			a->in[a->n++] = argv[i];
	}
	if (a->use_stdin && a->n > 0)
		return bad_usage("standard input (-) does not combine with files", NULL);
	return -1;
}

/* An import of no event at all is an error, whatever the input: a directory skips its
 * empty files (git creates a target's file before it writes) and fails when none is left,
 * so an empty FILE or standard input fails too, rather than make an archive of nothing. */
static int holds_events(const void *archive, size_t asize, const char *what)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(archive, asize, "import", &err);
	uint64_t events = r ? nt_reader_info(r)->events_written : 0;
	nt_reader_close(r);
	if (events == 0) {
		char shown[4096];
		fprintf(stderr, "trace-import: %s: no Trace2 event to import (an empty file, or "
				"one git has not written yet); no archive written\n",
			nt_term_escape_str(shown, sizeof(shown), what));
	}
	return events > 0;
}

int main(int argc, char **argv)
{
	argv[0] = "trace-import"; /* getopt's messages name the program, not its path */
	import_args a = { .level = DEFAULT_LEVEL };
	a.in = calloc((size_t)argc, sizeof(*a.in));
	if (a.in == NULL) {
		fprintf(stderr, "trace-import: out of memory\n");
		return 2;
	}
	int rc = parse_args(argc, argv, &a);
	if (rc >= 0) {
		free(a.in);
		return rc;
	}
	const char *out = a.out, **in = a.in;
	size_t n = a.n;
	int level = a.level;
	void *archive = NULL;
	size_t asize = 0;
	int ok;
	if (n == 0) {
		ok = import_stdin(&archive, &asize);
	} else {
		nt_trace2_import_error err;
		nt_progress prog = { 0 };
		int shown = !a.no_progress && nt_progress_wanted_on_stderr();
		if (shown)
			nt_progress_begin(&prog, "trace-import");
		ok = nt_trace2_import_paths_progress(in, n, &archive, &asize, &err,
						     shown ? show_progress : NULL, &prog) == 0;
		if (shown)
			nt_progress_end(&prog);
		if (!ok)
			fprintf(stderr, "trace-import: %s\n",
				nt_term_escape_str(err.message, sizeof(err.message), err.message));
	}
	char def[4096];
	if (ok && out == NULL) {
		/* "dir/" names the archive "dir.ntrace", beside the directory. */
		size_t len = n ? strlen(in[0]) : 0;
		while (len > 1 && in[0][len - 1] == '/')
			len--;
		int w = snprintf(def, sizeof(def), "%.*s.ntrace", n ? (int)len : 6,
				 n ? in[0] : "trace2");
		out = def;
		if (w < 0 || (size_t)w >= sizeof(def)) { /* never a file at a cut name */
			fprintf(stderr, "trace-import: the archive's name (the input's, with "
					".ntrace) is too long: name it with -o\n");
			ok = 0;
		}
	}
	if (ok)
		ok = holds_events(archive, asize, n == 0 ? "(standard input)"
					   : n == 1 ? in[0] : "(all the inputs)");
	free(in);
	if (ok)
		ok = compress_archive(&archive, &asize, level);
	if (ok && !write_archive(out, archive, asize)) {
		fprintf(stderr, "trace-import: %s: %s\n", out, nt_private_strerror(errno));
		ok = 0;
	}
	free(archive);
	return ok ? 0 : 2;
}
