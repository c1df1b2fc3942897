/*
 * nt_record.h - record framing: the one definition every walker of records uses.
 *
 * Every record starts with an 8-byte word 0, little-endian:
 *
 *   bits  0..7   kind (RecordKind)
 *   bits  8..15  size in 8-byte words; 0 means a large record (only chunk headers at the top
 *                level), whose size in bytes is bits 32..63
 *   bits 16..31  per kind: call-site index of an event, string length, ...
 *   bits 32..63  per kind: an event's tick delta from the previous record of its chunk, an
 *                index, or a large record's size in bytes
 *
 * Which kinds are events (they take one event ordinal each and advance the chunk's clock by
 * their delta) is decided here and nowhere else: the writer's chunk walk, the streaming saver,
 * the archive writer, the reader, the importer and the tests all ask nt_kind_is_event(). A
 * kind unknown to this version is framed by its size and skipped; inside a chunk it is not an
 * event, so it never shifts ordinals. A real bug came from three walkers each deciding this
 * for themselves (Trace2 records were events to the writer but not to the saver).
 */
#ifndef NT_RECORD_H
#define NT_RECORD_H

#include <stdint.h>

#include "nt_format.h"

/* Events: the low-level kinds and every Trace2 message (NT_T2_EVENTS). */
static inline int nt_kind_is_event(unsigned kind)
{
	return (kind >= NT_KIND_BEGIN && kind <= NT_KIND_COUNTER) || nt_kind_is_t2(kind);
}

/* Durable records: defined once, referred to by index from events. */
static inline int nt_kind_is_durable(unsigned kind)
{
	return kind == NT_KIND_STRING || kind == NT_KIND_THREAD || kind == NT_KIND_CALLSITE ||
	       kind == NT_KIND_PROCESS;
}

/* Bytes an event record has before its arguments (the Complete record's duration word). */
static inline uint32_t nt_event_head_bytes(unsigned kind)
{
	return kind == NT_KIND_COMPLETE ? 16u : 8u;
}

static inline uint64_t nt_record_word(unsigned kind, uint32_t words, uint32_t bits16,
				      uint32_t bits32)
{
	return (uint64_t)(kind & 0xffu) | (uint64_t)(words & 0xffu) << 8 |
	       (uint64_t)(bits16 & 0xffffu) << 16 | (uint64_t)bits32 << 32;
}

/* Word 0 of a large record (size_words 0, size in bytes above). */
static inline uint64_t nt_large_record_word(unsigned kind, uint32_t bits16, uint32_t size_bytes)
{
	return nt_record_word(kind, 0, bits16, size_bytes);
}

static inline unsigned nt_record_kind(uint64_t w0)
{
	return (unsigned)(w0 & 0xffu);
}

static inline uint32_t nt_record_bits16(uint64_t w0)
{
	return (uint32_t)(w0 >> 16) & 0xffffu;
}

/* An event's tick delta. */
static inline uint32_t nt_record_delta(uint64_t w0)
{
	return (uint32_t)(w0 >> 32);
}

/* Reads word 0 at `p` (any alignment) as the little-endian value it is. */
static inline uint64_t nt_record_word_at(const void *p)
{
	uint64_t w;
	__builtin_memcpy(&w, p, 8);
	return w;
}

typedef enum nt_frame {
	NT_FRAME_OK = 0,
	NT_FRAME_END,       /* a zero kind: unwritten (or not yet published) space */
	NT_FRAME_SHORT,     /* fewer than 8 bytes left */
	NT_FRAME_BAD_SIZE,  /* size 0, or not a multiple of 8 */
	NT_FRAME_PAST_END,  /* the record runs past the space it must fit in */
} nt_frame;

/* What each nt_frame means, for error messages. */
static inline const char *nt_frame_problem(nt_frame f)
{
	switch (f) {
	case NT_FRAME_OK: return "record is well framed";
	case NT_FRAME_END: return "zero word where a record should start (unwritten space)";
	case NT_FRAME_SHORT: return "truncated record at the end of the data";
	case NT_FRAME_BAD_SIZE: return "record size is not a positive multiple of 8";
	case NT_FRAME_PAST_END: return "record runs past the end of the space that holds it";
	}
	return "record is not framed";
}

/* The one bounded "next record" step: frames the record whose word 0 is `w0`, with `room`
 * bytes from its start to the end of what holds it (the file, or the chunk), and sets *size.
 * `allow_large` admits large records (size_words 0): only the top level of an archive has
 * them; inside a chunk or the durable region a zero size is damage. Never trusts the size
 * beyond `room`. */
static inline nt_frame nt_record_frame(uint64_t w0, uint64_t room, int allow_large,
				       uint64_t *size)
{
	*size = 0;
	if (room < 8)
		return NT_FRAME_SHORT;
	if (nt_record_kind(w0) == NT_KIND_INVALID)
		return NT_FRAME_END;
	uint32_t words = (uint32_t)(w0 >> 8) & 0xffu;
	uint64_t bytes = words ? (uint64_t)words * 8u : allow_large ? (w0 >> 32) : 0;
	if (bytes < 8 || bytes % 8 != 0)
		return NT_FRAME_BAD_SIZE;
	if (bytes > room)
		return NT_FRAME_PAST_END;
	*size = bytes;
	return NT_FRAME_OK;
}

/* A chunk's clock and ordinal, advanced record by record: the one rule for what a record
 * does to them (an event adds its delta and takes an ordinal; a Timestamp escape sets the
 * clock; everything else leaves both alone). `rec` holds `size` framed bytes. */
typedef struct nt_chunk_clock {
	uint64_t ticks;
	uint64_t events;
} nt_chunk_clock;

static inline void nt_chunk_clock_step(nt_chunk_clock *c, const uint8_t *rec, uint64_t size)
{
	uint64_t w0 = nt_record_word_at(rec);
	unsigned kind = nt_record_kind(w0);
	if (nt_kind_is_event(kind)) {
		c->ticks += nt_record_delta(w0);
		c->events++;
	} else if (kind == NT_KIND_TIMESTAMP && size >= sizeof(nt_timestamp_record)) {
		c->ticks = nt_record_word_at(rec + 8);
	}
}

#endif /* NT_RECORD_H */
