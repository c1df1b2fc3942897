/*
 * nt_ship_trace2.h - Git's af_unix Trace2 target for a trace manager's providers
 * (nanotrace-manager --trace2-event): while a provider records into a buffer the manager
 * made, the reader's Trace2 forwarder (nt_trace2_forward_start, the one NANOTRACE_EVENT
 * runs inside a program) follows that buffer and sends its EVENT lines to the target, one
 * message per line, so that every Trace2 program the manager records reaches a
 * trace2receiver without setting a variable of its own. What the manager's programs
 * include of ship/ beside nt_ship.h; not installed.
 *
 * The manager's loop never waits for the target: starting a forwarder (a connect, which a
 * full listen queue can block) and stopping one (its last poll, bounded by
 * NT_TRACE2_FORWARD_SEND_TIMEOUT_MS and about a second more) run on a thread of their own,
 * in the order the manager asked. A provider that records no Trace2 message sends nothing.
 * A target that cannot be reached is one warning on stderr per provider (the daemon's
 * stderr is its log), and that provider's lines are not sent.
 */
#ifndef NT_SHIP_TRACE2_H
#define NT_SHIP_TRACE2_H

#include <stddef.h>
#include <stdint.h>

typedef struct nt_ship_trace2 nt_ship_trace2;

/* Checks the syntax of `target` ("af_unix:[stream:|dgram:]<absolute path>"; a listener may
 * come later) and starts the thread. NULL with the reason in why[whylen] when the target
 * is malformed (the reason names it) or the thread cannot start. Cost: a thread. */
nt_ship_trace2 *nt_ship_trace2_new(const char *target, char *why, size_t whylen);

/* Provider `id` (named `name`, for the warnings) records into the buffer `memfd`: a
 * forwarder follows it (through /proc/self/fd of a duplicate, so the caller may close
 * memfd when it likes). An id already forwarded is stopped first. Out of memory or
 * descriptors: that provider is not forwarded (one line on stderr). t == NULL is ignored.
 * Cost: a dup and a queued job; never waits. */
void nt_ship_trace2_start(nt_ship_trace2 *t, uint32_t id, int memfd, const char *name);

/* Provider `id`'s recording is final: its forwarder makes its last poll, sends what it
 * has not sent yet and ends. An id not forwarded is ignored, as is t == NULL. Cost: a
 * queued job; never waits. */
void nt_ship_trace2_end(nt_ship_trace2 *t, uint32_t id);

/* Ends every forwarder as nt_ship_trace2_end does, in order, and frees t (NULL is
 * ignored). Cost: up to about two seconds per forwarder whose target stopped reading. */
void nt_ship_trace2_free(nt_ship_trace2 *t);

#endif /* NT_SHIP_TRACE2_H */
