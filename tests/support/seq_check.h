/*
 * seq_check.h - exact accounting of a mixed event stream (tests only).
 *
 * A worker thread runs iterations i = 0, 1, 2, ...; each emits an Instant carrying (t, seq=i)
 * and, with Trace2 mixed in, every 4th iteration adds region_enter, data (value = i) and
 * region_leave: low-level and Trace2 records of both sizes (8-byte fast path and records
 * with arguments) interleaved in the same chunks. So every event's per-thread ordinal is
 * known from what it carries:
 *
 *   ordinal(Instant i) = i + 3 * ceil(i / 4)       data of i: ordinal(Instant i) + 2
 *
 * and a region event's ordinal follows its predecessor's. The checker proves from an
 * archive: no event twice, none out of order, none on a foreign thread; every gap the reader
 * reports is exactly the events missing there (so gaps never claim losses that did not
 * happen); and, with the header's counters, decoded + dropped + overwritten == made.
 */
#ifndef SEQ_CHECK_H
#define SEQ_CHECK_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>
#include <nanotrace/nanotrace_trace2.h>

#define SEQ_MAX_THREADS 256

/* One iteration of worker `t`; returns the events it made. */
static inline uint64_t seq_emit(uint32_t t, uint64_t i, int trace2)
{
	NT_INSTANT("acct", "ev", NT_U32("t", t), NT_U64("seq", i));
	if (!trace2 || i % 4 != 0)
		return 1;
	NT_T2_REGION_ENTER("acct", "step", -1);
	NT_T2_DATA_INTMAX("acct", -1, "seq", (int64_t)i);
	NT_T2_REGION_LEAVE("acct", "step", -1);
	return 4;
}

/* Events made by `iterations` iterations. */
static inline uint64_t seq_made(uint64_t iterations, int trace2)
{
	return iterations + (trace2 ? 3 * ((iterations + 3) / 4) : 0);
}

static inline uint64_t seq_ordinal_of_instant(uint64_t i, int trace2)
{
	return trace2 ? i + 3 * ((i + 3) / 4) : i;
}

typedef struct seq_thread {
	int has_worker;    /* an Instant told which worker this thread is */
	uint32_t worker;   /* its "t" */
	uint64_t next;     /* ordinal the next event should have, gaps included */
	uint64_t decoded;
	uint64_t gap_events;
} seq_thread;

typedef struct seq_check {
	int trace2;
	seq_thread th[SEQ_MAX_THREADS]; /* by reader thread index */
	uint64_t decoded;       /* every event */
	uint64_t foreign;       /* events not made by seq_emit (Trace2 version, ...) */
	uint64_t gap_events;
	uint64_t errors;        /* damage reported by the reader */
	uint64_t failures;
	char first_failure[300];
} seq_check;

static inline void seq_fail(seq_check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline void seq_fail(seq_check *c, const char *fmt, ...)
{
	if (c->failures++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->first_failure, sizeof(c->first_failure), fmt, ap);
		va_end(ap);
	}
}

static inline int seq_arg(const nt_reader_event *e, const char *name, uint64_t *v)
{
	for (uint32_t a = 0; a < e->arg_count; a++)
		if (strcmp(e->args[a].name, name) == 0) {
			*v = e->args[a].value.u64;
			return 1;
		}
	return 0;
}

/* The ordinal `e` claims, or UINT64_MAX when it carries none (a region event). */
static inline uint64_t seq_claimed_ordinal(seq_check *c, seq_thread *p, const nt_reader_event *e)
{
	uint64_t t, seq;
	if (e->kind == NT_KIND_INSTANT && seq_arg(e, "t", &t) && seq_arg(e, "seq", &seq)) {
		if (!p->has_worker)
			p->has_worker = 1, p->worker = (uint32_t)t;
		else if (p->worker != (uint32_t)t)
			seq_fail(c, "thread %u: an event of worker %" PRIu64 " on worker %u's thread",
				 e->thread->index, t, p->worker);
		return seq_ordinal_of_instant(seq, c->trace2);
	}
	if (e->kind == NT_KIND_T2_FIRST + NT_T2E_DATA && seq_arg(e, "value", &seq))
		return seq_ordinal_of_instant(seq, c->trace2) + 2;
	return UINT64_MAX;
}

static inline int seq_on_event(void *ctx, const nt_reader_event *e)
{
	seq_check *c = ctx;
	c->decoded++;
	uint32_t ti = e->thread->index;
	if (strcmp(e->category, "acct") != 0) {
		c->foreign++;
		return 0;
	}
	if (ti >= SEQ_MAX_THREADS) {
		seq_fail(c, "thread index %u out of range", ti);
		return 0;
	}
	seq_thread *p = &c->th[ti];
	uint64_t want = p->next, claimed = seq_claimed_ordinal(c, p, e);
	if (claimed != UINT64_MAX && claimed != want)
		seq_fail(c, "thread %u: event at ordinal %" PRIu64 " where %" PRIu64
			 " was due (a duplicate, a reordering or a wrong gap)", ti, claimed, want);
	p->next = (claimed != UINT64_MAX ? claimed : want) + 1;
	p->decoded++;
	return 0;
}

static inline void seq_on_gap(void *ctx, const nt_reader_gap *g)
{
	seq_check *c = ctx;
	if (g->thread->index < SEQ_MAX_THREADS) {
		c->th[g->thread->index].next += g->events;
		c->th[g->thread->index].gap_events += g->events;
	}
	c->gap_events += g->events;
}

static inline void seq_on_error(void *ctx, uint64_t off, const char *msg)
{
	seq_check *c = ctx;
	if (c->errors++ == 0)
		seq_fail(c, "damage at byte %" PRIu64 ": %s", off, msg);
}

/* Reads `r` into `c` in stream order; returns the visit's result. */
static inline int seq_read(nt_reader *r, seq_check *c, int trace2)
{
	memset(c, 0, sizeof(*c));
	c->trace2 = trace2;
	nt_reader_callbacks cb = { .on_event = seq_on_event, .on_error = seq_on_error,
				   .on_gap = seq_on_gap };
	return nt_reader_visit(r, &cb, c, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP);
}

#endif /* SEQ_CHECK_H */
