/*
 * nt_reader_cursor.c - a visit's orders, pulled one event at a time (the public cursor;
 * nt_reader_visit is its loop). The chunks are decoded by nt_reader_visit.c.
 *
 * Stream order walks the file once (then an Arena layout's chunks), section after section;
 * it lives here. Timestamp order is a merge of per-thread streams (nt_reader_time.c) that
 * the cursor drives.
 */
#include <stdlib.h>
#include <string.h>

#include "nt_reader_order.h"

/* ---- the cursor ------------------------------------------------------------------------ */

/* A section's table of ordinals (by thread index: as many as its thread table has room
 * for, which starts at 16) is held in the cursor up to this many: a bundle of short
 * processes visits thousands of one-thread sections, each a calloc and a free on the
 * visit's thread otherwise. */
#define EXPECTED_FEW 16

/* A visit pulled one event at a time (nanotrace_reader.h's CURSOR): the sections' visits,
 * and the state of stream order (section vi, its next top-level record, then its arena
 * chunks, the chunk being decoded) or of time order (the thread streams and their heap). */
struct nt_reader_cursor {
	nt_reader *r;
	nt_reader_callbacks cb; /* the caller's on_error and on_gap; on_event is not used */
	void *ctx;
	nt_order order;
	nt_corrupt_policy policy;
	int state;              /* CURSOR_NEW, _RUNNING, _DONE */
	int result;             /* once done: 0 (the end) or -1 */
	nt_zchunk_decoder *zdec;
	visit *vs;              /* one per section visited (one for a plain archive) */
	uint32_t nv;
	nt_reader_arg *args;    /* stream order's arguments */
	nt_reader_event ev;     /* stream order's current event */
	uint8_t *buf;           /* stream order's decompressed chunk */
	uint64_t *expected;     /* stream order: per thread of section vi, where it ended */
	uint64_t expected_few[EXPECTED_FEW]; /* its storage while nthreads <= EXPECTED_FEW */
	uint32_t vi;            /* stream order: the section visited */
	int section_open, arena_phase, in_chunk;
	uint64_t off;           /* its next top-level record */
	uint64_t stream_to;     /* the end of its records walked (the rest counted) */
	uint32_t arena_i;       /* then its next arena chunk */
	chunk_cursor c;
	uint64_t *tally;        /* stream order: what nt_reader_count_records counts (c.tally) */
	time_merge *tm;         /* time order (nt_reader_time.c) */
	sections_ahead *sa;     /* stream order: closed sections opened ahead (NULL: none) */
	char msg[NT_VISIT_MSG_BYTES]; /* the visits' damage messages (visit.msg) */
};

enum { CURSOR_NEW, CURSOR_RUNNING, CURSOR_DONE };

/* Opens the chunk at `off` in stream order (an arena chunk when `arena`): 1 when it is
 * open in cu->c, 0 when it cannot be read (reported; its events a gap), -1 when that
 * stops the visit. */
static int stream_open(nt_reader_cursor *cu, visit *v, uint64_t off, uint64_t size, int arena)
{
	nt_reader *r = v->r;
	nt_reader_gap gap;
	if (arena) {
		nt_visit_open_arena(r, &cu->c, off);
	} else {
		const char *bad = nt_visit_open_top(v, &cu->c, &cu->buf, 0, off, size);
		if (bad != NULL) {
			nt_visit_report(v, off, bad);
			if (nt_visit_lost_chunk(r, off, &cu->expected[nt_chunk_at(r, off)->thread], &gap))
				nt_visit_emit_gap(v, &gap);
			return v->policy == NT_ON_CORRUPT_STOP ? -1 : 0;
		}
	}
	if (nt_visit_chunk_gap(r, &cu->c, cu->expected[cu->c.thread->index], &gap))
		nt_visit_emit_gap(v, &gap);
	cu->in_chunk = 1;
	return 1;
}

/* Next event of the open chunk: 1 (cu->ev), 0 when the chunk is done, -1 when damage
 * stops the visit; with a sink, its events pushed (PUSH_STOPPED when it asked to stop). */
