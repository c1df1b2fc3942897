/*
 * nt_trace2_forward.c - Git's af_unix Trace2 target for a live archive
 * (nanotrace_reader.h, TRACE2 FORWARDING): a thread follows the archive
 * (nt_follow_poll), renders each poll's new Trace2 messages as EVENT lines
 * (t2_follow_paced, the renderer trace-dump --follow runs) into a FILE of its own
 * (fopencookie) whose writes are cut at '\n' and sent one line per message over
 * runtime/nt_sock.h, as git's trace2/tr2_dst.c writes one line per write(2), one datagram
 * per line on a dgram socket.
 *
 * The traced program's side (writer/trace2/nt_trace2_forward.c) finds these two functions
 * with dlsym (runtime/nt_trace2_forward.h states their names and types once); trace-dump
 * -o af_unix:... calls them directly. A target that cannot be reached, or a send that fails
 * or blocks past NT_TRACE2_FORWARD_SEND_TIMEOUT_MS, is one warning and the end of the
 * forwarding; nothing here changes the program's exit status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/nt_deadline.h"
#include "runtime/nt_sock.h"
#include "runtime/nt_term_escape.h"
#include "runtime/nt_trace2_forward.h"
#include "nt_trace2.h"

/* The public declarations in nanotrace_reader.h have the types the writer calls through. */
static nt_trace2_forward_start_fn *const start_has_its_type = nt_trace2_forward_start;
static nt_trace2_forward_stop_fn *const stop_has_its_type = nt_trace2_forward_stop;

struct nt_trace2_forwarder {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	int final;           /* stop asked: one last poll, then the end */
	int final_polled;
	int done;            /* the thread has ended */
	int warned;          /* one warning per forwarder (atomic) */
	int abandon;         /* the stop's wait ran out: end now (atomic) */
	int fd;
	unsigned interval_ms;
	nt_follower *f;
	FILE *out;
	char *carry; /* a line cut by a block's end */
	size_t ncarry, capcarry;
	char who[400]; /* "NANOTRACE_EVENT='af_unix:...'", escaped for the terminal */
};

static void say(nt_trace2_forwarder *fw, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* One line on stderr with one write(2) (lines of concurrent processes never interleave),
 * at most once per forwarder. */
static void say(nt_trace2_forwarder *fw, const char *fmt, ...)
{
	if (__atomic_exchange_n(&fw->warned, 1, __ATOMIC_ACQ_REL))
		return;
	char line[1024];
	int n = snprintf(line, sizeof(line), "nanotrace: %s: ", fw->who);
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
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
}

/* One Trace2 line (its '\n' included) as one message. */
static int send_line(nt_trace2_forwarder *fw, const char *p, size_t n)
{
	int rc = nt_sock_send(fw->fd, p, n, NULL, 0, 0);
	if (rc == 0)
		return 0;
	say(fw, "%s; the target is off", rc == -EAGAIN ? "the listener stopped reading"
			   : rc == -EIO ? "a line was sent short" : strerror(-rc));
	errno = -rc;
	return -1;
}

static int carry_append(nt_trace2_forwarder *fw, const char *p, size_t n)
{
	if (fw->ncarry + n > fw->capcarry) {
		size_t cap = (fw->ncarry + n) * 2;
		char *grown = realloc(fw->carry, cap);
		if (grown == NULL)
			return -1;
		fw->carry = grown, fw->capcarry = cap;
	}
	memcpy(fw->carry + fw->ncarry, p, n);
	fw->ncarry += n;
	return 0;
}

/* The rendering's output: sends every whole line, keeps the rest for the next write. */
static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
	nt_trace2_forwarder *fw = cookie;
	size_t at = 0;
	if (__atomic_load_n(&fw->abandon, __ATOMIC_ACQUIRE)) {
		errno = EPIPE;
		return -1;
	}
	for (const char *nl; (nl = memchr(buf + at, '\n', size - at)) != NULL;) {
		size_t len = (size_t)(nl - (buf + at)) + 1;
		int rc;
		if (fw->ncarry == 0) {
			rc = send_line(fw, buf + at, len);
		} else {
			if (carry_append(fw, buf + at, len) != 0)
				return -1;
			rc = send_line(fw, fw->carry, fw->ncarry);
			fw->ncarry = 0;
		}
		if (rc != 0)
			return -1;
		at += len;
	}
	if (size > at && carry_append(fw, buf + at, size - at) != 0)
		return -1;
	return (ssize_t)size;
}

/* Between polls: the interval, or less when a stop asks for the last poll; 0 after it. */
static int pause_between_polls(void *arg, unsigned interval_ms)
{
	nt_trace2_forwarder *fw = arg;
	pthread_mutex_lock(&fw->lock);
	struct timespec until = nt_deadline_after_ms((int)interval_ms);
	while (!fw->final && !__atomic_load_n(&fw->abandon, __ATOMIC_ACQUIRE) &&
	       pthread_cond_timedwait(&fw->cond, &fw->lock, &until) != ETIMEDOUT)
		;
	int again = !fw->final_polled && !__atomic_load_n(&fw->abandon, __ATOMIC_ACQUIRE);
	if (fw->final)
		fw->final_polled = 1;
	pthread_mutex_unlock(&fw->lock);
	return again;
}

/* Asked between polls and within one every NT_FOLLOW_ASK_EVERY events. */
static int not_abandoned(void *arg)
{
	nt_trace2_forwarder *fw = arg;
	return !__atomic_load_n(&fw->abandon, __ATOMIC_ACQUIRE);
}

