/*
 * nt_reader_error.c - the one formatter of the reader's nt_reader_error messages: the bottom
 * of reader/decode, calling nothing above it.
 */
#include <stdarg.h>
#include <stdio.h>

#include "nt_reader_internal.h"

void nt_reader_fail(nt_reader_error *err, const char *name, uint64_t off, const char *fmt, ...)
{
	if (err == NULL)
		return;
	err->offset = off;
	/* Truncation of an overlong path is acceptable: the message stays one line. */
	int n = snprintf(err->message, sizeof(err->message), "%.200s: ", name);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message + n, sizeof(err->message) - (size_t)n, fmt, ap);
	va_end(ap);
}
