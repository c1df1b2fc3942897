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
 * Inside a chunk, a record may instead be COMPACT (format 2): 4 bytes, then 4-byte values,
 * recognized by bit 7 of byte 0 (kinds 128..255 are never RecordKinds):
 *
 *   bits  0..2   code: 0 Pad (4 bytes, no event), 1 Begin, 2 End, 3 Instant, 4 Counter,
 *                5 Trace2 region_enter, 6 Trace2 region_leave; 7 reserved
 *   bits  3..5   how many 4-byte values follow (0..7): the record is 4 + 4 * values bytes
 *   bit   6      reserved, 0
 *   bit   7      1
 *   bits  8..17  call-site index (1..1023)
 *   bits 18..31  tick delta (0..16383)
 *
 * A compact record's values are its arguments, in order; their names and types are in the
 * call site's CallSiteArgs record. Records are 4-byte aligned inside a chunk. In a live arena
 * the writer puts every record of 8 bytes or more at an 8-aligned offset (a Pad fills the
 * gap), so that one aligned 8-byte store publishes it; a saved chunk piece may start at any
 * record, so readers of saved data assume only 4-byte alignment. The top level of an archive
 * and the durable region hold no compact records.
 *
 * Which kinds are events (they take one event ordinal each and advance the chunk's clock by
 * their delta), compact or not, is decided here and nowhere else: the writer's chunk walk,
 * the streaming saver, the archive writer, the reader, the importer and the tests all ask
 * nt_kind_is_event() (through nt_record_is_event_at() for a record in a chunk). A
 * kind unknown to this version is framed by its size and skipped; inside a chunk it is an
 * event when it is in 64..127 (taking its ordinal and delta, so it never shifts the ones
 * after it) and no event otherwise. A real bug came from three walkers each deciding this
 * for themselves (Trace2 records were events to the writer but not to the saver).
 */
#ifndef NT_RECORD_H
#define NT_RECORD_H

#include <stdint.h>

#include "nt_format.h"
#include "nt_unaligned.h"

/* Events: the low-level kinds, every Trace2 message (NT_T2_EVENTS), and every kind of
 * 64..127 (format 2.2), known or not: such a record is framed like an EventRecord (call site
 * in bits 16..31, delta in bits 32..63), so a reader counts its ordinal and its delta even
 * when it does not know the kind, and skips it (nt_kind_is_known_event). */
static inline int nt_kind_is_plain_event(unsigned kind);
static inline int nt_kind_is_event(unsigned kind)
{
	return nt_kind_is_plain_event(kind) ||
	       (kind >= NT_KIND_EVENT_EXT_FIRST && kind <= NT_KIND_EVENT_EXT_LAST);
}

/* The events of format 2.1: EventRecord or CompleteRecord, no id (Begin .. Counter, Trace2).
 * The writer's paths that write no id take these kinds only. */
static inline int nt_kind_is_plain_event(unsigned kind)
{
	return (kind >= NT_KIND_BEGIN && kind <= NT_KIND_COUNTER) || nt_kind_is_t2(kind);
}

/* An event this version decodes; an event kind it does not (64..127 but for the id kinds)
 * is a newer writer's, skipped and counted by readers. */
static inline int nt_kind_is_known_event(unsigned kind)
{
	return nt_kind_is_event(kind) && (kind < NT_KIND_EVENT_EXT_FIRST || nt_kind_has_id(kind));
}

/* A kind this version of the format defines (nt_format.h's RecordKind): any other is a
 * newer writer's, framed by its size and skipped. */
static inline int nt_kind_is_known(unsigned kind)
{
	return (kind >= NT_KIND_PADDING && kind <= NT_KIND_BLOCKED) ||
	       kind == NT_KIND_TIMESTAMP || nt_kind_is_known_event(kind);
}

/* Durable records: defined once, referred to by index from events. */
static inline int nt_kind_is_durable(unsigned kind)
{
	return kind == NT_KIND_STRING || kind == NT_KIND_THREAD || kind == NT_KIND_CALLSITE ||
	       kind == NT_KIND_PROCESS || kind == NT_KIND_CALLSITE_ARGS;
}

/* --- Compact records (see the top of this file) --------------------------------------- */

#define NT_COMPACT_FLAG 0x80u
#define NT_COMPACT_PAD 0x80u /* the whole 4-byte Pad record */

