/* nt_reader_order.h - what the visit's two orders share: the sink nt_reader_visit pushes
 * events into, an event made the reader's, and the time-ordered merge (nt_reader_time.c)
 * that the cursor (nt_reader_cursor.c) drives. Not installed. */
#ifndef NT_READER_ORDER_H
#define NT_READER_ORDER_H

#include "nt_reader_visit.h"

/* Where nt_reader_visit pushes events: with a sink the orders below deliver every event in
 * their own loop (the chunk cursor kept in registers) instead of returning each one; their
 * functions then return PUSH_STOPPED when on_event asked to stop. Without one (the public
 * cursor) they return 1 with one event. */
typedef struct push_sink {
	int (*on_event)(void *ctx, const nt_reader_event *event);
	void *ctx;
} push_sink;

#define PUSH_STOPPED 2

/* An event of section `v` as the reader's: its global thread, its offset in the file. */
static inline void to_global(const visit *v, nt_reader_event *ev)
{
	if (v->many) {
		ev->thread = &v->threads[ev->thread - v->r->threads];
		ev->offset += v->base;
	}
}

/* ---- timestamp order (nt_reader_time.c) ------------------------------------------------ */

typedef struct time_merge time_merge;

/* Reports the visits' framing damage, sets up a stream per thread of every visit and finds
 * each one's first event. *out is set as soon as it is allocated, so that nt_time_close
 * frees what a failure left. 0, or -1 (damage that stops the visit, or no memory). */
int nt_time_open(visit *vs, uint32_t nv, time_merge **out);

/* The earliest pending event (its gap delivered first): 1 and *ev; 0 at the end; -1 when
 * damage stops the visit; with a sink, every event pushed (PUSH_STOPPED when it asked to
 * stop). */
int nt_time_next(time_merge *tm, nt_reader_event **ev, const push_sink *push);

/* Stops the visits' helper and frees the merge; tm == NULL: nothing. */
void nt_time_close(time_merge *tm, visit *vs, uint32_t nv);

#endif /* NT_READER_ORDER_H */
