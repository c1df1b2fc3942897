/*
 * nt_env.c - NANOTRACE=<path> turns recording on from the environment, for any program
 * (nt_start_from_env) and for the layers built on the core (Trace2's NT_T2_INITIALIZE),
 * with one parser: destination, per-process files in a directory, the max-files sentinel,
 * the session's settings.
 *
 * nt_env_start prints nothing: a bad value is an error with nt_last_error(), and the caller
 * decides whether it is worth a line on stderr (a Trace2 program) or its own handling. The
 * variables nt_start() itself reads (NANOTRACE_COMPRESSION, NANOTRACE_BLOCKING_TIMEOUT,
 * NANOTRACE_CLOCK: nt_env_warn.c)
 * have no caller to tell: their garbage is one nt_env_warn() line and the default. Every
 * value shown in a message goes through nt_env_shown(), so one bad value is one line,
 * whatever it holds. The top of writer/core with nt_lifecycle.c: it starts sessions
 * (nt_start), and nothing of the folder calls it.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "nt_core.h"
#include "nt_internal.h"

#define DISCARD_NAME "nanotrace-discard"
#define WHO "nt_start_from_env"

/* "4M", "65536", "1G": bytes, or 0 when malformed. Digits first: strtoull would skip
 * blanks and take a sign, reading " -1" as 2^64 - 1. */
static size_t parse_size(const char *v)
{
	if (!isdigit((unsigned char)v[0]))
		return 0;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno)
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

