/*
 * nt_archive_header.h - the ArchiveHeader table at the start of every archive, in C.
 *
 * The header is a real size-prefixed FlatBuffer (schema/nanotrace.fbs, root ArchiveHeader,
 * file identifier "NTRC"). The writer encodes it and the reader verifies and decodes it by
 * hand, because neither library may depend on C++ and flatcc is not packaged in Debian;
 * tests/format/layout_test.cpp checks the field ids below against flatc's generated VT_ constants
 * and verifies a writer-made header with flatc's own Verifier.
 *
 * NT_HDR_FIELDS is the one list of the table's fields, in field-id order (schema order):
 * the ids, each field's width and its member of nt_archive_info all come from it, so the
 * encoder and the decoder copy fields by table and cannot disagree. Field id N lives at
 * vtable offset 4 + 2 * N. Fields are only ever appended.
 */
#ifndef NT_ARCHIVE_HEADER_H
#define NT_ARCHIVE_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "nt_format.h"

/* Longest producer or process name the writer stores and the reader accepts. */
#define NT_HDR_MAX_STRING 255u

/* X(ID, member of nt_archive_info, width in bytes; 0 = a string, stored as a uoffset) */
#define NT_HDR_FIELDS(X)                                                                   \
	X(FORMAT_MAJOR, format_major, 2)                                                   \
	X(FORMAT_MINOR, format_minor, 2)                                                   \
	X(PRODUCER, producer, 0)                                                           \
	X(CLOCK_SOURCE, clock_source, 1)                                                   \
	X(TICKS_PER_SECOND, ticks_per_second, 8)                                           \
	X(START_TICKS, start_ticks, 8)                                                     \
	X(START_MONOTONIC_NS, start_monotonic_ns, 8)                                       \
	X(START_REALTIME_NS, start_realtime_ns, 8)                                         \
	X(FINISH_TICKS, finish_ticks, 8)                                                   \
	X(FINISH_MONOTONIC_NS, finish_monotonic_ns, 8)                                     \
	X(FINISH_REALTIME_NS, finish_realtime_ns, 8)                                       \
	X(PID, pid, 4)                                                                     \
	X(PROCESS_NAME, process_name, 0)                                                   \
	X(BUFFERING_MODE, buffering_mode, 1)                                               \
	X(ARENA_SIZE, arena_size, 8)                                                       \
	X(DURABLE_SIZE, durable_size, 8)                                                   \
	X(CHUNK_SIZE, chunk_size, 4)                                                       \
	X(CHUNKS_PER_HALF, chunks_per_half, 4)                                             \
	X(FINAL_STATE, final_state, 1)                                                     \
	X(EVENTS_WRITTEN, events_written, 8)                                               \
	X(EVENTS_DROPPED, events_dropped, 8)                                               \
	X(EVENTS_OVERWRITTEN, events_overwritten, 8)                                       \
	X(WRAPS, wraps, 8)                                                                 \
	X(DURABLE_DROPPED, durable_dropped, 8)                                             \
	X(CHUNKS_CLAIMED, chunks_claimed, 8)                                               \
	X(LAYOUT, layout, 1)                                                               \
	X(DATA_OFFSET, data_offset, 8)                                                     \
	X(ENDED_BY, ended_by, 1)                                                           \
	X(END_SIGNAL, end_signal, 1)                                                       \
	X(DROPPED_ROLLING_FULL, dropped_rolling_full, 8)                                   \
	X(DROPPED_DURABLE_FULL, dropped_durable_full, 8)                                   \
	X(DROPPED_STOPPED, dropped_stopped, 8)                                             \
	X(STREAM_OFFSET, stream_offset, 8)                                                 \
	X(BUFFERS_SAVED, buffers_saved, 8)                                                 \
	X(STREAM_END, stream_end, 8)                                                       \
	X(STREAM_ORDERED, stream_ordered, 1)                                               \
	X(VALUES_TRUNCATED, values_truncated, 8)                                           \
	X(SLOT_OVERWRITTEN_OFFSET, slot_overwritten_offset, 8)                             \
	X(COMPRESSION, compression, 2)                                                     \
	X(COMPRESSION_LEVEL, compression_level, 4)                                         \
	X(SAVE_ERRNO, save_errno, 4)                                                       \
	X(DROPPED_UNSAVED, dropped_unsaved, 8)                                             \
	X(CHILDREN_FORKED, children_forked, 8)                                             \
	X(FORKED_FROM, forked_from, 4)                                                     \
	X(BLOCKING_TIMEOUT_US, blocking_timeout_us, 8)                                     \
	X(BLOCKED_WAITS, blocked_waits, 8)                                                 \
	X(BLOCKED_TIMEOUTS, blocked_timeouts, 8)                                           \
	X(BLOCKED_NS, blocked_ns, 8)                                                       \
	X(TRACEPARENT, traceparent, 0)

