/* nt_reader_visit.h - decoding chunks into events (nt_reader_visit.c), what the visit's
 * orders (nt_reader_cursor.c: stream order, the public cursor and nt_reader_visit;
 * nt_reader_time.c: the time-ordered merge) build on. Not installed. */
#ifndef NT_READER_VISIT_H
#define NT_READER_VISIT_H

#include <stdint.h>

#include "nt_reader_ahead.h"
#include "nt_reader_args.h"
#include "nt_reader_internal.h"
#include "nt_reader_pipe.h"

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
	uint64_t *tally;     /* stream order: records that are no event, by kind (NULL: none) */
} chunk_cursor;

/* A closed section opened again, and its first compressed chunks decompressed, ahead of
 * its visit in stream order (nt_reader_section_ahead.c): the visit takes the reader (r
 * becomes its own) and, as its walk meets them, the chunks (their buffers stay the
 * helper's until the visit ends the section). */
#define NT_GIVEN_CHUNKS 2
typedef struct section_given {
	uint32_t section;
	int tried;       /* the helper opened it: r, or why it could not */
	nt_reader *r;
	const char *why;
	uint32_t nz, next; /* chunks decompressed; the next one the visit has not met */
	struct {
		uint64_t off;    /* the CompressedChunk's */
		const char *why; /* nt_zchunk_decode's answer */
	} z[NT_GIVEN_CHUNKS];
	uint8_t *buf[NT_GIVEN_CHUNKS]; /* NT_MAX_ZCHUNK_BYTES each, kept for the slot's next */
	nt_reader *used;  /* the visit's reader of the section, given back as it was */
	nt_reader *spare; /* one recycled, whose allocations the slot's next job takes over */
} section_given;

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
	/* Shared by the visits of one cursor; taken on use from the reader the cursor visits
	 * (top: r, or the many-process reader of which r is a section), given back at its close. */
	nt_zchunk_decoder **zdec;
	const nt_reader *top;
	uint32_t ahead_buffers;   /* nt_ahead_plan's, for the helper each visit starts */
	int ahead_forced;
	nt_ahead *ahead;          /* decompressing ahead (NULL: serially) */
	char *msg;                /* NT_VISIT_MSG_BYTES, the cursor's: one for all its visits */
	/* A section closed between visits (nt_reader_lazy.c): r is NULL but while the visit
	 * reads it (stream order: from its first record to its last; time order: while one of
	 * its threads' streams has started and not ended, `users` of them). */
	int closed, open_failed;
	uint32_t section, users;
	section_given *given; /* stream order: this section's, opened ahead (NULL: none) */
} visit;

/* A damage message naming the section: "<section's reader name>: <problem>". */
#define NT_VISIT_MSG_BYTES 768

/* A closed section's reader for its visit: 1 when v->r is open, 0 when it cannot be opened
 * (reported once, as damage at the section's start), -1 when that stops the visit. */
int nt_visit_open_section(visit *v);
/* Closes it again (nothing for a visit of a section that stays open). */
void nt_visit_close_section(visit *v);

/* Damage at `off`, to the visit's on_error (naming the section in a many-process reader). */
void nt_visit_report(visit *v, uint64_t off, const char *msg);
/* A gap, to the visit's on_gap (with the reader's global thread and file offset). */
void nt_visit_emit_gap(visit *v, const nt_reader_gap *gap);
/* Opens the chunk record at `off` (a Chunk in place, or a CompressedChunk decompressed into
 * *buf or taken from the helper's queue `queue`): NULL, or why it cannot be read. */
const char *nt_visit_open_top(visit *v, chunk_cursor *c, uint8_t **buf, uint32_t queue,
			      uint64_t off, uint64_t size);
/* A cursor of a compressed chunk (c->report: its CompressedChunk) whose buffer is gone:
 * the chunk decompressed again by the visit into *buf (allocated when NULL) and the cursor
 * pointed at it, where it was. NULL, or why it cannot be read. */
const char *nt_visit_reload(visit *v, chunk_cursor *c, uint8_t **buf);
/* The helper of a stream-order visit of a many-process reader's visits `vs`: NULL (open
 * each section in turn) with fewer than 64 closed sections or no `buffers` (nt_ahead_plan:
 * one CPU, NANOTRACE_READER_AHEAD=off), no memory or no thread. _take(vi): visit vi's
 * section as the helper opened it (put it in vs[vi].given; NULL: open it yourself), asked
 * for in increasing vi; _done(vi) once that visit ends; _stop joins and frees (NULL is
 * ignored). */
typedef struct sections_ahead sections_ahead;
sections_ahead *nt_sections_ahead_start(const visit *vs, uint32_t nv, uint32_t buffers);
section_given *nt_sections_ahead_take(sections_ahead *a, uint32_t vi);
void nt_sections_ahead_done(sections_ahead *a, uint32_t vi);
void nt_sections_ahead_stop(sections_ahead *a);

/* Opens an arena chunk, skipping what the saved stream already delivered. */
void nt_visit_open_arena(const nt_reader *r, chunk_cursor *c, uint64_t off);
/* The events of the unreadable chunk at `off` as a gap from *expected (advanced): 1 when
 * there are some. */
int nt_visit_lost_chunk(const nt_reader *r, uint64_t off, uint64_t *expected, nt_reader_gap *gap);
/* Lost events before the chunk `c` just opened, from the ordinal `expected`: 1 when some. */
int nt_visit_chunk_gap(const nt_reader *r, const chunk_cursor *c, uint64_t expected,
		       nt_reader_gap *gap);
/* Next top-level record at or after *off: its size, or 0 at the end (or *stopped = 1). */
uint64_t nt_visit_next_top(visit *v, uint64_t *off, int quiet, int *stopped);

/* Inline: the per-event step of both orders (measured: a call per event across files cost
 * 15 % of the decode rate). */
/* Next event of a chunk: 1 = *ev filled, 0 = chunk done, -1 = damage (*why, *at); after a
 * damaged record that is still framed, the cursor has moved past it, so the caller may go
 * on (skip policy); when framing itself is broken the cursor is closed. */
static inline int nt_visit_next_event(const nt_reader *r, chunk_cursor *c,
				      nt_reader_event *ev, nt_reader_arg *args,
				      const char **why, uint64_t *at)
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
		if (!nt_kind_is_known_event(kind)) {
			if (c->tally != NULL)
				c->tally[kind]++;
			continue; /* padding, a clock escape, or a kind this reader does not know
				     (an event of 64..127 took its ordinal and delta above; it is
				     counted by nt_reader_count_records) */
		}
		/* An event, even if damaged below: it took its ordinal and its delta. */
		uint32_t head = compact ? 4u : nt_event_head_bytes(kind);
		if (bytes < head) {
			*why = kind == NT_KIND_COMPLETE ? "complete event is missing its duration"
							 : "async or flow event is missing its id";
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
		ev->id_scope = (uint8_t)nt_kind_id_scope(kind);
		ev->id = ev->id_scope != NT_ID_NONE ? nt_load_le64(p + 8) : 0;
		if (kind == NT_KIND_COMPLETE) {
			uint64_t dur = nt_load_le64(p + 8);
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

#endif /* NT_READER_VISIT_H */
