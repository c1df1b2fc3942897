/*
 * nt_reader_cursor.c - a visit's orders, pulled one event at a time (the public cursor;
 * nt_reader_visit is its loop). The chunks are decoded by nt_reader_visit.c.
 *
 * Stream order walks the file once (then an Arena layout's chunks), section after section.
 * Timestamp order keeps one chunk cursor per thread, each scanning the file forward for its
 * thread's next chunk (chunks of a thread appear in sequence order), and merges the
 * threads' next events with a binary heap: memory is O(threads), time O(events log threads
 * + threads * chunks). A many-process reader merges every thread of every section.
 */
#include <stdlib.h>
#include <string.h>

#include "nt_reader_visit.h"

/* ---- the cursor ------------------------------------------------------------------------ */

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
	uint32_t vi;            /* stream order: the section visited */
	int section_open, arena_phase, in_chunk;
	uint64_t off;           /* its next top-level record */
	uint32_t arena_i;       /* then its next arena chunk */
	chunk_cursor c;
	uint64_t *tally;        /* stream order: what nt_reader_count_records counts (c.tally) */
	struct time_merge *tm;  /* time order */
	char msg[NT_VISIT_MSG_BYTES]; /* the visits' damage messages (visit.msg) */
};

enum { CURSOR_NEW, CURSOR_RUNNING, CURSOR_DONE };

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

/* Starts stream order over section vi: its table of ordinals and its helper. */
static int stream_section_begin(nt_reader_cursor *cu)
{
	visit *v = &cu->vs[cu->vi];
	nt_reader *r = v->r;
	cu->expected = calloc(r->nthreads ? r->nthreads : 1, sizeof(uint64_t));
	if (cu->expected == NULL)
		return -1;
	nt_ahead_source src = { r, NT_AHEAD_ANY_THREAD };
	v->ahead = nt_ahead_start(&src, 1, 0, v->ahead_buffers, v->ahead_forced, r->zchunks);
	cu->off = nt_stream_start(r);
	cu->arena_i = 0;
	cu->arena_phase = cu->in_chunk = 0;
	cu->section_open = 1;
	return 0;
}

static void stream_section_end(nt_reader_cursor *cu)
{
	if (!cu->section_open)
		return;
	nt_ahead_stop(cu->vs[cu->vi].ahead);
	cu->vs[cu->vi].ahead = NULL;
	free(cu->expected);
	cu->expected = NULL;
	cu->section_open = 0;
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
		if (!cu->section_open && stream_section_begin(cu) < 0)
			return -1;
		int rc = stream_section_next(cu, push);
		if (rc != 0)
			return rc;
		stream_section_end(cu);
		cu->vi++;
	}
	return 0;
}

/* ---- timestamp order ------------------------------------------------------------------- */

typedef struct thread_stream {
	visit *v;            /* the archive it reads */
	uint32_t rank;       /* ties in time go to the lower rank: sections, then threads */
	uint32_t thread;
	uint64_t scan;       /* where to look for this thread's next chunk in the stream */
	uint32_t ai;         /* then: next index into r->chunks (Arena layout) */
	chunk_cursor c;
	struct stream_room *room; /* its pending event, from its start to its end */
	int has_event;
	uint64_t expected;   /* ordinal the thread's last chunk ended at */
	nt_reader_gap gap;   /* delivered before ev when has_gap */
	int has_gap;
	uint8_t *buf;        /* its decompressed chunk (NULL until it meets a compressed one) */
	int lazy;            /* waiting by its first chunk's base time, that chunk not opened */
} thread_stream;

/* A stream's pending event (valid when has_event) and its arguments: a waiting stream has
 * none (a bundle has a stream for every thread of every section). */
typedef struct stream_room {
	nt_reader_event ev;
	nt_reader_arg args[MAX_ARGS];
} stream_room;

/* A stream waits, holding no buffer, until the merge reaches its first event: then it
 * starts (stream_start), and at its end it gives its buffers back (stream_end). */

