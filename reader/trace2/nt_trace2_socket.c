/*
 * nt_trace2_socket.c - Git's af_unix Trace2 target as a FILE (nanotrace_reader.h, TRACE2
 * SOCKETS): a fopencookie stream whose writes are cut at '\n' and sent one line per message
 * over runtime/nt_sock.h, as git's trace2/tr2_dst.c writes one line per write(2), one
 * datagram per line on a dgram socket. Any renderer writes into it as into stdout: trace-dump
 * -o af_unix:... and the forwarder (nt_trace2_forward.c) both do.
 *
 * A send that fails, or blocks past NT_TRACE2_FORWARD_SEND_TIMEOUT_MS, is one warning and
 * fails the write (the renderer then stops, as on any failed output).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/nt_sock.h"
#include "runtime/nt_term_escape.h"
#include "runtime/nt_trace2_forward.h"
#include "nt_trace2.h"

struct t2_sink {
	int fd;
	int warned;  /* one warning per sink (atomic) */
	int abandon; /* every later write fails at once (atomic) */
	char *carry; /* a line cut by a write's end */
	size_t ncarry, capcarry;
	char who[512]; /* "<who>='<target>'", escaped for the terminal */
};

void t2_sink_say(t2_sink *s, const char *fmt, ...)
{
	if (__atomic_exchange_n(&s->warned, 1, __ATOMIC_ACQ_REL))
		return;
	char line[1024];
	int n = snprintf(line, sizeof(line), "%s: ", s->who);
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, (size_t)n); /* one write: lines never interleave */
	(void)w;
}

int t2_sink_warned(t2_sink *s)
{
	return __atomic_load_n(&s->warned, __ATOMIC_ACQUIRE);
}

void t2_sink_abandon(t2_sink *s)
{
	__atomic_store_n(&s->abandon, 1, __ATOMIC_RELEASE);
	shutdown(s->fd, SHUT_RDWR); /* a send blocked on a stalled listener fails at once */
}

void t2_sink_forget(t2_sink *s)
{
	close(s->fd);
}

/* One line (its '\n' included) as one message. */
static int send_line(t2_sink *s, const char *p, size_t n)
{
	int rc = nt_sock_send(s->fd, p, n, NULL, 0, 0);
	if (rc == 0)
		return 0;
	t2_sink_say(s, "%s; the target is off", rc == -EAGAIN ? "the listener stopped reading"
			   : rc == -EIO ? "a line was sent short" : strerror(-rc));
	errno = -rc;
	return -1;
}

static int carry_append(t2_sink *s, const char *p, size_t n)
{
	if (s->ncarry + n > s->capcarry) {
		size_t cap = (s->ncarry + n) * 2;
		char *grown = realloc(s->carry, cap);
		if (grown == NULL)
			return -1;
		s->carry = grown, s->capcarry = cap;
	}
	memcpy(s->carry + s->ncarry, p, n);
	s->ncarry += n;
	return 0;
}

/* Sends every whole line, keeps the rest for the next write. */
static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
	t2_sink *s = cookie;
	size_t at = 0;
	if (__atomic_load_n(&s->abandon, __ATOMIC_ACQUIRE)) {
		errno = EPIPE;
		return -1;
	}
	for (const char *nl; (nl = memchr(buf + at, '\n', size - at)) != NULL;) {
		size_t len = (size_t)(nl - (buf + at)) + 1;
		int rc;
		if (s->ncarry == 0) {
			rc = send_line(s, buf + at, len);
		} else {
			if (carry_append(s, buf + at, len) != 0)
				return -1;
			rc = send_line(s, s->carry, s->ncarry);
			s->ncarry = 0;
		}
		if (rc != 0)
			return -1;
		at += len;
	}
	if (size > at && carry_append(s, buf + at, size - at) != 0)
		return -1;
	return (ssize_t)size;
}

/* A last piece without its '\n' goes as a line of its own; then the socket is closed. */
static int sink_close(void *cookie)
{
	t2_sink *s = cookie;
	int rc = 0;
	if (s->ncarry > 0 && !__atomic_load_n(&s->abandon, __ATOMIC_ACQUIRE))
		rc = send_line(s, s->carry, s->ncarry);
	close(s->fd);
	free(s->carry);
	free(s);
	return rc;
}

FILE *t2_sink_open(const char *target, const char *who, t2_sink **sink_out)
{
	t2_sink *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		fprintf(stderr, "%s: out of memory\n", who ? who : "nanotrace: target");
		return NULL;
	}
	s->fd = -1;
	char shown[256];
	const char *t = target ? target : "(null)";
	nt_term_escape(shown, sizeof(shown), t, strlen(t));
	snprintf(s->who, sizeof(s->who), "%s='%s'", who ? who : "nanotrace: target", shown);
	int type, used;
	const char *path, *why;
	FILE *f = NULL;
	if (nt_sock_target_parse(target, &type, &path, &why) != 0) {
		t2_sink_say(s, "%s; expected af_unix:[stream:|dgram:]<absolute path>", why);
	} else if ((s->fd = nt_sock_connect_target(path, type, NT_TRACE2_FORWARD_SEND_TIMEOUT_MS,
						   &used)) < 0) {
		t2_sink_say(s, "cannot connect: %s; the target is off", strerror(-s->fd));
	} else {
		cookie_io_functions_t io = { .write = sink_write, .close = sink_close };
		f = fopencookie(s, "w", io);
		if (f == NULL || setvbuf(f, NULL, _IONBF, 0) != 0) {
			t2_sink_say(s, "%s; the target is off", strerror(errno ? errno : ENOMEM));
			if (f != NULL)
				fclose(f); /* frees s */
			return NULL;
		}
		if (sink_out != NULL)
			*sink_out = s;
		return f;
	}
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	return NULL;
}

FILE *nt_trace2_socket_open(const char *target, const char *who)
{
	return t2_sink_open(target, who, NULL);
}
