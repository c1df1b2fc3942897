/*
 * nt_archive_header.h - the ArchiveHeader table at the start of every archive, in C.
 *
 * The header is a real size-prefixed FlatBuffer (schema/nanotrace.fbs, root ArchiveHeader,
 * file identifier "NTRC"). The writer encodes it and the reader verifies and decodes it by
 * hand, because neither library may depend on C++ and flatcc is not packaged in Debian;
 * tests/layout_test.cpp checks the field ids below against flatc's generated VT_ constants
 * and verifies a writer-made header with flatc's own Verifier.
 *
 * Field id N lives at vtable offset 4 + 2 * N. Fields are only ever appended.
 */
#ifndef NT_ARCHIVE_HEADER_H
#define NT_ARCHIVE_HEADER_H

#include <stdint.h>

enum nt_header_field {
	NT_HDR_FORMAT_MAJOR = 0,
	NT_HDR_FORMAT_MINOR,
	NT_HDR_PRODUCER,
	NT_HDR_CLOCK_SOURCE,
	NT_HDR_TICKS_PER_SECOND,
	NT_HDR_START_TICKS,
	NT_HDR_START_MONOTONIC_NS,
	NT_HDR_START_REALTIME_NS,
	NT_HDR_FINISH_TICKS,
	NT_HDR_FINISH_MONOTONIC_NS,
	NT_HDR_FINISH_REALTIME_NS,
	NT_HDR_PID,
	NT_HDR_PROCESS_NAME,
	NT_HDR_BUFFERING_MODE,
	NT_HDR_ARENA_SIZE,
	NT_HDR_DURABLE_SIZE,
	NT_HDR_CHUNK_SIZE,
	NT_HDR_CHUNKS_PER_HALF,
	NT_HDR_FINAL_STATE,
	NT_HDR_EVENTS_WRITTEN,
	NT_HDR_EVENTS_DROPPED,
	NT_HDR_EVENTS_OVERWRITTEN,
	NT_HDR_WRAPS,
	NT_HDR_DURABLE_DROPPED,
	NT_HDR_CHUNKS_CLAIMED,
	NT_HDR_LAYOUT,
	NT_HDR_DATA_OFFSET,
	NT_HDR_ENDED_BY,
	NT_HDR_END_SIGNAL,
	NT_HDR_DROPPED_ROLLING_FULL,
	NT_HDR_DROPPED_DURABLE_FULL,
	NT_HDR_DROPPED_STOPPED,
	NT_HDR_STREAM_OFFSET,
	NT_HDR_BUFFERS_SAVED,
	NT_HDR_STREAM_END,
	NT_HDR_FIELD_COUNT
};

#define NT_HDR_VTABLE_OFFSET(field) (4u + 2u * (unsigned)(field))

/* Byte width of each field, in field-id order; 0 marks a string (a uoffset to a FlatBuffers
 * string). Plain positional initializers so C++ (the layout test) can include this too. */
static const uint8_t nt_header_field_width[NT_HDR_FIELD_COUNT] = {
	2, /* format_major */        2, /* format_minor */        0, /* producer */
	1, /* clock_source */        8, /* ticks_per_second */    8, /* start_ticks */
	8, /* start_monotonic_ns */  8, /* start_realtime_ns */   8, /* finish_ticks */
	8, /* finish_monotonic_ns */ 8, /* finish_realtime_ns */  4, /* pid */
	0, /* process_name */        1, /* buffering_mode */      8, /* arena_size */
	8, /* durable_size */        4, /* chunk_size */          4, /* chunks_per_half */
	1, /* final_state */         8, /* events_written */      8, /* events_dropped */
	8, /* events_overwritten */  8, /* wraps */               8, /* durable_dropped */
	8, /* chunks_claimed */       1, /* layout */              8, /* data_offset */
	1, /* ended_by */             1, /* end_signal */          8, /* dropped_rolling_full */
	8, /* dropped_durable_full */ 8, /* dropped_stopped */      8, /* stream_offset */
	8, /* buffers_saved */        8, /* stream_end */
};

/* Longest producer or process name the writer stores and the reader accepts. */
#define NT_HDR_MAX_STRING 255u

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
} nt_archive_info;

/* Size of the header region of an Arena-layout file: the durable region starts here, page
 * aligned, and the header FlatBuffer (always smaller) is updated in place. */
#define NT_ARENA_HEADER_BYTES 4096u

#endif /* NT_ARCHIVE_HEADER_H */
