/*
 * nt_mgr_base.c - the bottom of manager/core: the log, the clock, sending one message,
 * closing a connection at the end of a turn and noting a trace's problems. It calls
 * nothing of manager/core; every other file of it may call these.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nt_mgr_internal.h"
#include "runtime/nt_sock.h"
#include "runtime/nt_term_escape.h"

void nt_mgr_log(nt_manager *m, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* A line may quote what a peer sent (a name, a category list): never a terminal's escape. */
	nt_term_escape(line, sizeof(line), line, strlen(line));
	if (m->cfg.log != NULL)
		m->cfg.log(m->cfg.log_ctx, line);
	else
		fprintf(stderr, "nanotrace-manager: %s\n", line);
}

int64_t nt_mgr_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int nt_mgr_send(int sock, const nt_wire_msg *msg, const int *fds, int nfds)
{
	return nt_sock_send(sock, msg, sizeof(*msg), fds, nfds, 1);
}

void nt_mgr_conn_close(nt_manager *m, nt_mgr_conn *c)
{
	(void)m;
	c->closing = 1;
}

void nt_mgr_trace_problem(nt_manager *m, const char *fmt, ...)
{
	char line[NT_WIRE_MAX_TEXT];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	char *p = m->trace.problems;
	size_t used = strlen(p), cap = sizeof(m->trace.problems);
	if (used + 1 < cap)
		snprintf(p + used, cap - used, "%s%s", used ? "\n" : "", line);
}