static int stream_chunk_next(nt_reader_cursor *cu, visit *v, const push_sink *push)
{
	chunk_cursor c = cu->c; /* a local: its clock and position stay in registers */
	nt_reader_event ev;
	const char *why;
	uint64_t at;
	int rc;
	while ((rc = nt_visit_next_event(v->r, &c, &ev, cu->args, &why, &at)) != 0) {
		if (rc > 0) {
			to_global(v, &ev);
			if (push == NULL) {
				cu->ev = ev;
				cu->c = c;
				return 1;
			}
			if (push->on_event != NULL && push->on_event(push->ctx, &ev) != 0) {
				cu->c = c;
				return PUSH_STOPPED;
			}
			continue;
		}
		nt_visit_report(v, at, why);
		if (v->policy == NT_ON_CORRUPT_STOP)
			break;
	}
	cu->c = c;
	uint64_t *expected = &cu->expected[c.thread->index];
	if (c.ordinal > *expected)
		*expected = c.ordinal;
	cu->in_chunk = 0;
	return rc;
}

/* Starts stream order over section vi: its reader (a closed one's opened), its table of
 * ordinals and its helper. 1, 0 when it cannot be opened (reported), -1 to stop. */
static int stream_section_begin(nt_reader_cursor *cu)
{
	visit *v = &cu->vs[cu->vi];
	if (v->closed)
		v->given = nt_sections_ahead_take(cu->sa, cu->vi);
	int rc = nt_visit_open_section(v);
	if (rc <= 0) {
		nt_sections_ahead_done(cu->sa, cu->vi);
		v->given = NULL;
		return rc;
	}
	nt_reader *r = v->r;
	cu->section_open = 1;
	if (r->nthreads <= EXPECTED_FEW) {
		memset(cu->expected_few, 0, r->nthreads * sizeof(uint64_t));
		cu->expected = cu->expected_few;
	} else if ((cu->expected = calloc(r->nthreads, sizeof(uint64_t))) == NULL) {
		return -1;
	}
	/* A section's own helper only for more chunks than the sections' helper gives it
	 * (NT_GIVEN_CHUNKS), forced or not: a thread started and joined for a section's one
	 * chunk took 40 us, and NANOTRACE_READER_AHEAD=2 made `--stats` of 20,000 sections of
	 * one chunk 33 times slower (0.87 s against 0.026 s). */
	if (!cu->r->many || r->zchunks > NT_GIVEN_CHUNKS) {
		nt_ahead_source src = { r, NT_AHEAD_ANY_THREAD };
		v->ahead = nt_ahead_start(&src, 1, 0, v->ahead_buffers, v->ahead_forced,
					  r->zchunks);
	}
	cu->off = nt_stream_start(r);
	cu->stream_to = r->size;
	/* The records before its first chunk and after its last are durable ones, which its
	 * open read and validated: counted from what the open kept, not walked again (in a
	 * bundle of short processes they were most of the records the visit walked). */
	if (nt_stream_whole(r) && r->summary.chunks != 0 && nt_count_outside(r, cu->tally)) {
		cu->off = r->chunks_from;
		cu->stream_to = r->chunks_to;
	}
	cu->arena_i = 0;
	cu->arena_phase = cu->in_chunk = 0;
	return 1;
}

static void stream_section_end(nt_reader_cursor *cu)
{
	if (!cu->section_open)
		return;
	nt_ahead_stop(cu->vs[cu->vi].ahead);
	cu->vs[cu->vi].ahead = NULL;
	if (cu->expected != cu->expected_few)
		free(cu->expected);
	cu->expected = NULL;
	cu->section_open = 0;
	visit *v = &cu->vs[cu->vi];
	nt_visit_close_section(v);
	if (v->given != NULL) {
		nt_sections_ahead_done(cu->sa, cu->vi);
		v->given = NULL;
	}
}

/* Next event of section vi in file order (its record stream, then an Arena layout's
 * chunks): 1, 0 at the section's end, -1 when damage stops the visit. */
