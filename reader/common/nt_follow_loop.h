/*
 * nt_follow_loop.h - the poll loop every follow renderer runs over an nt_follower (text,
 * Trace2): poll, let the renderer end the poll's output, and go on until the writer is done,
 * the output fails or the caller says stop, sleeping `interval_ms` between polls.
 */
#ifndef NT_FOLLOW_LOOP_H
#define NT_FOLLOW_LOOP_H

#include <time.h>

#include <nanotrace/nanotrace_reader.h>

/* after_poll(ctx, status) ends one poll's output (a flush) and returns nonzero when it
 * failed. Returns the last NT_FOLLOW_* status: NT_FOLLOW_FAILED when a poll or the output
 * failed, NT_FOLLOW_STOPPED when keep_going (may be NULL) said stop. */
static inline int nt_follow_loop(nt_follower *f, const nt_reader_callbacks *cb, void *ctx,
				 int (*after_poll)(void *ctx, int status), unsigned interval_ms,
				 int (*keep_going)(void *arg), void *arg)
{
	for (;;) {
		int st = nt_follow_poll(f, cb, ctx);
		if (after_poll(ctx, st) != 0)
			return NT_FOLLOW_FAILED;
		if (st != NT_FOLLOW_RUNNING)
			return st;
		if (keep_going != NULL && !keep_going(arg))
			return NT_FOLLOW_STOPPED;
		struct timespec ts = { interval_ms / 1000u, (long)(interval_ms % 1000u) * 1000000L };
		nanosleep(&ts, NULL); /* a signal ends it early: keep_going is asked at once */
	}
}

#endif /* NT_FOLLOW_LOOP_H */
