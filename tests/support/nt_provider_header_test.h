/*
 * nt_provider_header_test.h - the Arena-layout header a provider writes at the start of the
 * buffer a trace manager handed it (writer/core/nt_arena.c writes it for a real provider),
 * for the fake providers of the tests: tests/manager/arena_header.c (the Python ones) and
 * tests/fuzz/fuzz_wire.c. Uses format/ only, as the manager does.
 */
#ifndef NT_PROVIDER_HEADER_TEST_H
#define NT_PROVIDER_HEADER_TEST_H

#include <string.h>

#include "format/nt_archive_header.h"
#include "format/nt_arena_layout.h"

/* *info for an arena of layout `l` in buffering mode `mode` of process `pid`, ready for
 * nt_header_encode() into the first NT_ARENA_HEADER_BYTES of the buffer. */
static inline void test_provider_header(nt_archive_info *info, const nt_arena_layout *l,
					int mode, uint32_t pid)
{
	memset(info, 0, sizeof(*info));
	info->format_major = NT_FORMAT_MAJOR;
	info->format_minor = NT_FORMAT_MINOR;
	info->ticks_per_second = 1000000000;
	info->pid = pid;
	info->buffering_mode = (uint8_t)mode;
	info->layout = NT_LAYOUT_ARENA;
	info->data_offset = NT_ARENA_HEADER_BYTES;
	info->arena_size = l->map_size;
	info->durable_size = l->durable_size;
	info->chunk_size = l->chunk_size;
	info->chunks_per_half = l->chunks_per_half;
	info->slot_overwritten_offset = l->slot_overwritten_offset;
	info->stream_offset = mode == NT_MODE_STREAMING ? l->map_size : 0;
	info->stream_end = info->stream_offset;
}

#endif /* NT_PROVIDER_HEADER_TEST_H */