enum nt_header_field {
#define NT_HDR_ID_(id, member, width) NT_HDR_##id,
	NT_HDR_FIELDS(NT_HDR_ID_)
#undef NT_HDR_ID_
	NT_HDR_FIELD_COUNT
};

#define NT_HDR_VTABLE_OFFSET(field) (4u + 2u * (unsigned)(field))

/* The decoded header: what the writer encodes and the reader delivers. */
typedef struct nt_archive_info {
	uint16_t format_major;
	uint16_t format_minor;
	char producer[NT_HDR_MAX_STRING + 1];
	uint8_t clock_source;
	uint64_t ticks_per_second;
	uint64_t start_ticks;
	uint64_t start_monotonic_ns;
	uint64_t start_realtime_ns;
	uint64_t finish_ticks;
	uint64_t finish_monotonic_ns;
	uint64_t finish_realtime_ns;
	uint32_t pid;
	char process_name[NT_HDR_MAX_STRING + 1];
	uint8_t buffering_mode;
	uint64_t arena_size;
	uint64_t durable_size;
	uint32_t chunk_size;
	uint32_t chunks_per_half;
	uint8_t final_state;
	uint64_t events_written;
	uint64_t events_dropped;
	uint64_t events_overwritten;
	uint64_t wraps;
	uint64_t durable_dropped;
	uint64_t chunks_claimed;
	uint8_t layout;
	uint64_t data_offset;
	uint8_t ended_by;
	uint8_t end_signal;
	uint64_t dropped_rolling_full;
	uint64_t dropped_durable_full;
	uint64_t dropped_stopped;
	uint64_t stream_offset;
	uint64_t buffers_saved;
	uint64_t stream_end;
	uint8_t stream_ordered;
	uint64_t values_truncated;
	uint64_t slot_overwritten_offset; /* Arena layout: the per-slot overwrite counters */
	uint16_t compression;             /* NT_CODEC_*: the codec of CompressedChunk records */
	int32_t compression_level;        /* the level the saver used (information only) */
	uint32_t save_errno;              /* why saving stopped: errno of the first failed
					     write of the archive, 0 = none */
	uint64_t dropped_unsaved;         /* events made but not saved because saving stopped */
	uint64_t children_forked;         /* fork()s while recording: each child's own archive */
	uint32_t forked_from;             /* a fork() child's archive: the parent's pid, else 0 */
	uint64_t blocking_timeout_us;     /* streaming: a writer's longest wait for the saver */
	uint64_t blocked_waits;           /* waits for the saver (every thread's) */
	uint64_t blocked_timeouts;        /* waits that ended in a drop */
	uint64_t blocked_ns;              /* CLOCK_MONOTONIC ns spent waiting */
	char traceparent[NT_HDR_MAX_STRING + 1]; /* the W3C TRACEPARENT the process was
						    started with (runtime/nt_traceparent.h
						    accepted it), "" when none */
} nt_archive_info;

/* Every scalar member is exactly as wide as its field, so fields copy byte for byte
 * (little-endian, see nt_format.h); every string member is a NUL-terminated array. */
#define NT_HDR_CHECK_(id, member, width)                                                   \
	NT_STATIC_ASSERT((width) == 0 ? sizeof(((nt_archive_info *)0)->member) ==          \
						NT_HDR_MAX_STRING + 1                      \
				      : sizeof(((nt_archive_info *)0)->member) == (width),         \
			 "nt_archive_info." #member " does not match its header field");
NT_HDR_FIELDS(NT_HDR_CHECK_)
#undef NT_HDR_CHECK_

/* Byte width of each field, by field id; 0 marks a string. */
static const uint8_t nt_header_field_width[NT_HDR_FIELD_COUNT] = {
#define NT_HDR_WIDTH_(id, member, width) (width),
	NT_HDR_FIELDS(NT_HDR_WIDTH_)
#undef NT_HDR_WIDTH_
};

/* Offset of each field's member in nt_archive_info, by field id. */
static const uint16_t nt_header_field_member[NT_HDR_FIELD_COUNT] = {
#define NT_HDR_MEMBER_(id, member, width) (uint16_t)offsetof(nt_archive_info, member),
	NT_HDR_FIELDS(NT_HDR_MEMBER_)
#undef NT_HDR_MEMBER_
};

/* Size of the header region of an Arena-layout file: the durable region starts here, page
 * aligned, and the header FlatBuffer (always smaller) is updated in place. */
#define NT_ARENA_HEADER_BYTES 4096u

#endif /* NT_ARCHIVE_HEADER_H */
