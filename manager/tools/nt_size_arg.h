/*
 * nt_size_arg.h - a size on the manager programs' command lines (trace-record's
 * --buffer-size and --otlp-spool-size, nanotrace-manager's --otlp-spool-size): bytes, or
 * with K, M or G (also KiB, KB, ...: powers of 1024). Header-only: both programs use it.
 */
#ifndef NT_SIZE_ARG_H
#define NT_SIZE_ARG_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* 0 and the size in *out, or -1 when s is no size (negative, garbage, an unknown suffix,
 * past UINT64_MAX). Cost: one strtoull. */
static inline int nt_size_arg(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || s[0] == '-')
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end == 'i' && shift)
		end++;
	if (*end == 'B' && shift)
		end++;
	if (*end != '\0' || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

#endif /* NT_SIZE_ARG_H */