/* A count of files: digits only, at most INT_MAX; -1 when malformed. */
static long parse_count(const char *v)
{
	if (!isdigit((unsigned char)v[0]))
		return -1;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	return errno || *end != '\0' || n > INT_MAX ? -1 : n;
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

/* When the directory holds max_files entries or more (. and .. included, as Git counts),
 * the trace goes to the discard sentinel, and once that exists nothing is recorded.
 * Returns 1 with *out claimed, 0 to go on with a per-process name, NT_DISABLED to record
 * nothing. */
static int discard_when_full(const char *dir, long max_files, char *out, size_t cap,
			     int *too_many)
{
	if (max_files <= 0)
		return 0;
	snprintf(out, cap, "%s/%s", dir, DISCARD_NAME);
	if (access(out, F_OK) == 0)
		return NT_DISABLED; /* an earlier process already hit the limit: silently off */
	DIR *d = opendir(dir);
	long count = 0;
	if (d != NULL) {
		while (count < max_files && readdir(d) != NULL)
			count++;
		closedir(d);
	}
	if (count < max_files)
		return 0;
	if (!claim(out))
		return NT_DISABLED;
	*too_many = 1;
	return 1;
}

/* Directory target: "<dir>/<unique>" (or .1 ... .9), or the discard sentinel. */
static nt_result pick_in_directory(const char *dir, const char *unique, long max_files,
				   char *out, size_t cap, int *too_many)
{
	int full = discard_when_full(dir, max_files, out, cap, too_many);
	if (full != 0)
		return full == 1 ? NT_OK : NT_DISABLED;
	for (int attempt = 0; attempt < 10; attempt++) {
		if (attempt == 0)
			snprintf(out, cap, "%s/%s", dir, unique);
		else
			snprintf(out, cap, "%s/%s.%d", dir, unique, attempt);
		if (claim(out))
			return NT_OK;
		if (errno != EEXIST)
			break;
	}
	nt_set_error(WHO ": cannot create a trace file in '%s': %s", dir, strerror(errno));
	return NT_ERR_IO;
}

/* The archive's path for target v (a directory or a file), claimed. A file target is
 * taken by the first process; a second one (a child inheriting NANOTRACE) must not replace
 * it, so it writes "<file>.<unique>" beside it. */
static nt_result pick_path(const char *v, const char *unique, long max_files, char *path,
			   size_t cap, int *too_many_files)
{
	struct stat st;
	if (stat(v, &st) == 0 && S_ISDIR(st.st_mode))
		return pick_in_directory(v, unique, max_files, path, cap, too_many_files);
	snprintf(path, cap, "%s", v);
	if (claim(path))
		return NT_OK;
	if (errno == EEXIST) {
		snprintf(path, cap, "%s.%s", v, unique);
		if (claim(path))
			return NT_OK;
	}
	nt_set_error(WHO ": cannot create '%s': %s", path, strerror(errno));
	return NT_ERR_IO;
}

static nt_result bad_value(const char *var, const char *v, const char *expected)
{
	char shown[NT_ENV_SHOWN_MAX];
	nt_set_error(WHO ": unknown value for '%s': '%s' (%s)", var, nt_env_shown(v, shown),
		     expected);
	return NT_ERR_INVALID_ARGUMENT;
}

/* A variable's value, or NULL when unset or empty (empty means "the default"). In a
 * set-user-ID or set-group-ID program every NANOTRACE* variable reads as unset
 * (secure_getenv): its caller must not pick where a privileged process writes. */
static const char *env(const char *name)
{
	const char *v = secure_getenv(name);
	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The session's settings from NANOTRACE_MODE, _BUFFER_SIZE, _CATEGORIES, _CLOCK and
 * _MAX_FILES. */
static nt_result config_from_env(nt_config *cfg, long *max_files)
{
	const char *v;
	if ((v = env("NANOTRACE_MODE")) != NULL && (cfg->mode = nt_mode_from_name(v)) < 0)
		return bad_value("NANOTRACE_MODE", v, "oneshot, circular or streaming");
	if ((v = env("NANOTRACE_BUFFER_SIZE")) != NULL) {
		size_t bytes = parse_size(v);
		if (bytes < NT_MIN_BUFFER || bytes > NT_ENV_MAX_BUFFER_BYTES) {
			char expected[96];
			snprintf(expected, sizeof(expected),
				 "bytes from %uK to %uM, optionally with K, M or G",
				 NT_MIN_BUFFER >> 10, NT_ENV_MAX_BUFFER_BYTES >> 20);
			return bad_value("NANOTRACE_BUFFER_SIZE", v, expected);
		}
		cfg->buffer_size = bytes;
	}
	if ((v = env("NANOTRACE_CATEGORIES")) != NULL) {
		if (nt_category_patterns_check(WHO ": NANOTRACE_CATEGORIES", v) != NT_OK)
			return NT_ERR_INVALID_ARGUMENT;
		cfg->categories = v;
	}
	if ((v = env("NANOTRACE_CLOCK")) != NULL) {
		int choice = nt_env_clock_choice(v);
		if (choice < 0)
			return bad_value("NANOTRACE_CLOCK", v, "auto, monotonic or tsc");
		cfg->clock = (nt_clock_choice)choice;
	}
	*max_files = 0;
	if ((v = env("NANOTRACE_MAX_FILES")) != NULL && (*max_files = parse_count(v)) < 0)
		return bad_value("NANOTRACE_MAX_FILES", v, "a number of files, 0 to 2147483647");
	return NT_OK;
}

nt_result nt_env_start(const char *unique, int *too_many_files)
{
	const char *v = secure_getenv("NANOTRACE"); /* see env() */
	int too_many = 0;
	if (too_many_files != NULL)
		*too_many_files = 0;
	/* Registered with a trace manager (NANOTRACE_MANAGER): the manager records this
	 * process, and NANOTRACE is not a second destination. */
	if (nt_registry_owns_session())
		return NT_OK;
	if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0)
		return NT_DISABLED;
	if (v[0] != '/')
		return bad_value("NANOTRACE", v, "an absolute path to an archive or a directory");
	char path[4096], expected[64];
	size_t room = sizeof(path) - strlen(unique) - sizeof("/.9");
	if (strlen(v) > room) { /* never a file at a truncated path */
		snprintf(expected, sizeof(expected), "a path of at most %zu bytes", room);
		return bad_value("NANOTRACE", v, expected);
	}
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.file_mode = 0600;
	long max_files;
	nt_result rc = config_from_env(&cfg, &max_files);
	if (rc == NT_OK)
		rc = pick_path(v, unique, max_files, path, sizeof(path), &too_many);
	if (rc != NT_OK)
		return rc;
	cfg.path = path;
	rc = nt_start(&cfg);
	if (rc != NT_OK) {
		unlink(path); /* claimed above, never written */
		return rc;
	}
	if (too_many_files != NULL)
		*too_many_files = too_many;
	return NT_OK;
}

nt_result nt_env_start_private(const char *unique)
{
	if (nt_registry_owns_session())
		return NT_OK;
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.file_mode = 0600;
	long max_files;
	nt_result rc = config_from_env(&cfg, &max_files);
	if (rc != NT_OK)
		return rc;
	/* Only the follower reads it: the newest events, in a small arena that each poll copies
	 * whole (nt_core.h says why this size). */
	cfg.mode = NT_MODE_CIRCULAR;
	if (secure_getenv("NANOTRACE_BUFFER_SIZE") == NULL)
		cfg.buffer_size = NT_PRIVATE_ARENA_BYTES;
	char path[4096];
	if (nt_private_arena_path(path, sizeof(path), unique) != 0) {
		nt_set_error(WHO ": cannot make a private directory for the arena: %s",
			     strerror(errno));
		return NT_ERR_IO;
	}
	cfg.path = path;
	rc = nt_start(&cfg);
	if (rc != NT_OK)
		nt_private_arena_remove(1);
	return rc;
}

const char *nt_core_arena_path(void)
{
	return nt_S.file_backed && !nt_S.manager_buffer ? nt_S.path : NULL;
}

void nt_core_private_arena_unlink(void)
{
	nt_private_arena_remove(0);
}

/* "<program>-<UTC time>-P<pid>.ntrace": distinct per process, and sorted by start time in a
 * directory listing. */
nt_result nt_start_from_env(void)
{
	struct timeval tv;
	struct tm tm;
	char unique[160];
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	const char *prog = program_invocation_short_name;
	snprintf(unique, sizeof(unique), "%.64s-%04d%02d%02dT%02d%02d%02d.%06ldZ-P%08x.ntrace",
		 prog != NULL && prog[0] != '\0' && prog[0] != '.' ? prog : "nanotrace",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (long)tv.tv_usec, (unsigned)getpid());
	return nt_env_start(unique, NULL);
}
