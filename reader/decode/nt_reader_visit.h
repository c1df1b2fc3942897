/* nt_reader_visit.h - decoding chunks into events (nt_reader_visit.c), what the visit's
 * orders (nt_reader_cursor.c: stream order, the time-ordered merge, the public cursor and
 * nt_reader_visit) build on. Not installed. */
#ifndef NT_READER_VISIT_H
#define NT_READER_VISIT_H

#include <stdint.h>

#include "nt_reader_ahead.h"
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

/* Damage at `off`, to the visit's on_error (naming the section in a many-process reader). */
void nt_visit_report(visit *v, uint64_t off, const char *msg);
/* A gap, to the visit's on_gap (with the reader's global thread and file offset). */
void nt_visit_emit_gap(visit *v, const nt_reader_gap *gap);
/* Opens the chunk record at `off` (a Chunk in place, or a CompressedChunk decompressed into
 * *buf or taken from the helper's queue `queue`): NULL, or why it cannot be read. */
const char *nt_visit_open_top(visit *v, chunk_cursor *c, uint8_t **buf, uint32_t queue,
			      uint64_t off, uint64_t size);
/* Opens an arena chunk, skipping what the saved stream already delivered. */
void nt_visit_open_arena(const nt_reader *r, chunk_cursor *c, uint64_t off);
/* The events of the unreadable chunk at `off` as a gap from *expected (advanced): 1 when
 * there are some. */
int nt_visit_lost_chunk(const nt_reader *r, uint64_t off, uint64_t *expected, nt_reader_gap *gap);
/* Lost events before the chunk `c` just opened, from the ordinal `expected`: 1 when some. */
int nt_visit_chunk_gap(const nt_reader *r, const chunk_cursor *c, uint64_t expected,
		       nt_reader_gap *gap);
/* Next event of a chunk: 1 = *ev filled, 0 = chunk done, -1 = damage (*why, *at). */
int nt_visit_next_event(const nt_reader *r, chunk_cursor *c, nt_reader_event *ev,
			nt_reader_arg *args, const char **why, uint64_t *at);
/* Next top-level record at or after *off: its size, or 0 at the end (or *stopped = 1). */
uint64_t nt_visit_next_top(visit *v, uint64_t *off, int quiet, int *stopped);

#endif /* NT_READER_VISIT_H */
