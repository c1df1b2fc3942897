/*
 * nt_env_warn.c - how the writer speaks about its environment variables: a value shown on
 * one line whatever it holds (nt_env_shown), one warning line written at once
 * (nt_env_warn), NANOTRACE_CLOCK's names, which nt_env.c's parser and nt_start()'s clock
 * setup share (nt_env_clock_choice), and NANOTRACE_COMPRESSION and
 * NANOTRACE_BLOCKING_TIMEOUT, which nt_start() reads (nt_compression_level,
 * nt_blocking_timeout_ns) whoever starts the session: the program, nt_start_from_env, or a
 * trace manager's provider thread (which is how a process under trace-record gets it).
 *
 * Kept apart from nt_env.c so that tests/fuzz/fuzz_env.c, which compiles nt_env.c into
 * itself to reach its static parsers, links these from the library without a second copy;
 * and below the session (nt_session.c calls them), where nt_env.c, which starts sessions,
 * is above it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_core.h"
#include "nt_internal.h"

const char *nt_env_shown(const char *v, char out[NT_ENV_SHOWN_MAX])
{
	static const char hex[] = "0123456789abcdef";
	size_t len = strlen(v), o = 0, shown = len > 64 ? 64 : len;
	for (size_t i = 0; i < shown; i++) {
		unsigned char c = (unsigned char)v[i];
		if (c < 0x20 || c >= 0x7f || c == '\\' || c == '\'') {
			out[o++] = '\\', out[o++] = 'x', out[o++] = hex[c >> 4], out[o++] = hex[c & 15];
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
	if (shown < len) /* 64 * 4 + this stays below NT_ENV_SHOWN_MAX */
		snprintf(out + o, NT_ENV_SHOWN_MAX - o, "... (%zu bytes)", len);
	return out;
}

void nt_env_warn(const char *fmt, ...)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "nanotrace: ");
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof(line) - 2)
		len = sizeof(line) - 2;
	/* One line whatever a message quotes (a path from the environment, say): control
	 * characters become '?' here; values shown by nt_env_shown() are already escaped. */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			line[i] = '?';
	line[len++] = '\n';
	for (size_t done = 0; done < len;) { /* one write: lines of processes never mix */
		ssize_t w = write(STDERR_FILENO, line + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
}

int nt_env_clock_choice(const char *v)
{
	if (strcmp(v, "auto") == 0)
		return NT_CLOCK_AUTO;
	if (strcmp(v, "monotonic") == 0)
		return NT_CLOCK_USE_MONOTONIC;
	if (strcmp(v, "tsc") == 0)
		return NT_CLOCK_USE_TSC;
	return -1;
}

NT_STATIC_ASSERT(NT_COMPRESSION_DEFAULT == NT_ZCHUNK_LEVEL_DEFAULT,
		 "one default level for the library and the trace manager");

int nt_compression_level(int cfg_level)
{
	if (cfg_level == NT_COMPRESSION_OFF)
		return 0;
	if (cfg_level != 0)
		return cfg_level;
	const char *v = secure_getenv("NANOTRACE_COMPRESSION"); /* empty: the default */
	if (v == NULL || v[0] == '\0')
		return NT_COMPRESSION_DEFAULT;
	if (strcmp(v, "off") == 0)
		return 0;
	char *end;
	errno = 0;
	long level = strtol(v, &end, 10);
	if (errno == 0 && end != v && *end == '\0' && (level == 0 || nt_zchunk_level_ok((int)level)))
		return (int)level;
	char shown[NT_ENV_SHOWN_MAX];
	nt_env_warn("NANOTRACE_COMPRESSION='%s' is not off, 0 or a level from %d to %d; using %d",
		    nt_env_shown(v, shown), NT_ZCHUNK_LEVEL_MIN, NT_ZCHUNK_LEVEL_MAX,
		    NT_COMPRESSION_DEFAULT);
	return NT_COMPRESSION_DEFAULT;
}

uint64_t nt_blocking_timeout_ns(long long cfg_us)
{
	if (cfg_us == NT_BLOCKING_OFF)
		return 0;
	if (cfg_us != 0)
		return (uint64_t)cfg_us * 1000u;
	const char *v = secure_getenv("NANOTRACE_BLOCKING_TIMEOUT"); /* empty: the default */
	if (v == NULL || v[0] == '\0' || strcmp(v, "off") == 0)
		return 0;
	/* Digits only: strtoll would skip blanks and take a sign. */
	char *end = (char *)v;
	long long us = -1;
	if (v[0] >= '0' && v[0] <= '9') {
		errno = 0;
		us = strtoll(v, &end, 10);
		if (errno != 0 || *end != '\0')
			us = -1;
	}
	if (us >= 0 && us <= NT_BLOCKING_TIMEOUT_MAX_US)
		return (uint64_t)us * 1000u;
	char shown[NT_ENV_SHOWN_MAX];
	nt_env_warn("NANOTRACE_BLOCKING_TIMEOUT='%s' is not off or microseconds from 0 to %lld; "
		    "writers will not wait", nt_env_shown(v, shown), NT_BLOCKING_TIMEOUT_MAX_US);
	return 0;
}