static inline int nt_head_is_compact(uint32_t head)
{
	return (head & NT_COMPACT_FLAG) != 0;
}

static inline uint32_t nt_compact_values(uint32_t head)
{
	return (head >> 3) & 7u;
}

static inline uint32_t nt_compact_callsite(uint32_t head)
{
	return (head >> 8) & NT_COMPACT_MAX_CALLSITE;
}

static inline uint32_t nt_compact_delta(uint32_t head)
{
	return head >> 18;
}

/* The event kinds a compact record can carry, by code (0: a Pad, no event; NT_KIND_INVALID:
 * a reserved code), and the code of each kind (0: none). nt_compact_code() is this table's
 * inverse, written as a switch (an installed header compiles as C++ too, which has no array
 * designators); test_record_kinds proves the two agree for every kind and code. */
static const uint8_t nt_compact_kinds[8] = {
	NT_KIND_PADDING, NT_KIND_BEGIN, NT_KIND_END, NT_KIND_INSTANT, NT_KIND_COUNTER,
	NT_KIND_T2_FIRST + NT_T2E_REGION_ENTER, NT_KIND_T2_FIRST + NT_T2E_REGION_LEAVE,
	NT_KIND_INVALID,
};

/* The RecordKind a compact record stands for: Padding (code 0), Begin, End, Instant,
 * Counter, Trace2 region_enter or region_leave; Invalid for the reserved code or bit 6 set
 * (damage). */
static inline unsigned nt_compact_kind(uint32_t head)
{
	return (head & 0x40u) != 0 ? (unsigned)NT_KIND_INVALID : nt_compact_kinds[head & 7u];
}

/* The compact code of an event kind, 0 when a compact record cannot carry it. */
static inline unsigned nt_compact_code(unsigned kind)
{
	switch (kind) {
	case NT_KIND_BEGIN: return 1;
	case NT_KIND_END: return 2;
	case NT_KIND_INSTANT: return 3;
	case NT_KIND_COUNTER: return 4;
	case NT_KIND_T2_FIRST + NT_T2E_REGION_ENTER: return 5;
	case NT_KIND_T2_FIRST + NT_T2E_REGION_LEAVE: return 6;
	default: return 0;
	}
}

static inline int nt_kind_has_compact(unsigned kind)
{
	return nt_compact_code(kind) != 0;
}

/* The head of a compact record of `kind` (nt_kind_has_compact), `values` 4-byte values
 * (at most NT_COMPACT_MAX_VALUES), call site 1..NT_COMPACT_MAX_CALLSITE and a delta of at
 * most NT_COMPACT_MAX_DELTA: the caller checks the ranges. */
static inline uint32_t nt_compact_head(unsigned kind, uint32_t values, uint32_t callsite,
				       uint32_t delta)
{
	return NT_COMPACT_FLAG | nt_compact_code(kind) | values << 3 | callsite << 8 | delta << 18;
}

/* Bytes an event record has before its arguments (the Complete record's duration word, an
 * IdEventRecord's id). */
