/*
 * nt_reader_visit.c - decodes chunks into events, in stream order or timestamp order.
 *
 * A chunk cursor walks one chunk's records, keeping the running tick count (deltas and
 * Timestamp escapes). Stream order walks the file once. Timestamp order keeps one cursor per
 * thread, each scanning the file forward for its thread's next chunk (chunks of a thread
 * appear in sequence order), and merges the threads' next events with a binary heap: memory
 * is O(threads), time O(events log threads + threads * chunks).
 *
 * A CompressedChunk is decompressed (format/nt_zchunk.h, which checks every size) into a
 * buffer of NT_MAX_ZCHUNK_BYTES and walked there: one buffer per visit in stream order, one
 * per thread in time order (allocated at the thread's first compressed chunk). Records of a
 * decompressed chunk are reported at the CompressedChunk's offset. A chunk that does not
 * decompress is damage at its offset, and its events (the header copy's count) are lost:
 * a gap. With a helper thread (nt_reader_ahead.c) the chunks are decompressed ahead of the
 * visit, which takes each one instead of decompressing it: the same buffer, the same answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nt_reader_ahead.h"
#include "nt_reader_args.h"
#include "nt_reader_internal.h"

#define MAX_ARGS NT_MAX_RECORD_WORDS

typedef struct chunk_cursor {
	const uint8_t *data; /* what pos and end count from: the file, or a decompressed chunk */
	uint64_t report;     /* decompressed: the CompressedChunk's offset, for every record */
	uint64_t pos, end;   /* next record, end of the chunk */
	uint64_t base_ticks; /* the chunk header's */
	uint64_t zend;       /* decompressed: the ordinal its header says it ends at */
	uint64_t ticks;      /* running clock */
	uint64_t ordinal;    /* the thread's ordinal of the next event */
	uint64_t first;      /* ordinal of the chunk's first event */
	uint64_t skip_below; /* events with a lower ordinal were delivered from the saved stream */
	uint64_t offset;     /* of the chunk header */
	const nt_reader_thread *thread;
	int active;
} chunk_cursor;

typedef struct visit {
	nt_reader *r; /* the archive decoded: a plain reader, or a section's */
	const nt_reader_callbacks *cb;
	void *ctx;
	nt_corrupt_policy policy;
	int damaged; /* at least one error was reported */
	/* A section of a many-process reader: events are delivered with the reader's global
	 * threads (this section's, indexed by its own thread index), offsets in the section's
	 * file, and messages naming the section. */
	int many;
	const nt_reader_thread *threads;
	uint64_t base;
	nt_zchunk_decoder **zdec; /* shared by the visits of one nt_reader_visit; made on use */
	uint32_t ahead_buffers;   /* nt_ahead_plan's, for the helper each visit starts */
	int ahead_forced;
	nt_ahead *ahead;          /* decompressing ahead (NULL: serially) */
	char msg[768];
} visit;

static void report(visit *v, uint64_t off, const char *msg)
{
	v->damaged = 1;
	if (v->cb->on_error == NULL)
		return;
	if (v->many) {
		snprintf(v->msg, sizeof(v->msg), "%s: %s", v->r->name, msg);
		v->cb->on_error(v->ctx, v->base + off, v->msg);
	} else {
		v->cb->on_error(v->ctx, off, msg);
	}
}

/* Deliver an event; nonzero when the callback asks to stop. */
static int emit(visit *v, nt_reader_event *ev)
{
	if (v->cb->on_event == NULL)
		return 0;
	if (v->many) {
		ev->thread = &v->threads[ev->thread - v->r->threads];
		ev->offset += v->base;
	}
	return v->cb->on_event(v->ctx, ev);
}

static void emit_gap(visit *v, const nt_reader_gap *gap)
{
	if (v->cb->on_gap == NULL)
		return;
	nt_reader_gap g = *gap;
	if (v->many) {
		g.thread = &v->threads[gap->thread - v->r->threads];
		g.offset += v->base;
	}
	v->cb->on_gap(v->ctx, &g);
}

