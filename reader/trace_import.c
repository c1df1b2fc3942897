/* trace-import - convert a Git Trace2 EVENT stream into a nanotrace archive. A thin layer
 * over nt_trace2_import(). Exit status: 0 success, 1 usage error, 2 unreadable or malformed
 * input, or an output that could not be written. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nanotrace_reader.h"

static const char usage[] =
	"usage: trace-import [-o ARCHIVE] [EVENT_FILE]\n"
	"\n"
	"Reads Git Trace2 EVENT lines (what GIT_TRACE2_EVENT writes) from EVENT_FILE, or from\n"
	"standard input, and writes a nanotrace archive to ARCHIVE (default: EVENT_FILE.ntrace,\n"
	"or trace2.ntrace for standard input). Render it with\n"
	"  trace-dump --format normal|perf|event ARCHIVE\n"
	"\n"
	"Exit status: 0 success, 1 usage error, 2 unreadable or malformed input or output.\n";

static int read_all(FILE *in, char **data, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	if (buf == NULL)
		return 0;
	for (;;) {
		if (n == cap) {
			char *b = realloc(buf, cap *= 2);
			if (b == NULL) {
				free(buf);
				errno = ENOMEM;
				return 0;
			}
			buf = b;
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

/* Written next to the target and renamed over it: never a half-written archive. */
static int write_archive(const char *path, const void *data, size_t len)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 32);
	if (tmp == NULL)
		return 0;
	snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		free(tmp);
		return 0;
	}
	const char *p = data;
	size_t left = len;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = errno;
			close(fd);
			unlink(tmp);
			free(tmp);
			errno = e;
			return 0;
		}
		p += w;
		left -= (size_t)w;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		free(tmp);
		errno = e;
		return 0;
	}
	free(tmp);
	return 1;
}

int main(int argc, char **argv)
{
	const char *out = NULL, *in = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "trace-import: option %s needs a file name\n%s", a, usage);
				return 1;
			}
			out = argv[++i];
		} else if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "trace-import: unknown option '%s'\n%s", a, usage);
			return 1;
		} else if (in != NULL) {
			fprintf(stderr, "trace-import: only one input may be given (also got '%s')\n%s",
				a, usage);
			return 1;
		} else {
			in = a;
		}
	}
	const char *name = in && strcmp(in, "-") != 0 ? in : "(standard input)";
	FILE *f = in && strcmp(in, "-") != 0 ? fopen(in, "rb") : stdin;
	if (f == NULL) {
		fprintf(stderr, "trace-import: %s: %s\n", name, strerror(errno));
		return 2;
	}
	char *data = NULL;
	size_t len = 0;
	int ok = read_all(f, &data, &len);
	int e = errno;
	if (f != stdin)
		fclose(f);
	if (!ok) {
		fprintf(stderr, "trace-import: %s: %s\n", name, strerror(e));
		return 2;
	}
	void *archive = NULL;
	size_t asize = 0;
	nt_trace2_import_error err;
	if (nt_trace2_import(data, len, &archive, &asize, &err) != 0) {
		fprintf(stderr, "trace-import: %s: %s\n", name, err.message);
		free(data);
		return 2;
	}
	free(data);
	char def[4096];
	if (out == NULL) {
		snprintf(def, sizeof(def), "%s.ntrace", f != stdin ? in : "trace2");
		out = def;
	}
	if (!write_archive(out, archive, asize)) {
		fprintf(stderr, "trace-import: %s: %s\n", out, strerror(errno));
		free(archive);
		return 2;
	}
	free(archive);
	return 0;
}