static void *forward_thread(void *arg)
{
	nt_trace2_forwarder *fw = arg;
	nt_trace2_options opt;
	nt_trace2_options_init(&opt);
	opt.format = NT_TRACE2_EVENT;
	int st = t2_follow_paced(fw->f, fw->out, &opt, fw->interval_ms, not_abandoned,
				 pause_between_polls, fw);
	if (st == NT_FOLLOW_FAILED && !__atomic_load_n(&fw->warned, __ATOMIC_ACQUIRE))
		say(fw, "following the archive failed: %s; the target is off",
		    nt_follow_error(fw->f)[0] ? nt_follow_error(fw->f) : strerror(errno));
	pthread_mutex_lock(&fw->lock);
	fw->done = 1;
	pthread_cond_broadcast(&fw->cond);
	pthread_mutex_unlock(&fw->lock);
	return NULL;
}

static void forwarder_free(nt_trace2_forwarder *fw)
{
	if (fw->out != NULL)
		fclose(fw->out);
	nt_follow_close(fw->f);
	if (fw->fd >= 0)
		close(fw->fd);
	pthread_cond_destroy(&fw->cond);
	pthread_mutex_destroy(&fw->lock);
	free(fw->carry);
	free(fw);
}

/* The socket, the follower and the output; 0, or -1 after the warning. */
static int forwarder_open(nt_trace2_forwarder *fw, const char *archive, const char *target)
{
	int type;
	const char *path, *why;
	int rc = nt_sock_target_parse(target, &type, &path, &why);
	if (rc != 0) {
		say(fw, "%s; the target is off", why);
		return -1;
	}
	int used;
	fw->fd = nt_sock_connect_target(path, type, NT_TRACE2_FORWARD_SEND_TIMEOUT_MS, &used);
	if (fw->fd < 0) {
		say(fw, "cannot connect: %s; the target is off", strerror(-fw->fd));
		return -1;
	}
	nt_reader_error err;
	fw->f = nt_follow_open(archive, &err);
	if (fw->f == NULL) {
		say(fw, "cannot follow the archive: %s; the target is off", err.message);
		return -1;
	}
	cookie_io_functions_t io = { .write = cookie_write };
	fw->out = fopencookie(fw, "w", io);
	if (fw->out == NULL || setvbuf(fw->out, NULL, _IONBF, 0) != 0) {
		say(fw, "%s; the target is off", strerror(errno ? errno : ENOMEM));
		return -1;
	}
	return 0;
}

nt_trace2_forwarder *nt_trace2_forward_start(const char *archive, const char *target,
					      const char *who, unsigned interval_ms)
{
	(void)start_has_its_type, (void)stop_has_its_type;
	nt_trace2_forwarder *fw = calloc(1, sizeof(*fw));
	if (fw == NULL) {
		fprintf(stderr, "nanotrace: %s: out of memory; the target is off\n",
			who ? who : "Trace2 forwarding");
		return NULL;
	}
	fw->fd = -1;
	fw->interval_ms = interval_ms;
	char shown[256];
	const char *t = target ? target : "(null)";
	nt_term_escape(shown, sizeof(shown), t, strlen(t));
	snprintf(fw->who, sizeof(fw->who), "%s='%s'", who ? who : "target", shown);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fw->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&fw->lock, NULL);
	if (archive == NULL) {
		say(fw, "no archive to follow; the target is off");
		forwarder_free(fw);
		return NULL;
	}
	if (forwarder_open(fw, archive, target) != 0) {
		forwarder_free(fw);
		return NULL;
	}
	int rc = pthread_create(&fw->thread, NULL, forward_thread, fw);
	if (rc != 0) {
		say(fw, "cannot start its thread: %s; the target is off", strerror(rc));
		forwarder_free(fw);
		return NULL;
	}
	return fw;
}

int nt_trace2_forward_stop(nt_trace2_forwarder *fw, int timeout_ms)
{
	if (fw == NULL)
		return 0;
	if (timeout_ms < 0) {
		/* A fork() child: the thread is the parent's; only the socket is the child's copy. */
		close(fw->fd);
		return 0;
	}
	pthread_mutex_lock(&fw->lock);
	fw->final = 1;
	pthread_cond_broadcast(&fw->cond);
	struct timespec until = nt_deadline_after_ms(timeout_ms);
	while (!fw->done && pthread_cond_timedwait(&fw->cond, &fw->lock, &until) != ETIMEDOUT)
		;
	int done = fw->done;
	pthread_mutex_unlock(&fw->lock);
	if (!done) {
		/* Abandoned: a send blocked on the socket fails at once, a poll stops within
		 * NT_FOLLOW_ASK_EVERY events, and the thread ends; nothing is left running (a
		 * thread writing through its FILE while exit() flushes every FILE would race). */
		say(fw, "the last lines were not sent within %d ms; the target is off", timeout_ms);
		pthread_mutex_lock(&fw->lock);
		__atomic_store_n(&fw->abandon, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&fw->cond);
		pthread_mutex_unlock(&fw->lock);
		shutdown(fw->fd, SHUT_RDWR);
	}
	pthread_join(fw->thread, NULL);
	int sent_all = !__atomic_load_n(&fw->warned, __ATOMIC_ACQUIRE);
	forwarder_free(fw);
	return sent_all ? 0 : -1;
}