/* The clock, ordinals and thread of a cursor at the chunk whose header is `h` (at `off`). */
static void cursor_start(const nt_reader *r, chunk_cursor *c, const nt_chunk_header *h,
			 uint64_t off)
{
	c->ticks = c->base_ticks = h->base_ticks;
	c->first = c->ordinal = h->first_event;
	c->skip_below = 0;
	c->offset = off;
	c->thread = &r->threads[h->thread];
	c->active = 1;
}

static void cursor_open_chunk(const nt_reader *r, chunk_cursor *c, uint64_t off, uint64_t size)
{
	const nt_chunk_header *h = (const nt_chunk_header *)(const void *)(r->data + off);
	c->data = r->data;
	c->report = UINT64_MAX;
	c->pos = off + sizeof(*h);
	c->end = off + (h->size_bytes >= sizeof(*h) && h->size_bytes < size ? h->size_bytes : size);
	cursor_start(r, c, h, off);
}

/* A decompressed chunk at `buf` (nt_zchunk_decode checked its size), of the CompressedChunk
 * at `off`. */
static void cursor_open_buffer(const nt_reader *r, chunk_cursor *c, const uint8_t *buf,
			       uint64_t off)
{
	const nt_chunk_header *h = (const nt_chunk_header *)(const void *)buf;
	c->data = buf;
	c->report = off;
	c->zend = h->first_event + h->event_count;
	c->pos = sizeof(*h);
	c->end = h->size_bytes;
	cursor_start(r, c, h, off);
}

/* Opens the chunk record at `off` (`size` bytes, nt_chunk_header_ok): a Chunk in place, a
 * CompressedChunk decompressed into *buf (NT_MAX_ZCHUNK_BYTES, allocated on first use), or
 * taken from the helper's source `queue` with the buffer it was decompressed into.
 * Returns NULL, or why the compressed chunk cannot be read. */
static const char *cursor_open_top(visit *v, chunk_cursor *c, uint8_t **buf, uint32_t queue,
				   uint64_t off, uint64_t size)
{
	const nt_reader *r = v->r;
	if (r->data[off] != NT_KIND_ZCHUNK) {
		cursor_open_chunk(r, c, off, size);
		return NULL;
	}
	const char *why;
	if (v->ahead != NULL && nt_ahead_take(v->ahead, queue, off, buf, &why)) {
		if (why == NULL)
			cursor_open_buffer(r, c, *buf, off);
		return why;
	}
	if (*buf == NULL && (*buf = malloc(NT_MAX_ZCHUNK_BYTES)) == NULL)
		return "out of memory decompressing a compressed chunk";
	if (*v->zdec == NULL && (*v->zdec = nt_zchunk_decoder_new()) == NULL)
		return "out of memory decompressing a compressed chunk";
	why = nt_zchunk_decode(*v->zdec, r->data + off, size, *buf, NT_MAX_ZCHUNK_BYTES);
	if (why == NULL)
		cursor_open_buffer(r, c, *buf, off);
	return why;
}

/* The events of a chunk that could not be read, as a gap from the ordinal the thread had
 * reached (*expected, advanced past them). Returns 1 when there are some. */
static int lost_chunk(const nt_reader *r, uint64_t off, uint64_t *expected, nt_reader_gap *gap)
{
	const nt_chunk_header *h = nt_chunk_at(r, off);
	uint64_t end = h->first_event + h->event_count;
	if (end <= *expected)
		return 0;
	gap->thread = &r->threads[h->thread];
	gap->events = end - *expected;
	gap->time_ns = nt_ticks_to_ns(r, h->base_ticks);
	gap->offset = off;
	*expected = end;
	return 1;
}

/* Lost events before the chunk `c` just opened, given the ordinal the thread's previous
 * chunk ended at; fills *gap and returns 1 when there are some. */
static int chunk_gap(const nt_reader *r, const chunk_cursor *c, uint64_t expected,
		     nt_reader_gap *gap)
{
	if (c->first <= expected)
		return 0;
	gap->thread = c->thread;
	gap->events = c->first - expected;
	gap->time_ns = nt_ticks_to_ns(r, c->base_ticks);
	gap->offset = c->offset;
	return 1;
}

/* Next event of a chunk: 1 = *ev filled, 0 = chunk done, -1 = damage (*why, *at); after a
 * damaged record that is still framed, the cursor has moved past it, so the caller may go
 * on (skip policy); when framing itself is broken the cursor is closed. */