/* Adds lost events to the gap delivered before the stream's next event. */
static void add_gap(thread_stream *s, const nt_reader_gap *g)
{
	if (s->has_gap) {
		s->gap.events += g->events;
		return;
	}
	s->gap = *g;
	s->has_gap = 1;
}

/* Opens the thread's next chunk (a compressed one into *buf); 0 when there is none, -1 when
 * damage stops the visit. */
static int stream_next_chunk(visit *v, thread_stream *s, uint8_t **buf)
{
	nt_reader *r = v->r;
	if (s->c.offset != 0 && s->c.ordinal > s->expected)
		s->expected = s->c.ordinal;
	int stopped = 0;
	for (;;) { /* the record stream first (all of it for the Stream layout) */
		uint64_t size = s->scan < nt_chunks_to(r) ? nt_visit_next_top(v, &s->scan, 1, &stopped)
							  : 0;
		if (size == 0)
			break;
		uint64_t off = s->scan;
		s->scan += size;
		if (!nt_kind_is_chunk(r->data[off]) || nt_chunk_at(r, off)->thread != s->thread)
			continue;
		const char *bad = nt_visit_open_top(v, &s->c, buf, s->rank, off, size);
		if (bad == NULL)
			goto opened;
		nt_visit_report(v, off, bad);
		nt_reader_gap lost;
		if (nt_visit_lost_chunk(r, off, &s->expected, &lost))
			add_gap(s, &lost);
		if (v->policy == NT_ON_CORRUPT_STOP)
			return -1;
	}
	for (; r->arena && s->ai < r->nchunks;) { /* then the arena's chunks */
		const struct arena_chunk *ac = &r->chunks[s->ai++];
		if (ac->thread == s->thread) {
			nt_visit_open_arena(r, &s->c, ac->offset);
			goto opened;
		}
	}
	return 0;
opened:;
	nt_reader_gap gap;
	if (nt_visit_chunk_gap(r, &s->c, s->expected, &gap))
		add_gap(s, &gap);
	return 1;
}

/* Advance a stream to its next event, its compressed chunks decompressed into *buf; returns
 * -1 when damage stops the visit. With `pre`, *pre is left the cursor as it was just before
 * that event (the merge's setup: stream_start decodes it again from there). */
static int stream_advance(thread_stream *s, uint8_t **buf, chunk_cursor *pre)
{
	visit *v = s->v;
	nt_reader *r = v->r;
	for (;;) {
		if (s->c.active) {
			const char *why;
			uint64_t at;
			if (pre != NULL)
				*pre = s->c;
			int rc = nt_visit_next_event(r, &s->c, &s->room->ev, s->room->args, &why, &at);
			if (rc > 0) {
				s->has_event = 1;
				return 0;
			}
			if (rc < 0) {
				nt_visit_report(v, at, why);
				if (v->policy == NT_ON_CORRUPT_STOP)
					return -1;
			}
			continue;
		}
		int opened = stream_next_chunk(v, s, buf);
		if (opened < 0)
			return -1;
		if (opened == 0) {
			s->has_event = 0;
			if (s->has_gap) { /* events lost after the thread's last one */
				nt_visit_emit_gap(v, &s->gap);
				s->has_gap = 0;
			}
			return 0;
		}
	}
}

/* A heap entry carries its stream's sort key, so the sifts compare keys in one array and
 * touch a stream only to move it (with a thousand streams, chasing each stream's pointer
 * per comparison was most of the merge's time). */
typedef struct heap_entry {
	int64_t time_ns;
	uint32_t rank;
	thread_stream *s;
} heap_entry;

static heap_entry entry_of(thread_stream *s)
{
	return (heap_entry){ s->room->ev.time_ns, s->rank, s };
}

static int earlier(const heap_entry *a, const heap_entry *b)
{
	if (a->time_ns != b->time_ns)
		return a->time_ns < b->time_ns;
	return a->rank < b->rank;
}

