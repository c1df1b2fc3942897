/*
 * nt_stream_header_test.h - the smallest Stream-layout header a reader opens (this format's
 * version, a nanosecond clock, a plain chunk geometry), for tests that forge an archive of
 * a header alone and set the fields they are about (tests/writer/test_save_failure.c's
 * counts, tests/ship/test_ship_units.c's processes). Uses format/ only.
 */
#ifndef NT_STREAM_HEADER_TEST_H
#define NT_STREAM_HEADER_TEST_H

#include <string.h>

#include "format/nt_archive_header.h"
#include "format/nt_format.h"

static inline void test_stream_header(nt_archive_info *info)
{
	memset(info, 0, sizeof(*info));
	info->format_major = NT_FORMAT_MAJOR;
	info->format_minor = NT_FORMAT_MINOR;
	info->ticks_per_second = 1000000000;
	info->chunk_size = 16384;
	info->chunks_per_half = 4;
}

#endif /* NT_STREAM_HEADER_TEST_H */