static int cursor_next(const nt_reader *r, chunk_cursor *c, nt_reader_event *ev,
		       nt_reader_arg *args, const char **why, uint64_t *at)
{
	while (c->active && c->pos + 4 <= c->end) {
		const uint8_t *p = c->data + c->pos;
		uint64_t off = c->report != UINT64_MAX ? c->report : c->pos, bytes;
		uint32_t head32 = nt_record_head_at(p);
		int compact = nt_head_is_compact(head32);
		unsigned kind = compact ? nt_compact_kind(head32) : head32 & 0xffu;
		nt_frame f = nt_chunk_record_frame(p, c->end - c->pos, &bytes);
		if (f == NT_FRAME_END)
			break; /* unpublished space: the chunk's data ends here */
		if (f != NT_FRAME_OK) {
			c->active = 0;
			*why = nt_frame_problem(f);
			*at = off;
			return -1;
		}
		c->pos += bytes;
		if (kind == NT_KIND_TIMESTAMP && bytes < sizeof(nt_timestamp_record)) {
			*why = "timestamp record is too short";
			*at = off;
			return -1;
		}
		nt_chunk_clock clock = { c->ticks, c->ordinal };
		nt_chunk_clock_step(&clock, p, bytes);
		c->ticks = clock.ticks;
		c->ordinal = clock.events;
		if (!nt_kind_is_event(kind))
			continue; /* padding, a clock escape, or a kind this reader does not know */
		/* An event, even if damaged below: it took its ordinal and its delta. */
		uint32_t head = compact ? 4u : nt_event_head_bytes(kind);
		if (bytes < head) {
			*why = "complete event is missing its duration";
			*at = off;
			return -1;
		}
		if (c->ordinal - 1 < c->skip_below)
			continue; /* already delivered from the saved stream */
		uint32_t site = compact ? nt_compact_callsite(head32) : nt_record_bits16(head32);
		if (site == 0 || site >= r->ncallsites || !r->callsites[site].defined) {
			*why = "event references a call site the archive never defined";
			*at = off;
			return -1;
		}
		const reader_callsite *cs = &r->callsites[site];
		const char *bad = compact ? decode_compact_args(r, cs, p + 4, nt_compact_values(head32),
								 args, &ev->arg_count)
					  : decode_args(r, p + head, p + bytes, args, &ev->arg_count);
		if (bad) {
			*why = bad;
			*at = off;
			return -1;
		}
		ev->kind = kind;
		ev->category = r->strings[cs->category].str;
		ev->name = r->strings[cs->name].str;
		ev->file = r->strings[cs->file].str;
		ev->line = cs->line;
		ev->callsite_repo = cs->repo;
		ev->callsite = site;
		ev->thread = c->thread;
		ev->ticks = c->ticks;
		ev->duration_ns = 0;
		if (kind == NT_KIND_COMPLETE) {
			uint64_t dur = rd64(p + 8);
			ev->ticks = c->ticks - dur;
			int64_t end_ns = nt_ticks_to_ns(r, c->ticks);
			ev->time_ns = nt_ticks_to_ns(r, ev->ticks);
			ev->duration_ns = end_ns > ev->time_ns ? (uint64_t)end_ns - (uint64_t)ev->time_ns : 0;
		} else {
			ev->time_ns = nt_ticks_to_ns(r, c->ticks);
		}
		ev->wall_ns = nt_ns_to_wall(r, ev->time_ns);
		ev->args = args;
		ev->offset = off;
		return 1;
	}
	/* A decompressed chunk's header is what accounting trusts without decompressing. */
	if (c->active && c->report != UINT64_MAX && c->ordinal != c->zend) {
		c->active = 0;
		*why = NT_ZCHUNK_COUNT_LIE;
		*at = c->report;
		return -1;
	}
	c->active = 0;
	return 0;
}

/* Next top-level record at or after *off: returns its size, or 0 at the end of the file.
 * Damage is reported when `quiet` is 0, and then either stops (returns 0, *stopped = 1) or
 * resynchronises on the next chunk header. */
