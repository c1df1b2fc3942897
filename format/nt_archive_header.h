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
	NT_HDR_FIELD_COUNT
};

#define NT_HDR_VTABLE_OFFSET(field) (4u + 2u * (unsigned)(field))

/* Byte width of each scalar field; 0 marks a string (a uoffset to a FlatBuffers string). */
static const uint8_t nt_header_field_width[NT_HDR_FIELD_COUNT] = {
	[NT_HDR_FORMAT_MAJOR] = 2,	   [NT_HDR_FORMAT_MINOR] = 2,
	[NT_HDR_PRODUCER] = 0,		   [NT_HDR_CLOCK_SOURCE] = 1,
	[NT_HDR_TICKS_PER_SECOND] = 8,	   [NT_HDR_START_TICKS] = 8,
	[NT_HDR_START_MONOTONIC_NS] = 8,   [NT_HDR_START_REALTIME_NS] = 8,
	[NT_HDR_FINISH_TICKS] = 8,	   [NT_HDR_FINISH_MONOTONIC_NS] = 8,
	[NT_HDR_FINISH_REALTIME_NS] = 8,   [NT_HDR_PID] = 4,
	[NT_HDR_PROCESS_NAME] = 0,	   [NT_HDR_BUFFERING_MODE] = 1,
	[NT_HDR_ARENA_SIZE] = 8,	   [NT_HDR_DURABLE_SIZE] = 8,
	[NT_HDR_CHUNK_SIZE] = 4,	   [NT_HDR_CHUNKS_PER_HALF] = 4,
	[NT_HDR_FINAL_STATE] = 1,	   [NT_HDR_EVENTS_WRITTEN] = 8,
	[NT_HDR_EVENTS_DROPPED] = 8,	   [NT_HDR_EVENTS_OVERWRITTEN] = 8,
	[NT_HDR_WRAPS] = 8,		   [NT_HDR_DURABLE_DROPPED] = 8,
	[NT_HDR_CHUNKS_CLAIMED] = 8,
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
} nt_archive_info;

#endif /* NT_ARCHIVE_HEADER_H */
