/* nt_error.c - this thread's last error message (the convention: nt_error.h). */
#include <stdarg.h>
#include <stdio.h>

#include <nanotrace/nanotrace.h>
#include "nt_error.h"

static __thread char last_error[512];

const char *nt_last_error(void)
{
	return last_error;
}

void nt_set_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	/* One line, as nt_last_error() promises, whatever a caller's string (a path, a pattern
	 * from the environment) held. */
	for (char *c = last_error; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

void nt_clear_error(void)
{
	last_error[0] = '\0';
}