static uint64_t next_top(visit *v, uint64_t *off, int quiet, int *stopped)
{
	nt_reader *r = v->r;
	while (*off < r->size) {
		const char *why = NULL;
		uint64_t size = nt_top_record_size(r, *off, &why);
		if (size != 0)
			return size;
		if (!quiet) {
			report(v, *off, why);
			if (v->policy == NT_ON_CORRUPT_STOP) {
				*stopped = 1;
				return 0;
			}
		}
		*off = nt_resync(r, *off);
	}
	return 0;
}

/* Opens an arena chunk, skipping what the saved stream already delivered. */
static void cursor_open_arena(const nt_reader *r, chunk_cursor *c, uint64_t off)
{
	cursor_open_chunk(r, c, off, r->chunk_size);
	if (r->tail && c->thread->index < r->ncovered) {
		uint64_t covered = r->covered[c->thread->index];
		c->skip_below = covered;
		if (c->first < covered)
			c->first = covered; /* those events are not lost: no gap over them */
	}
}

/* Decode one chunk in stream order; returns 0 to go on, 1 (stop asked) or -1 (damage). */
static int stream_chunk(visit *v, nt_reader_arg *args, uint64_t *expected, uint64_t off,
			uint64_t size, int arena, uint8_t **buf)
{
	nt_reader *r = v->r;
	chunk_cursor c;
	nt_reader_gap gap;
	if (arena) {
		cursor_open_arena(r, &c, off);
	} else {
		const char *bad = cursor_open_top(v, &c, buf, 0, off, size);
		if (bad != NULL) {
			report(v, off, bad);
			if (lost_chunk(r, off, &expected[nt_chunk_at(r, off)->thread], &gap))
				emit_gap(v, &gap);
			return v->policy == NT_ON_CORRUPT_STOP ? -1 : 0;
		}
	}
	if (chunk_gap(r, &c, expected[c.thread->index], &gap))
		emit_gap(v, &gap);
	nt_reader_event ev;
	const char *why;
	uint64_t at;
	int rc, result = 0;
	while ((rc = cursor_next(r, &c, &ev, args, &why, &at)) != 0) {
		if (rc < 0) {
			report(v, at, why);
			if (v->policy == NT_ON_CORRUPT_STOP) {
				result = -1;
				break;
			}
			continue;
		}
		if (emit(v, &ev)) {
			result = 1;
			break;
		}
	}
	if (c.ordinal > expected[c.thread->index])
		expected[c.thread->index] = c.ordinal;
	return result;
}

static int visit_stream(visit *v)
{
	nt_reader *r = v->r;
	nt_reader_arg *args = malloc(sizeof(*args) * MAX_ARGS);
	uint64_t *expected = calloc(r->nthreads ? r->nthreads : 1, sizeof(uint64_t));
	uint8_t *buf = NULL; /* a decompressed chunk */
	int stopped = 0, result = 0;
	if (args == NULL || expected == NULL) {
		free(args);
		free(expected);
		return -1;
	}
	nt_ahead_source src = { r, NT_AHEAD_ANY_THREAD };
	v->ahead = nt_ahead_start(&src, 1, 0, v->ahead_buffers, v->ahead_forced, r->zchunks);
	uint64_t off = nt_stream_start(r);
	for (;;) {
		uint64_t size = next_top(v, &off, 0, &stopped);
		if (size == 0)
			break;
		if (nt_is_chunk_kind(r->data[off])) {
			result = stream_chunk(v, args, expected, off, size, 0, &buf);
			if (result < 0)
				stopped = 1;
			if (result != 0)
				break;
		}
		off += size;
	}
	if (r->arena && !stopped && result == 0)
		for (uint32_t i = 0; i < r->nchunks && result == 0; i++)
			result = stream_chunk(v, args, expected, r->chunks[i].offset, 0, 1, NULL);
	nt_ahead_stop(v->ahead);
	v->ahead = NULL;
	free(args);
	free(buf);
	free(expected);
	return stopped || result < 0 ? -1 : result;
}

/* ---- timestamp order ------------------------------------------------------------------- */

typedef struct thread_stream {
	visit *v;            /* the archive it reads */
	uint32_t rank;       /* ties in time go to the lower rank: sections, then threads */
	uint32_t thread;
	uint64_t scan;       /* where to look for this thread's next chunk in the stream */
	uint32_t ai;         /* then: next index into r->chunks (Arena layout) */
	chunk_cursor c;
	nt_reader_event ev;  /* pending event, valid when has_event */
	nt_reader_arg *args;
	int has_event;
	uint64_t expected;   /* ordinal the thread's last chunk ended at */
	nt_reader_gap gap;   /* delivered before ev when has_gap */
	int has_gap;
	uint8_t *buf;        /* its decompressed chunk (NULL until it meets a compressed one) */
} thread_stream;

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

