/* trace-import - convert Git Trace2 EVENT streams into a nanotrace archive. A thin layer
 * over nt_trace2_import() and nt_trace2_import_paths(). Exit status: 0 success, 1 usage
 * error, 2 unreadable or malformed input, or an output that could not be written. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nanotrace/nanotrace_reader.h>
#include "../../format/nt_private_file.h"
#include "../common/nt_grow.h"

static const char usage[] =
	"usage: trace-import [-o ARCHIVE] [--compression-level N] [FILE|DIRECTORY ...]\n"
	"\n"
	"Reads Git Trace2 EVENT lines (what GIT_TRACE2_EVENT writes) from each FILE, from the\n"
	"files of each DIRECTORY (a GIT_TRACE2_EVENT directory target: one file per process;\n"
	"empty files are skipped), or from standard input (no FILE, or -), and writes one\n"
	"nanotrace archive to ARCHIVE (default: the first FILE or DIRECTORY + .ntrace, or\n"
	"trace2.ntrace for standard input). Several streams are interleaved by time, as if\n"
	"the processes had written one file. Keys and events this version does not know are\n"
	"kept. Render it with\n"
	"  trace-dump --format normal|perf|event ARCHIVE\n"
	"\n"
	"  -o, --output ARCHIVE       where to write the archive\n"
	"  --compression-level N      zstd level of the archive's chunks, -50 (fastest) to 22\n"
	"                             (smallest); 0 or off: uncompressed (default 3)\n"
	"\n"
	"Exit status: 0 success, 1 usage error, 2 unreadable or malformed input or output.\n";

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

/* Written beside the target under a random name (format/nt_private_file.h: mkostemp,
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
		fprintf(stderr, "trace-import: (standard input): %s\n", err.message);
	free(data);
	return rc == 0;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	const char **in = calloc((size_t)argc, sizeof(*in));
	size_t n = 0;
	int use_stdin = 0, level = DEFAULT_LEVEL;
	if (in == NULL) {
		fprintf(stderr, "trace-import: out of memory\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			free(in);
			return 0;
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "trace-import: option %s needs a file name\n%s", a, usage);
				free(in);
				return 1;
			}
			out = argv[++i];
		} else if (strcmp(a, "--compression-level") == 0) {
			if (i + 1 >= argc || (level = parse_level(argv[i + 1])) == -1000) {
				fprintf(stderr, "trace-import: --compression-level needs off or a level "
						"from -50 to 22, not '%s'\n%s",
					i + 1 < argc ? argv[i + 1] : "", usage);
				free(in);
				return 1;
			}
			i++;
		} else if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "trace-import: unknown option '%s'\n%s", a, usage);
			free(in);
			return 1;
		} else if (strcmp(a, "-") == 0) {
			use_stdin = 1;
		} else {
			in[n++] = a;
		}
	}
	if (use_stdin && n > 0) {
		fprintf(stderr, "trace-import: standard input (-) does not combine with files\n%s",
			usage);
		free(in);
		return 1;
	}
	void *archive = NULL;
	size_t asize = 0;
	int ok;
	if (n == 0) {
		ok = import_stdin(&archive, &asize);
	} else {
		nt_trace2_import_error err;
		ok = nt_trace2_import_paths(in, n, &archive, &asize, &err) == 0;
		if (!ok)
			fprintf(stderr, "trace-import: %s\n", err.message);
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
