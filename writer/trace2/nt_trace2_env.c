/*
 * nt_trace2_env.c - NANOTRACE=<path> turns recording on, as GIT_TRACE2=<path> does for Git
 * (git/git trace2/tr2_dst.c, tr2_sid.c): destination, per-process files in a directory,
 * the max-files sentinel, and the SID passed to child processes.
 *
 * Tracing must never break the traced program: every problem is one line on stderr and
 * tracing stays off.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sha1.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "nt_trace2_internal.h"

#define DISCARD_NAME "nanotrace-discard"

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
	char line[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "nanotrace: %s\n", line);
}

void nt_t2_make_sid(char *out, size_t cap)
{
	struct timeval tv;
	struct tm tm;
	char host[256], hex[16];
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	/* Git's host part: the first 8 hex digits of SHA-1 of the host name. */
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		SHA1_CTX ctx;
		uint8_t digest[SHA1_DIGEST_LENGTH];
		SHA1Init(&ctx);
		SHA1Update(&ctx, (const uint8_t *)host, strlen(host));
		SHA1Final(digest, &ctx);
		snprintf(hex, sizeof(hex), "H%02x%02x%02x%02x", digest[0], digest[1], digest[2],
			 digest[3]);
	} else {
		snprintf(hex, sizeof(hex), "%s", "Localhost"); /* Git: no H */
	}
	char own[96];
	snprintf(own, sizeof(own), "%04d%02d%02dT%02d%02d%02d.%06ldZ-%s-P%08x",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (long)tv.tv_usec, hex, (unsigned)getpid());
	const char *parent = getenv("NANOTRACE_PARENT_SID");
	if (parent != NULL && parent[0] != '\0')
		snprintf(out, cap, "%s/%s", parent, own);
	else
		snprintf(out, cap, "%s", own);
}

/* "4M", "65536", "1G": bytes, or 0 when malformed. */
static size_t parse_size(const char *v)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v)
		return 0;
	unsigned long long mult = 1;
	if (*end == 'K' || *end == 'k')
		mult = 1ull << 10, end++;
	else if (*end == 'M' || *end == 'm')
		mult = 1ull << 20, end++;
	else if (*end == 'G' || *end == 'g')
		mult = 1ull << 30, end++;
	if (*end != '\0' || n > (unsigned long long)SIZE_MAX / mult)
		return 0;
	return (size_t)(n * mult);
}

/* Creates `path` exclusively (mode 0600) so no other process takes the name, and a link
 * planted there is never followed (EEXIST: the caller moves on to another name). */
static int claim(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* Directory target: "<dir>/<last SID component>" (or .1 ... .9), or the discard sentinel
 * when the directory holds max_files entries. Returns 0 when this process records nothing. */
static int pick_in_directory(const char *dir, long max_files, char *out, size_t cap,
			     int *too_many)
{
	if (max_files > 0) {
		snprintf(out, cap, "%s/%s", dir, DISCARD_NAME);
		if (access(out, F_OK) == 0)
			return 0; /* an earlier process already hit the limit: silently off */
		DIR *d = opendir(dir);
		long count = 0;
		if (d != NULL) {
			while (count < max_files && readdir(d) != NULL)
				count++; /* . and .. included, as Git counts */
			closedir(d);
		}
		if (count >= max_files) {
			if (!claim(out))
				return 0;
			*too_many = 1;
			return 1;
		}
	}
	const char *last = strrchr(nt_T2.sid, '/');
	last = last ? last + 1 : nt_T2.sid;
	for (int attempt = 0; attempt < 10; attempt++) {
		if (attempt == 0)
			snprintf(out, cap, "%s/%s", dir, last);
		else
			snprintf(out, cap, "%s/%s.%d", dir, last, attempt);
		if (claim(out))
			return 1;
		if (errno != EEXIST)
			break;
	}
	warn("cannot create a trace file in '%s': %s", dir, strerror(errno));
	return 0;
}

/* The session's settings from NANOTRACE_MODE, _BUFFER_SIZE, _CATEGORIES and _MAX_FILES;
 * returns 0 (after a warning) when one is malformed. */
static int config_from_env(nt_config *cfg, long *max_files)
{
	const char *mode = getenv("NANOTRACE_MODE");
	if (mode != NULL && mode[0] != '\0') {
		cfg->mode = nt_mode_from_name(mode);
		if (cfg->mode < 0) {
			warn("unknown value for 'NANOTRACE_MODE': '%s' (oneshot, circular or "
			     "streaming); tracing is off", mode);
			return 0;
		}
	}
	const char *size = getenv("NANOTRACE_BUFFER_SIZE");
	if (size != NULL && size[0] != '\0') {
		cfg->buffer_size = parse_size(size);
		if (cfg->buffer_size == 0) {
			warn("unknown value for 'NANOTRACE_BUFFER_SIZE': '%s' (bytes, optionally "
			     "with K, M or G); tracing is off", size);
			return 0;
		}
	}
	const char *cats = getenv("NANOTRACE_CATEGORIES");
	if (cats != NULL && cats[0] != '\0')
		cfg->categories = cats;
	*max_files = 0;
	const char *mf = getenv("NANOTRACE_MAX_FILES");
	if (mf != NULL && mf[0] != '\0') {
		char *end;
		*max_files = strtol(mf, &end, 10);
		if (*end != '\0' || *max_files < 0) {
			warn("unknown value for 'NANOTRACE_MAX_FILES': '%s'; tracing is off", mf);
			return 0;
		}
	}
	return 1;
}

/* The archive's path for target v (a directory or a file), claimed; 0 when this process
 * records nothing. */
static int pick_path(const char *v, long max_files, char *path, size_t cap, int *too_many_files)
{
	struct stat st;
	if (stat(v, &st) == 0 && S_ISDIR(st.st_mode))
		return pick_in_directory(v, max_files, path, cap, too_many_files);
	/* A file target: the first process takes it; a second one (a child inheriting
	 * NANOTRACE) must not replace it, so it writes beside it. */
	snprintf(path, cap, "%s", v);
	if (claim(path))
		return 1;
	if (errno != EEXIST) {
		warn("cannot create '%s': %s; tracing is off", v, strerror(errno));
		return 0;
	}
	const char *last = strrchr(nt_T2.sid, '/');
	snprintf(path, cap, "%s.%s", v, last ? last + 1 : nt_T2.sid);
	if (!claim(path)) {
		warn("cannot create '%s': %s; tracing is off", path, strerror(errno));
		return 0;
	}
	return 1;
}

int nt_t2_env_start(int *too_many_files)
{
	const char *v = getenv("NANOTRACE");
	*too_many_files = 0;
	if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0)
		return 0;
	if (v[0] != '/') {
		warn("unknown value for 'NANOTRACE': '%s' (expected an absolute path to an archive "
		     "or a directory); tracing is off", v);
		return 0;
	}
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.file_mode = 0600;
	long max_files;
	char path[4096];
	if (!config_from_env(&cfg, &max_files) ||
	    !pick_path(v, max_files, path, sizeof(path), too_many_files))
		return 0;
	cfg.path = path;
	if (nt_start(&cfg) != NT_OK) {
		warn("%s; tracing is off", nt_last_error());
		unlink(path);
		return 0;
	}
	return 1;
}