/* Opens the thread's next chunk; 0 when there is none, -1 when damage stops the visit. */
static int stream_next_chunk(visit *v, thread_stream *s)
{
	nt_reader *r = v->r;
	if (s->c.offset != 0 && s->c.ordinal > s->expected)
		s->expected = s->c.ordinal;
	int stopped = 0;
	for (;;) { /* the record stream first (all of it for the Stream layout) */
		uint64_t size = next_top(v, &s->scan, 1, &stopped);
		if (size == 0)
			break;
		uint64_t off = s->scan;
		s->scan += size;
		if (!nt_is_chunk_kind(r->data[off]) || nt_chunk_at(r, off)->thread != s->thread)
			continue;
		const char *bad = cursor_open_top(v, &s->c, &s->buf, s->rank, off, size);
		if (bad == NULL)
			goto opened;
		report(v, off, bad);
		nt_reader_gap lost;
		if (lost_chunk(r, off, &s->expected, &lost))
			add_gap(s, &lost);
		if (v->policy == NT_ON_CORRUPT_STOP)
			return -1;
	}
	for (; r->arena && s->ai < r->nchunks;) { /* then the arena's chunks */
		const struct arena_chunk *ac = &r->chunks[s->ai++];
		if (ac->thread == s->thread) {
			cursor_open_arena(r, &s->c, ac->offset);
			goto opened;
		}
	}
	return 0;
opened:;
	nt_reader_gap gap;
	if (chunk_gap(r, &s->c, s->expected, &gap))
		add_gap(s, &gap);
	return 1;
}