static void sift_down(heap_entry *heap, uint32_t n, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		if (l < n && earlier(&heap[l], &heap[m]))
			m = l;
		if (l + 1 < n && earlier(&heap[l + 1], &heap[m]))
			m = l + 1;
		if (m == i)
			return;
		heap_entry t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

static void sift_up(heap_entry *heap, uint32_t i)
{
	while (i > 0 && earlier(&heap[i], &heap[(i - 1) / 2])) {
		heap_entry t = heap[i];
		heap[i] = heap[(i - 1) / 2];
		heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static int by_entry(const void *a, const void *b)
{
	return earlier(a, b) ? -1 : earlier(b, a);
}

/* Framing damage is reported once, before the merge; the per-thread scans then skip it
 * quietly. Returns -1 when it stops the visit. */
static int report_framing(visit *v)
{
	nt_reader *r = v->r;
	if (nt_stream_whole(r))
		return 0; /* the open walked it with the same framing and found nothing */
	uint64_t off = nt_stream_start(r);
	int stopped = 0;
	uint64_t size;
	while ((size = nt_visit_next_top(v, &off, 0, &stopped)) != 0)
		off += size;
	return stopped ? -1 : 0;
}

/* The helper of a time-ordered merge: one source per thread stream, shared by the visits. */
static void start_ahead_by_time(visit *vs, uint32_t nv, const thread_stream *streams, uint32_t n)
{
	uint64_t zchunks = 0;
	for (uint32_t i = 0; i < nv; i++)
		zchunks += vs[i].r->zchunks;
	nt_ahead_source *src = malloc((n ? n : 1) * sizeof(*src));
	nt_ahead *a = NULL;
	if (src != NULL) {
		for (uint32_t i = 0; i < n; i++)
			src[i] = (nt_ahead_source){ streams[i].v->r, streams[i].thread };
		a = nt_ahead_start(src, n, 1, vs[0].ahead_buffers, vs[0].ahead_forced, zchunks);
	}
	free(src);
	for (uint32_t i = 0; i < nv; i++)
		vs[i].ahead = a;
}

/* One k-way merge over the thread streams of every archive the cursor visits: the heap
 * holds the streams started, `waiting` the others by their first event (the merge starts
 * each when it reaches that event), so buffers are held only by the streams between their
 * first and last event, not by every thread of every section. */
typedef struct time_merge {
	thread_stream *streams;
	heap_entry *heap;
	heap_entry *waiting;    /* sorted; [wi, wn) still waiting */
	uint32_t n, hn, wn, wi;
	thread_stream *pending; /* the stream whose event was handed out: advanced next */
	uint8_t *scratch;       /* the setup's decompressed chunks */
	stream_room *scratch_room;
	/* What ended streams gave back, for the next to start: a malloc of this size per start
	 * made glibc consolidate its small free chunks each time. */
#define TIME_SPARES 16
	uint8_t *spare_buf[TIME_SPARES];
	stream_room *spare_room[TIME_SPARES];
	uint32_t nspare_buf, nspare_room;
} time_merge;

static void time_free(nt_reader_cursor *cu)
{
	time_merge *tm = cu->tm;
	if (tm == NULL)
		return;
	nt_ahead_stop(cu->vs[0].ahead); /* before the buffers it swapped into the streams go */
	for (uint32_t i = 0; i < cu->nv; i++)
		cu->vs[i].ahead = NULL;
	for (uint32_t i = 0; tm->streams != NULL && i < tm->n; i++) {
		free(tm->streams[i].buf);
		free(tm->streams[i].room);
	}
	for (uint32_t i = 0; i < tm->nspare_buf; i++)
		free(tm->spare_buf[i]);
	for (uint32_t i = 0; i < tm->nspare_room; i++)
		free(tm->spare_room[i]);
	free(tm->streams);
	free(tm->heap);
	free(tm->waiting);
	free(tm->scratch);
	free(tm->scratch_room);
	free(tm);
	cu->tm = NULL;
}

static void stream_end(time_merge *tm, thread_stream *s);

/* A waiting stream's start: its arguments' room, its chunk decompressed again when it is a
 * compressed one, and its first event decoded again from where the setup found it (the
 * same bytes: the same event, no damage before it); a lazy one's first chunk opened and
 * its first event found now, as any later one's (its damage reported, a gap before it).
 * 1 when it has an event, 0 when a lazy one has none (it has ended), -1 when memory runs
 * out or damage stops the visit. */
static int stream_start(time_merge *tm, thread_stream *s)
{
	const char *why;
	uint64_t at;
	if (s->buf == NULL && tm->nspare_buf > 0)
		s->buf = tm->spare_buf[--tm->nspare_buf];
	s->room = tm->nspare_room > 0 ? tm->spare_room[--tm->nspare_room]
				       : malloc(sizeof(*s->room));
	if (s->room == NULL)
		return -1;
	if (s->lazy) {
		s->lazy = 0;
		if (stream_advance(s, &s->buf, NULL) < 0)
			return -1;
		if (!s->has_event)
			stream_end(tm, s);
		return s->has_event;
	}
	if (s->c.report != UINT64_MAX && nt_visit_reload(s->v, &s->c, &s->buf) != NULL)
		return -1;
	return nt_visit_next_event(s->v->r, &s->c, &s->room->ev, s->room->args, &why, &at) > 0
		       ? 1 : -1;
}

/* A stream at its end gives its buffers back (kept for the next to start, or freed). */
static void stream_end(time_merge *tm, thread_stream *s)
{
	if (s->buf != NULL && tm->nspare_buf < TIME_SPARES)
		tm->spare_buf[tm->nspare_buf++] = s->buf;
	else
		free(s->buf);
	if (s->room != NULL && tm->nspare_room < TIME_SPARES)
		tm->spare_room[tm->nspare_room++] = s->room;
	else
		free(s->room);
	s->buf = NULL;
	s->room = NULL;
}

/* A stream whose first chunk is a compressed one in the record stream: 1, s->scan at that
 * chunk and *key its base time, at or before its first event's (a chunk's records only move
 * its clock on); 0 when its first chunk is a plain or an arena one, or it has none. Such a
 * stream waits by that key and decompresses the chunk when the merge reaches it, once:
 * finding its first event here took a decompression that its start did again, and in a
 * bundle of short processes each one's only chunk is compressed (2 of the 3 decompressions
 * of trace-dump's text of a bundle). */
static int first_zchunk(thread_stream *s, int64_t *key)
{
	visit *v = s->v;
	const nt_reader *r = v->r;
	uint64_t off = s->scan, size, to = nt_chunks_to(r);
	int stopped = 0;
	for (; off < to && (size = nt_visit_next_top(v, &off, 1, &stopped)) != 0; off += size) {
		if (!nt_kind_is_chunk(r->data[off]) || nt_chunk_at(r, off)->thread != s->thread)
			continue;
		if (r->data[off] != NT_KIND_ZCHUNK)
			return 0;
		s->scan = off;
		*key = nt_ticks_to_ns(r, nt_chunk_at(r, off)->base_ticks);
		return 1;
	}
	return 0;
}

/* Reports the framing damage, sets the streams up and finds each one's first event, which
 * places it among the waiting (a stream whose first chunk is compressed by that chunk's
 * base time: first_zchunk). */
static int time_setup(nt_reader_cursor *cu)
{
	visit *vs = cu->vs;
	uint64_t n = 0;
	for (uint32_t i = 0; i < cu->nv; i++) {
		if (report_framing(&vs[i]) < 0)
			return -1;
		n += vs[i].r->summary.threads;
	}
	if (n > UINT32_MAX / MAX_ARGS || (cu->tm = calloc(1, sizeof(*cu->tm))) == NULL)
		return -1;
	time_merge *tm = cu->tm;
	tm->n = (uint32_t)n;
	tm->streams = calloc(n ? n : 1, sizeof(*tm->streams));
	tm->heap = calloc(n ? n : 1, sizeof(*tm->heap));
	tm->waiting = calloc(n ? n : 1, sizeof(*tm->waiting));
	tm->scratch_room = malloc(sizeof(*tm->scratch_room));
	if (tm->streams == NULL || tm->heap == NULL || tm->waiting == NULL ||
	    tm->scratch_room == NULL)
		return -1;
	uint32_t k = 0;
	for (uint32_t i = 0; i < cu->nv; i++) {
		nt_reader *r = vs[i].r;
		for (uint32_t j = 0; j < r->summary.threads; j++, k++) {
			thread_stream *s = &tm->streams[k];
			s->v = &vs[i];
			s->rank = k;
			s->thread = r->thread_order[j];
			s->scan = nt_chunks_from(r);
		}
	}
	start_ahead_by_time(vs, cu->nv, tm->streams, tm->n);
	for (uint32_t i = 0; i < tm->n; i++) {
		thread_stream *s = &tm->streams[i];
		int64_t key;
		if (first_zchunk(s, &key)) {
			s->lazy = 1;
			tm->waiting[tm->wn++] = (heap_entry){ key, s->rank, s };
			continue;
		}
		chunk_cursor before;
		s->room = tm->scratch_room;
		int rc = stream_advance(s, &tm->scratch, &before);
		if (rc == 0 && s->has_event) {
			s->c = before;
			tm->waiting[tm->wn++] = entry_of(s);
		}
		s->room = NULL;
		if (rc < 0)
			return -1;
	}
	qsort(tm->waiting, tm->wn, sizeof(*tm->waiting), by_entry);
	return 0;
}

/* The earliest pending event (its gap delivered first): 1 and *ev; 0 at the end; -1 when
 * damage stops the visit; with a sink, every event pushed (PUSH_STOPPED when it asked to
 * stop). */
static int time_next(nt_reader_cursor *cu, nt_reader_event **ev, const push_sink *push)
{
	time_merge *tm = cu->tm;
	heap_entry *heap = tm->heap;
	uint32_t hn = tm->hn; /* a local across on_event's calls, as the merge's loop had it */
	thread_stream *s = tm->pending;
	int rc;
	for (;;) {
		if (s != NULL) {
			if (stream_advance(s, &s->buf, NULL) < 0) {
				s = NULL;
				rc = -1;
				break;
			}
			if (s->has_event) {
				heap[0] = entry_of(s);
			} else {
				stream_end(tm, s);
				heap[0] = heap[--hn];
			}
			sift_down(heap, hn, 0);
		}
		while (tm->wi < tm->wn && (hn == 0 || earlier(&tm->waiting[tm->wi], &heap[0]))) {
			thread_stream *w = tm->waiting[tm->wi++].s;
			int started = stream_start(tm, w);
			if (started < 0) {
				s = NULL;
				rc = -1;
				goto out;
			}
			if (started == 0)
				continue;
			heap[hn] = entry_of(w); /* a lazy one's first event: at or after its key */
			sift_up(heap, hn++);
		}
		if (hn == 0) {
			s = NULL;
			rc = 0;
			break;
		}
		s = heap[0].s;
		if (s->has_gap) {
			nt_visit_emit_gap(s->v, &s->gap);
			s->has_gap = 0;
		}
		to_global(s->v, &s->room->ev);
		if (push == NULL) {
			*ev = &s->room->ev;
			rc = 1;
			break;
		}
		if (push->on_event != NULL && push->on_event(push->ctx, &s->room->ev) != 0) {
			rc = PUSH_STOPPED;
			break;
		}
	}
out:
	tm->hn = hn;
	tm->pending = s; /* advanced at the next call */
	return rc;
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
		if (mm->sections[i].reader == NULL) {
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
		if (s->reader == NULL)
			continue;
		visit *v = &cu->vs[cu->nv++];
		*v = *proto;
		v->r = s->reader;
		v->many = 1;
		v->threads = m->threads + s->thread_base;
		v->base = s->reader->file_base;
		if (report_open_damage(v) < 0)
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
		return time_setup(cu);
	tally_setup(cu);
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
		rc = cu->order == NT_ORDER_TIME ? time_next(cu, &ev, push) : stream_next(cu, push);
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
	time_free(cu);
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