static int stream_section_next(nt_reader_cursor *cu, const push_sink *push)
{
	visit *v = &cu->vs[cu->vi];
	nt_reader *r = v->r;
	for (;;) {
		if (cu->in_chunk) {
			int rc = stream_chunk_next(cu, v, push);
			if (rc != 0)
				return rc;
		} else if (!cu->arena_phase) {
			if (cu->off >= cu->stream_to) {
				cu->arena_phase = 1;
				continue;
			}
			int stopped = 0;
			uint64_t size = nt_visit_next_top(v, &cu->off, 0, &stopped), off = cu->off;
			if (stopped)
				return -1;
			if (size == 0) {
				cu->arena_phase = 1;
				continue;
			}
			cu->off += size;
			if (cu->tally != NULL)
				nt_count_top(cu->tally, r->data[off]);
			if (nt_kind_is_chunk(r->data[off]) && stream_open(cu, v, off, size, 0) < 0)
				return -1;
		} else {
			if (!r->arena || cu->arena_i >= r->nchunks)
				return 0;
			stream_open(cu, v, r->chunks[cu->arena_i++].offset, 0, 1);
		}
	}
}

static int stream_next(nt_reader_cursor *cu, const push_sink *push)
{
	while (cu->vi < cu->nv) {
		if (!cu->section_open) {
			int begun = stream_section_begin(cu);
			if (begun < 0)
				return -1;
			if (begun == 0) {
				cu->vi++;
				continue;
			}
		}
		int rc = stream_section_next(cu, push);
		if (rc != 0)
			return rc;
		stream_section_end(cu);
		cu->vi++;
	}
	return 0;
}


/* Damage the open found in an archive, reported before its events; -1 when it stops. */
static int report_open_damage(visit *v)
{
	for (uint32_t i = 0; i < v->r->ndamage; i++) {
		nt_visit_report(v, v->r->notes->damage[i].offset, v->r->notes->damage[i].message);
		if (v->policy == NT_ON_CORRUPT_STOP)
			return -1;
	}
	return 0;
}

/* A many-process reader's findings about its inputs and the sections it could not open:
 * reported first, like damage found at open. -1 when they stop the visit. */
static int report_many_problems(nt_reader *m, visit *v)
{
	const reader_many *mm = m->many;
	int found = 0;
	for (size_t i = 0; i < mm->nproblems; i++, found = 1)
		if (v->cb->on_error)
			v->cb->on_error(v->ctx, mm->problems[i].offset, mm->problems[i].message);
	for (size_t i = 0; i < mm->nsections; i++)
		if (mm->sections[i].reader == NULL && !nt_many_section_closed(m, (uint32_t)i)) {
			found = 1;
			if (v->cb->on_error)
				v->cb->on_error(v->ctx, mm->sections[i].error_offset,
						mm->sections[i].error);
		}
	return found && v->policy == NT_ON_CORRUPT_STOP ? -1 : 0;
}

/* The visits of a many-process reader's sections that could be opened (time order merges
 * them all; stream order takes them one after another), after what its open found. */
static int cursor_sections(nt_reader_cursor *cu, const visit *proto)
{
	nt_reader *m = cu->r;
	reader_many *mm = m->many;
	visit first = *proto;
	if (report_many_problems(m, &first) < 0)
		return -1;
	if ((cu->vs = calloc(mm->nsections ? mm->nsections : 1, sizeof(*cu->vs))) == NULL)
		return -1;
	for (size_t i = 0; i < mm->nsections; i++) {
		const nt_reader_section *s = &mm->sections[i];
		nt_reader *r = __atomic_load_n(&s->reader, __ATOMIC_ACQUIRE);
		int closed = r == NULL && nt_many_section_closed(m, (uint32_t)i);
		if (r == NULL && !closed)
			continue;
		visit *v = &cu->vs[cu->nv++];
		*v = *proto;
		v->r = r;
		v->many = 1;
		v->threads = m->threads + s->thread_base;
		v->base = s->offset;
		v->closed = closed;
		v->section = (uint32_t)i;
		if (!closed && report_open_damage(v) < 0) /* a closed one had none */
			return -1;
	}
	return 0;
}

/* Stream order counts what it walks for nt_reader_count_records (nt_reader_count.c),
 * and its count becomes the reader's when the visit meets no damage. No memory for it:
 * no count, nothing else changes. */
static void tally_setup(nt_reader_cursor *cu)
{
	if (nt_count_wanted(cu->r))
		cu->c.tally = cu->tally = calloc(256, sizeof(*cu->tally));
}

static void tally_keep(nt_reader_cursor *cu)
{
	for (uint32_t i = 0; i < cu->nv; i++)
		if (cu->vs[i].damaged)
			return;
	if (nt_count_keep(cu->r, cu->tally))
		cu->tally = NULL;
}