/* Advance a stream to its next event; returns -1 when damage stops the visit. */
static int stream_advance(thread_stream *s)
{
	visit *v = s->v;
	nt_reader *r = v->r;
	for (;;) {
		if (s->c.active) {
			const char *why;
			uint64_t at;
			int rc = cursor_next(r, &s->c, &s->ev, s->args, &why, &at);
			if (rc > 0) {
				s->has_event = 1;
				return 0;
			}
			if (rc < 0) {
				report(v, at, why);
				if (v->policy == NT_ON_CORRUPT_STOP)
					return -1;
			}
			continue;
		}
		int opened = stream_next_chunk(v, s);
		if (opened < 0)
			return -1;
		if (opened == 0) {
			s->has_event = 0;
			if (s->has_gap) { /* events lost after the thread's last one */
				emit_gap(v, &s->gap);
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
	return (heap_entry){ s->ev.time_ns, s->rank, s };
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

/* Framing damage is reported once, before the merge; the per-thread scans then skip it
 * quietly. Returns -1 when it stops the visit. */
static int report_framing(visit *v)
{
	nt_reader *r = v->r;
	uint64_t off = nt_stream_start(r);
	int stopped = 0;
	uint64_t size;
	while ((size = next_top(v, &off, 0, &stopped)) != 0)
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

/* One k-way merge over the thread streams of every archive in vs[0 .. nv). */
static int visit_time(visit *vs, uint32_t nv)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < nv; i++) {
		if (report_framing(&vs[i]) < 0)
			return -1;
		n += vs[i].r->summary.threads;
	}
	if (n > UINT32_MAX / MAX_ARGS)
		return -1;
	thread_stream *streams = calloc(n ? n : 1, sizeof(*streams));
	heap_entry *heap = calloc(n ? n : 1, sizeof(*heap));
	nt_reader_arg *argmem = malloc(sizeof(*argmem) * MAX_ARGS * (n ? n : 1));
	int result = 0;
	if (streams == NULL || heap == NULL || argmem == NULL) {
		result = -1;
		goto out;
	}
	uint32_t hn = 0, k = 0;
	for (uint32_t i = 0; i < nv; i++) {
		nt_reader *r = vs[i].r;
		for (uint32_t j = 0; j < r->summary.threads; j++, k++) {
			thread_stream *s = &streams[k];
			s->v = &vs[i];
			s->rank = k;
			s->thread = r->thread_order[j];
			s->scan = nt_stream_start(r);
			s->args = argmem + (size_t)k * MAX_ARGS;
		}
	}
	start_ahead_by_time(vs, nv, streams, (uint32_t)n);
	for (uint32_t i = 0; i < n; i++) {
		thread_stream *s = &streams[i];
		if (stream_advance(s) < 0) {
			result = -1;
			goto out;
		}
		if (s->has_event)
			heap[hn++] = entry_of(s);
	}
	for (uint32_t i = hn; i-- > 0;)
		sift_down(heap, hn, i);
	while (hn > 0) {
		thread_stream *s = heap[0].s;
		if (s->has_gap) {
			emit_gap(s->v, &s->gap);
			s->has_gap = 0;
		}
		if (emit(s->v, &s->ev)) {
			result = 1;
			break;
		}
		if (stream_advance(s) < 0) {
			result = -1;
			break;
		}
		heap[0] = s->has_event ? entry_of(s) : heap[--hn];
		sift_down(heap, hn, 0);
	}
out:
	nt_ahead_stop(vs[0].ahead); /* before the buffers it swapped into the streams go */
	for (uint32_t i = 0; i < nv; i++)
		vs[i].ahead = NULL;
	for (uint64_t i = 0; streams != NULL && i < n; i++)
		free(streams[i].buf);
	free(streams);
	free(heap);
	free(argmem);
	return result;
}

/* Damage the open found in an archive, reported before its events; -1 when it stops. */
static int report_open_damage(visit *v)
{
	for (uint32_t i = 0; i < v->r->ndamage; i++) {
		report(v, v->r->damage[i].offset, v->r->damage[i].message);
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

/* Every section that could be opened, as a visit of its own (time order merges them all;
 * stream order takes them one after another). */
static int visit_many(nt_reader *m, const visit *proto, nt_order order)
{
	reader_many *mm = m->many;
	visit first = *proto;
	if (report_many_problems(m, &first) < 0)
		return -1;
	visit *vs = calloc(mm->nsections ? mm->nsections : 1, sizeof(*vs));
	if (vs == NULL)
		return -1;
	uint32_t nv = 0;
	int result = 0;
	for (size_t i = 0; i < mm->nsections && result == 0; i++) {
		const nt_reader_section *s = &mm->sections[i];
		if (s->reader == NULL)
			continue;
		vs[nv] = *proto;
		vs[nv].r = s->reader;
		vs[nv].many = 1;
		vs[nv].threads = m->threads + s->thread_base;
		vs[nv].base = s->reader->file_base;
		result = report_open_damage(&vs[nv++]);
	}
	if (result == 0 && order == NT_ORDER_TIME)
		result = visit_time(vs, nv);
	for (uint32_t i = 0; result == 0 && order != NT_ORDER_TIME && i < nv; i++)
		result = visit_stream(&vs[i]);
	free(vs);
	return result;
}

int nt_reader_visit(nt_reader *r, const nt_reader_callbacks *cb, void *ctx, nt_order order,
		    nt_corrupt_policy policy)
{
	if (r == NULL || cb == NULL)
		return -1;
	nt_zchunk_decoder *zdec = NULL;
	visit v = { .r = r, .cb = cb, .ctx = ctx, .policy = policy, .many = r->in_many,
		    .threads = r->threads, .base = r->file_base, .zdec = &zdec };
	v.ahead_buffers = nt_ahead_plan(r, &v.ahead_forced);
	int rc;
	if (r->many)
		rc = visit_many(r, &v, order);
	else if (report_open_damage(&v) < 0)
		rc = -1;
	else
		rc = order == NT_ORDER_TIME ? visit_time(&v, 1) : visit_stream(&v);
	nt_zchunk_decoder_free(zdec);
	return rc;
}

int nt_reader_list_next(const nt_reader_arg *a, uint32_t *pos, const char **s, uint32_t *len)
{
	if (a->type != NT_ARG_STRING_LIST || *pos + 4 > a->value.list.bytes)
		return 0;
	uint32_t n = rd32(a->value.list.ptr + *pos);
	*s = (const char *)a->value.list.ptr + *pos + 4;
	*len = n;
	*pos += 4 + n;
	return 1;
}