static inline uint32_t nt_event_head_bytes(unsigned kind)
{
	return kind == NT_KIND_COMPLETE || nt_kind_has_id(kind) ? 16u : 8u;
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

/* Reads the first 4 bytes of a record at `p` (any alignment): a compact record's whole
 * head, or the low half of word 0 (kind, size, bits16). */
static inline uint32_t nt_record_head_at(const void *p)
{
	return nt_load_le32(p);
}

/* Reads word 0 at `p` (any alignment) as the little-endian value it is. */
static inline uint64_t nt_record_word_at(const void *p)
{
	return nt_load_le64(p);
}

typedef enum nt_frame {
	NT_FRAME_OK = 0,
	NT_FRAME_END,       /* a zero kind: unwritten (or not yet published) space */
	NT_FRAME_SHORT,     /* fewer than 8 bytes left */
	NT_FRAME_BAD_SIZE,  /* size 0, or not a multiple of 8 */
	NT_FRAME_PAST_END,  /* the record runs past the space it must fit in */
	NT_FRAME_MISALIGNED, /* a record of 8 bytes or more off an 8-byte boundary in an arena */
	NT_FRAME_BAD_COMPACT, /* a compact record with a reserved code or bit */
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
	case NT_FRAME_MISALIGNED: return "record of 8 bytes or more is not 8-byte aligned in the arena";
	case NT_FRAME_BAD_COMPACT: return "compact record has a reserved code";
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

/* A compact record whose head is `head`, with `room` bytes from its start. */
static inline nt_frame nt_compact_frame(uint32_t head, uint64_t room, uint64_t *size)
{
	uint64_t bytes = 4u + 4u * (uint64_t)nt_compact_values(head);
	*size = 0;
	if (nt_compact_kind(head) == NT_KIND_INVALID)
		return NT_FRAME_BAD_COMPACT;
	if (bytes > room)
		return NT_FRAME_PAST_END;
	*size = bytes;
	return NT_FRAME_OK;
}

/* The "next record" step inside a chunk's payload (saved data: any alignment of `p`),
 * compact records included, with `room` bytes to the end of the payload. */
static inline nt_frame nt_chunk_record_frame(const uint8_t *p, uint64_t room, uint64_t *size)
{
	*size = 0;
	if (room < 4)
		return NT_FRAME_SHORT;
	uint32_t head = nt_record_head_at(p);
	if (nt_head_is_compact(head))
		return nt_compact_frame(head, room, size);
	if ((head & 0xffu) == NT_KIND_INVALID)
		return NT_FRAME_END;
	if (room < 8)
		return NT_FRAME_SHORT;
	return nt_record_frame(nt_record_word_at(p), room, 0, size);
}

/* The same step over a live arena's chunk payload (4-aligned at `payload`, which another
 * thread is filling): the head is loaded with acquire first, so a compact record's head is
 * read by the one 4-byte store that published it, and nothing past it; a longer record is
 * read as the one aligned 8-byte word that published it. */
static inline nt_frame nt_live_record_frame(const uint8_t *payload, uint64_t off, uint64_t room,
					    uint64_t *size)
{
	*size = 0;
	if (room < 4)
		return NT_FRAME_SHORT;
	uint32_t head = __atomic_load_n((const uint32_t *)(const void *)(payload + off),
					__ATOMIC_ACQUIRE);
	if (nt_head_is_compact(head))
		return nt_compact_frame(head, room, size);
	if ((head & 0xffu) == NT_KIND_INVALID)
		return NT_FRAME_END;
	if (((uintptr_t)payload + off) % 8u != 0)
		return NT_FRAME_MISALIGNED;
	if (room < 8)
		return NT_FRAME_SHORT;
	uint64_t w0 = __atomic_load_n((const uint64_t *)(const void *)(payload + off),
				      __ATOMIC_ACQUIRE);
	return nt_record_frame(w0, room, 0, size);
}

/* Records that hold a chunk at the top level: a Chunk, or a CompressedChunk (whose header
 * copy is checked by nt_zchunk_check). */
static inline int nt_kind_is_chunk(unsigned kind)
{
	return kind == NT_KIND_CHUNK || kind == NT_KIND_ZCHUNK;
}

/* The "next record" step at the top level of an archive of `size` bytes: frames the record
 * at `off` (< size; 8-aligned, as every top-level record is), large records admitted, and
 * sets *bytes. Word 0 is read only when 8 bytes are there. */
static inline nt_frame nt_top_record_frame(const uint8_t *data, uint64_t size, uint64_t off,
					   uint64_t *bytes)
{
	uint64_t room = size - off;
	return nt_record_frame(room >= 8 ? nt_record_word_at(data + off) : 0, room, 1, bytes);
}

/* Is the framed record at `rec` (inside a chunk) an event? */
static inline int nt_record_is_event_at(const uint8_t *rec)
{
	uint32_t head = nt_record_head_at(rec);
	return nt_kind_is_event(nt_head_is_compact(head) ? nt_compact_kind(head) : (head & 0xffu));
}

/* A chunk's clock and ordinal, advanced record by record: the one rule for what a record
 * does to them (an event, compact or not, adds its delta and takes an ordinal; a Timestamp
 * escape sets the clock; everything else leaves both alone). `rec` holds `size` framed
 * bytes. */
typedef struct nt_chunk_clock {
	uint64_t ticks;
	uint64_t events;
} nt_chunk_clock;

static inline void nt_chunk_clock_step(nt_chunk_clock *c, const uint8_t *rec, uint64_t size)
{
	uint32_t head = nt_record_head_at(rec);
	if (nt_head_is_compact(head)) {
		if (nt_kind_is_event(nt_compact_kind(head))) {
			c->ticks += nt_compact_delta(head);
			c->events++;
		}
		return;
	}
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
