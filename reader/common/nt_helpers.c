/* nt_helpers.c - NANOTRACE_READER_AHEAD and the CPUs: whether the reader library may start
 * helper threads (nt_helpers.h). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanotrace/nanotrace_reader.h>
#include "nt_helpers.h"

int nt_helpers_env(void)
{
	static int warned;
	const char *s = getenv("NANOTRACE_READER_AHEAD");
	if (s == NULL || strcmp(s, "auto") == 0)
		return -1;
	if (strcmp(s, "off") == 0)
		return 0;
	char *end;
	long n = strtol(s, &end, 10);
	if (end != s && *end == '\0' && n >= 0 && n <= NT_READER_AHEAD_MAX_BUFFERS)
		return (int)n;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "nanotrace: NANOTRACE_READER_AHEAD=\"%s\" is not off, auto or 0..%d: "
			"decompressing ahead as by default\n", s, NT_READER_AHEAD_MAX_BUFFERS);
	return -1;
}

int nt_helpers_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	return CPU_COUNT(&set);
}
