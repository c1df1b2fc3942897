/*
 * nt_trace2_forward.c - Git's af_unix Trace2 target for a live archive
 * (nanotrace_reader.h, TRACE2 FORWARDING): a thread follows the archive
 * (nt_follow_poll), renders each poll's new Trace2 messages as EVENT lines
 * (t2_follow_paced, the renderer trace-dump --follow runs) into the target's FILE
 * (nt_trace2_socket.c: one line per message).
 *
 * The traced program's side (writer/trace2/nt_trace2_forward.c) finds the two entry points
 * with dlsym (runtime/nt_trace2_forward.h states their names and types once). A target that
 * cannot be reached or a send that fails is one warning (the sink's) and the end of the
 * forwarding; nothing here changes the program's exit status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/nt_deadline.h"
#include "runtime/nt_trace2_forward.h"
#include "nt_trace2.h"

/* The public declarations in nanotrace_reader.h have the types the writer calls through. */
static nt_trace2_forward_start_fn *const start_has_its_type = nt_trace2_forward_start;
static nt_trace2_forward_stop_fn *const stop_has_its_type = nt_trace2_forward_stop;

/* After an abandon, how long the thread may take to end before it is left running. */
#define ABANDON_WAIT_MS 1000

struct nt_trace2_forwarder {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	int final;           /* stop asked: one last poll, then the end */
	int final_polled;
	int done;            /* the thread has ended */
	int abandon;         /* the stop's wait ran out: end now (atomic) */
	unsigned interval_ms;
	nt_follower *f;
	FILE *out;           /* the socket (nt_trace2_socket.c) */
	t2_sink *sink;       /* out's cookie: its warnings, its socket */
};

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
	if (st == NT_FOLLOW_FAILED && !t2_sink_warned(fw->sink))
		t2_sink_say(fw->sink, "following the archive failed: %s; the target is off",
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
		fclose(fw->out); /* frees the sink, closes the socket */
	nt_follow_close(fw->f);
	pthread_cond_destroy(&fw->cond);
	pthread_mutex_destroy(&fw->lock);
	free(fw);
}

nt_trace2_forwarder *nt_trace2_forward_start(const char *archive, const char *target,
					      const char *who, unsigned interval_ms)
{
	(void)start_has_its_type, (void)stop_has_its_type;
	nt_trace2_forwarder *fw = calloc(1, sizeof(*fw));
	if (fw == NULL || (fw->out = t2_sink_open(target, who, &fw->sink)) == NULL) {
		free(fw); /* the sink said why */
		return NULL;
	}
	fw->interval_ms = interval_ms;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fw->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&fw->lock, NULL);
	nt_reader_error err;
	if (archive == NULL || (fw->f = nt_follow_open(archive, &err)) == NULL) {
		t2_sink_say(fw->sink, "cannot follow the archive: %s; the target is off",
			    archive == NULL ? "none given" : err.message);
		forwarder_free(fw);
		return NULL;
	}
	int rc = pthread_create(&fw->thread, NULL, forward_thread, fw);
	if (rc != 0) {
		t2_sink_say(fw->sink, "cannot start its thread: %s; the target is off",
			    strerror(rc));
		forwarder_free(fw);
		return NULL;
	}
	return fw;
}

/* Up to ms for the thread's end (with `final`: asking for the last poll first). */
static int wait_done(nt_trace2_forwarder *fw, int final, int ms)
{
	pthread_mutex_lock(&fw->lock);
	if (final) {
		fw->final = 1;
		pthread_cond_broadcast(&fw->cond);
	}
	struct timespec until = nt_deadline_after_ms(ms);
	while (!fw->done && pthread_cond_timedwait(&fw->cond, &fw->lock, &until) != ETIMEDOUT)
		;
	int done = fw->done;
	pthread_mutex_unlock(&fw->lock);
	return done;
}

int nt_trace2_forward_stop(nt_trace2_forwarder *fw, int timeout_ms)
{
	if (fw == NULL)
		return 0;
	if (timeout_ms < 0) {
		/* A fork() child: the thread is the parent's; only the socket is the child's copy. */
		t2_sink_forget(fw->sink);
		return 0;
	}
	int done = wait_done(fw, 1, timeout_ms);
	if (!done) {
		/* Abandoned: a send blocked on the socket fails at once, a poll stops within
		 * NT_FOLLOW_ASK_EVERY events, and the thread ends; then nothing is left running (a
		 * thread writing through its FILE while exit() flushes every FILE would race). */
		t2_sink_say(fw->sink, "the last lines were not sent within %d ms; the target is off",
			    timeout_ms);
		pthread_mutex_lock(&fw->lock);
		__atomic_store_n(&fw->abandon, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&fw->cond);
		pthread_mutex_unlock(&fw->lock);
		t2_sink_abandon(fw->sink);
		done = wait_done(fw, 0, ABANDON_WAIT_MS);
	}
	if (!done) {
		/* Stuck elsewhere than the socket (never seen but under a sanitizer's allocator
		 * in a fork() child): the exit must not wait for it; it keeps the forwarder. */
		pthread_detach(fw->thread);
		return -1;
	}
	pthread_join(fw->thread, NULL);
	int sent_all = !t2_sink_warned(fw->sink);
	forwarder_free(fw);
	return sent_all ? 0 : -1;
}