/* The first call's work: the visits, what the open found, the merge's first events. */
static int cursor_setup(nt_reader_cursor *cu)
{
	nt_reader *r = cu->r;
	visit proto = { .r = r, .cb = &cu->cb, .ctx = cu->ctx, .policy = cu->policy,
			.many = r->in_many, .threads = r->threads, .base = r->file_base,
			.zdec = &cu->zdec, .top = r, .msg = cu->msg };
	proto.ahead_buffers = nt_ahead_plan(r, &proto.ahead_forced);
	if (r->many) {
		if (cursor_sections(cu, &proto) < 0)
			return -1;
	} else {
		if ((cu->vs = malloc(sizeof(*cu->vs))) == NULL)
			return -1;
		*cu->vs = proto;
		cu->nv = 1;
		if (report_open_damage(cu->vs) < 0)
			return -1;
	}
	if (cu->order == NT_ORDER_TIME)
		return nt_time_open(cu->vs, cu->nv, &cu->tm);
	tally_setup(cu);
	if (r->many)
		cu->sa = nt_sections_ahead_start(cu->vs, cu->nv, proto.ahead_buffers);
	return (cu->args = malloc(sizeof(*cu->args) * MAX_ARGS)) == NULL ? -1 : 0;
}

nt_reader_cursor *nt_reader_cursor_open(nt_reader *r, const nt_reader_callbacks *cb, void *ctx,
					nt_order order, nt_corrupt_policy policy)
{
	if (r == NULL || (order != NT_ORDER_STREAM && order != NT_ORDER_TIME) ||
	    (policy != NT_ON_CORRUPT_STOP && policy != NT_ON_CORRUPT_SKIP))
		return NULL;
	nt_reader_cursor *cu = calloc(1, sizeof(*cu));
	if (cu == NULL)
		return NULL;
	cu->r = r;
	if (cb != NULL) {
		cu->cb.on_error = cb->on_error;
		cu->cb.on_gap = cb->on_gap;
	}
	cu->ctx = ctx;
	cu->order = order;
	cu->policy = policy;
	return cu;
}

/* nt_reader_cursor_next's work (push NULL), and nt_reader_visit's (a sink). */
static int cursor_step(nt_reader_cursor *cu, const nt_reader_event **event,
		       const push_sink *push)
{
	*event = NULL;
	if (cu->state == CURSOR_DONE)
		return cu->result;
	int rc = 0;
	if (cu->state == CURSOR_NEW) {
		cu->state = CURSOR_RUNNING;
		rc = cursor_setup(cu);
	}
	nt_reader_event *ev = &cu->ev;
	if (rc == 0)
		rc = cu->order == NT_ORDER_TIME ? nt_time_next(cu->tm, &ev, push) : stream_next(cu, push);
	if (rc != 1) { /* the end, damage, or a sink that asked to stop */
		if (rc == 0 && cu->tally != NULL)
			tally_keep(cu);
		cu->state = CURSOR_DONE;
		cu->result = rc;
		return rc;
	}
	*event = ev;
	return 1;
}

int nt_reader_cursor_next(nt_reader_cursor *cu, const nt_reader_event **event)
{
	if (cu == NULL || event == NULL)
		return -1;
	return cursor_step(cu, event, NULL);
}

void nt_reader_cursor_close(nt_reader_cursor *cu)
{
	if (cu == NULL)
		return;
	if (cu->section_open)
		stream_section_end(cu);
	nt_sections_ahead_stop(cu->sa);
	nt_time_close(cu->tm, cu->vs, cu->nv);
	nt_reader_decoder_give(cu->r, cu->zdec);
	free(cu->vs);
	free(cu->args);
	free(cu->buf);
	free(cu->tally);
	free(cu);
}

int nt_reader_visit(nt_reader *r, const nt_reader_callbacks *cb, void *ctx, nt_order order,
		    nt_corrupt_policy policy)
{
	if (r == NULL || cb == NULL)
		return -1;
	nt_reader_cursor *cu = nt_reader_cursor_open(r, cb, ctx, order, policy);
	if (cu == NULL)
		return -1;
	const nt_reader_event *ev;
	push_sink push = { cb->on_event, ctx };
	int rc = cursor_step(cu, &ev, &push);
	nt_reader_cursor_close(cu);
	return rc == PUSH_STOPPED ? 1 : rc;
}

