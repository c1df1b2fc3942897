/*
 * nt_follow_loop.h - the poll loop every follow renderer runs over an nt_follower (text,
 * Trace2): poll, let the renderer end the poll's output, and go on until the writer is done,
 * the output fails or the caller says stop, sleeping `interval_ms` between polls.
 */
#ifndef NT_FOLLOW_LOOP_H
#define NT_FOLLOW_LOOP_H

#include <time.h>

#include <nanotrace/nanotrace_reader.h>

/* keep_going is asked every this many events a poll delivers too: a poll's batch can be a
 * whole live arena (millions of lines), and Ctrl-C must not wait for all of it. */
#define NT_FOLLOW_ASK_EVERY 1024u

typedef struct nt_follow_asking {
	const nt_reader_callbacks *cb;
	void *ctx;
	int (*keep_going)(void *arg);
	void *arg;
	unsigned events;
} nt_follow_asking;

static inline int nt_follow_asking_event(void *p, const nt_reader_event *e)
{
	nt_follow_asking *a = (nt_follow_asking *)p;
	if (++a->events % NT_FOLLOW_ASK_EVERY == 0 && !a->keep_going(a->arg))
		return 1; /* the poll stops delivering: NT_FOLLOW_STOPPED */
	return a->cb->on_event != NULL ? a->cb->on_event(a->ctx, e) : 0;
}

static inline void nt_follow_asking_gap(void *p, const nt_reader_gap *g)
{
	nt_follow_asking *a = (nt_follow_asking *)p;
	if (a->cb->on_gap != NULL)
		a->cb->on_gap(a->ctx, g);
}

static inline void nt_follow_asking_error(void *p, uint64_t offset, const char *message)
{
	nt_follow_asking *a = (nt_follow_asking *)p;
	if (a->cb->on_error != NULL)
		a->cb->on_error(a->ctx, offset, message);
}

/* after_poll(ctx, status) ends one poll's output (a flush) and returns nonzero when it
 * failed. Between polls, pause(arg, interval_ms) waits (NULL: nanosleep for interval_ms)
 * and returns 0 to end the loop (NT_FOLLOW_STOPPED): a caller that must wake the loop early
 * or end it after one last poll (the Trace2 forwarder) waits on its own condition. Returns
 * the last NT_FOLLOW_* status: NT_FOLLOW_FAILED when a poll or the output failed,
 * NT_FOLLOW_STOPPED when keep_going (may be NULL) said stop, between polls or within one's
 * delivery, or pause said stop. */
static inline int nt_follow_loop_paced(nt_follower *f, const nt_reader_callbacks *cb, void *ctx,
				       int (*after_poll)(void *ctx, int status),
				       unsigned interval_ms, int (*keep_going)(void *arg),
				       int (*pause)(void *arg, unsigned interval_ms), void *arg)
{
	nt_follow_asking asking = { cb, ctx, keep_going, arg, 0 };
	const nt_reader_callbacks asking_cb = { nt_follow_asking_event, nt_follow_asking_error,
						nt_follow_asking_gap };
	for (;;) {
		int st = keep_going != NULL ? nt_follow_poll(f, &asking_cb, &asking)
					    : nt_follow_poll(f, cb, ctx);
		if (after_poll(ctx, st) != 0)
			return NT_FOLLOW_FAILED;
		if (st != NT_FOLLOW_RUNNING)
			return st;
		if (keep_going != NULL && !keep_going(arg))
			return NT_FOLLOW_STOPPED;
		if (pause != NULL) {
			if (!pause(arg, interval_ms))
				return NT_FOLLOW_STOPPED;
			continue;
		}
		struct timespec ts = { interval_ms / 1000u, (long)(interval_ms % 1000u) * 1000000L };
		nanosleep(&ts, NULL); /* a signal ends it early: keep_going is asked at once */
	}
}

/* nt_follow_loop_paced with nanosleep between polls. */
static inline int nt_follow_loop(nt_follower *f, const nt_reader_callbacks *cb, void *ctx,
				 int (*after_poll)(void *ctx, int status), unsigned interval_ms,
				 int (*keep_going)(void *arg), void *arg)
{
	return nt_follow_loop_paced(f, cb, ctx, after_poll, interval_ms, keep_going, NULL, arg);
}

#endif /* NT_FOLLOW_LOOP_H */
