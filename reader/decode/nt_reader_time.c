/*
 * nt_reader_time.c - timestamp order: one chunk cursor per thread, each scanning the file
 * forward for its thread's next chunk (chunks of a thread appear in sequence order), and a
 * binary heap merging the threads' next events: memory is O(threads started), time
 * O(events log threads + threads * chunks). A many-process reader merges every thread of
 * every section. The cursor (nt_reader_cursor.c) drives it.
 */
#include <stdlib.h>
#include <string.h>

#include "nt_reader_order.h"

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
	int closed;          /* of a closed section (v->closed): opened with its first stream */
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
	for (uint32_t i = 0; i < nv; i++) {
		if (vs[i].closed)
			return; /* its sources would come and go: a closed section is one of many
				   small ones (nt_reader_lazy.c), which decompress serially anyway */
		zchunks += vs[i].r->zchunks;
	}
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
struct time_merge {
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
};

void nt_time_close(time_merge *tm, visit *vs, uint32_t nv)
{
	if (tm == NULL)
		return;
	nt_ahead_stop(vs[0].ahead); /* before the buffers it swapped into the streams go */
	for (uint32_t i = 0; i < nv; i++) {
		vs[i].ahead = NULL;
		vs[i].users = 0;
		nt_visit_close_section(&vs[i]); /* a visit stopped before its streams ended */
	}
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
	if (s->closed) {
		int open = nt_visit_open_section(s->v);
		if (open <= 0) {
			stream_end(tm, s);
			return open;
		}
		s->v->users++;
		s->scan = nt_chunks_from(s->v->r);
	}
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
	if (s->closed && s->v->r != NULL && --s->v->users == 0)
		nt_visit_close_section(s->v);
	s->closed = 0;
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

/* The streams of a closed section's threads, as an open one's would be ranked, each
 * waiting by its first chunk's base time (kept when the section was closed): the section
 * is opened when the first of them starts, and closed when the last ends. A thread without
 * a chunk has no stream to start. */
static void closed_streams(time_merge *tm, visit *v, uint32_t *k)
{
	const nt_reader *m = v->top;
	const nt_reader_section *sec = &m->many->sections[v->section];
	const lazy_section *lz = &m->many->lazy[v->section];
	for (uint32_t j = 0; j < sec->summary.threads; j++, (*k)++) {
		thread_stream *s = &tm->streams[*k];
		s->v = v;
		s->rank = *k;
		s->thread = lz->threads[j].index;
		s->closed = s->lazy = 1;
		if (lz->keys[j] != INT64_MAX)
			tm->waiting[tm->wn++] = (heap_entry){ lz->keys[j], s->rank, s };
	}
}

/* A stream's first event places it among the waiting (one whose first chunk is compressed
 * by that chunk's base time: first_zchunk). */
int nt_time_open(visit *vs, uint32_t nv, time_merge **out)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < nv; i++) {
		if (vs[i].closed) { /* read whole at open, with nothing damaged */
			n += vs[i].top->many->sections[vs[i].section].summary.threads;
			continue;
		}
		if (report_framing(&vs[i]) < 0)
			return -1;
		n += vs[i].r->summary.threads;
	}
	time_merge *tm;
	if (n > UINT32_MAX / MAX_ARGS || (*out = tm = calloc(1, sizeof(*tm))) == NULL)
		return -1;
	tm->n = (uint32_t)n;
	tm->streams = calloc(n ? n : 1, sizeof(*tm->streams));
	tm->heap = calloc(n ? n : 1, sizeof(*tm->heap));
	tm->waiting = calloc(n ? n : 1, sizeof(*tm->waiting));
	tm->scratch_room = malloc(sizeof(*tm->scratch_room));
	if (tm->streams == NULL || tm->heap == NULL || tm->waiting == NULL ||
	    tm->scratch_room == NULL)
		return -1;
	uint32_t k = 0;
	for (uint32_t i = 0; i < nv; i++) {
		if (vs[i].closed) {
			closed_streams(tm, &vs[i], &k);
			continue;
		}
		nt_reader *r = vs[i].r;
		for (uint32_t j = 0; j < r->summary.threads; j++, k++) {
			thread_stream *s = &tm->streams[k];
			s->v = &vs[i];
			s->rank = k;
			s->thread = r->thread_order[j];
			s->scan = nt_chunks_from(r);
		}
	}
	start_ahead_by_time(vs, nv, tm->streams, tm->n);
	for (uint32_t i = 0; i < tm->n; i++) {
		thread_stream *s = &tm->streams[i];
		int64_t key;
		if (s->closed)
			continue; /* waiting already, or without a chunk */
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

/* The heap's top goes out; the stream it came from is advanced at the next call, so the
 * event handed out stays valid until then. */
int nt_time_next(time_merge *tm, nt_reader_event **ev, const push_sink *push)
{
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
