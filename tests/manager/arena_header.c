/*
 * arena_header - the fake providers' helper (tests/manager/test_manager.py): what a real
 * provider writes at the start of its arena, and a decoder for the tests' checks. Uses
 * format/ only, as the manager does.
 *
 *   arena_header encode MODE BUFFER_SIZE CHUNK_SIZE PID NAME   4096 header bytes to stdout
 *   arena_header decode                                        4096 bytes on stdin -> key=value
 *   arena_header layout BUFFER_SIZE CHUNK_SIZE                 the arena layout, key=value
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/nt_archive_header_decode.h"
#include "format/nt_archive_header_encode.h"
#include "format/nt_arena_layout.h"
#include "tests/support/nt_provider_header_test.h"

static int layout_of(const char *size, const char *chunk, nt_arena_layout *l)
{
	if (nt_arena_layout_compute(strtoull(size, NULL, 0), strtoull(chunk, NULL, 0), l) != 0) {
		fprintf(stderr, "arena_header: invalid sizes %s %s\n", size, chunk);
		return -1;
	}
	return 0;
}

static int encode(char **argv)
{
	nt_arena_layout l;
	if (layout_of(argv[1], argv[2], &l) != 0)
		return 1;
	nt_archive_info info;
	test_provider_header(&info, &l, atoi(argv[0]), (uint32_t)strtoul(argv[3], NULL, 0));
	snprintf(info.producer, sizeof(info.producer), "arena_header (test)");
	snprintf(info.process_name, sizeof(info.process_name), "%s", argv[4]);
	static uint8_t block[NT_ARENA_HEADER_BYTES];
	if (nt_header_encode(&info, block, sizeof(block), NULL) == 0)
		return 1;
	return fwrite(block, 1, sizeof(block), stdout) == sizeof(block) ? 0 : 1;
}

static int decode(void)
{
	/* An Arena-layout header block, or the start of a compact archive (shorter). */
	static uint8_t block[NT_ARENA_HEADER_BYTES];
	size_t n = fread(block, 1, sizeof(block), stdin);
	if (n == 0)
		return 1;
	nt_archive_info i;
	char why[256];
	uint64_t where;
	if (nt_header_decode(block, n, &i, why, sizeof(why), &where) == 0) {
		printf("error=%s\n", why);
		return 2;
	}
	printf("pid=%u\nprocess_name=%s\nbuffering_mode=%u\nlayout=%u\ndata_offset=%llu\n"
	       "arena_size=%llu\nchunk_size=%u\nstream_offset=%llu\nstream_end=%llu\n"
	       "events_written=%llu\nevents_dropped=%llu\n",
	       i.pid, i.process_name, i.buffering_mode, i.layout, (unsigned long long)i.data_offset,
	       (unsigned long long)i.arena_size, i.chunk_size, (unsigned long long)i.stream_offset,
	       (unsigned long long)i.stream_end, (unsigned long long)i.events_written,
	       (unsigned long long)i.events_dropped);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 7 && strcmp(argv[1], "encode") == 0)
		return encode(argv + 2);
	if (argc == 2 && strcmp(argv[1], "decode") == 0)
		return decode();
	nt_arena_layout l;
	if (argc == 4 && strcmp(argv[1], "layout") == 0 && layout_of(argv[2], argv[3], &l) == 0) {
		printf("chunk_size=%u\nchunks_per_half=%u\ndurable_size=%llu\nrolling_offset=%llu\n"
		       "map_size=%llu\n", l.chunk_size, l.chunks_per_half,
		       (unsigned long long)l.durable_size, (unsigned long long)l.rolling_offset,
		       (unsigned long long)l.map_size);
		return 0;
	}
	fprintf(stderr, "usage: arena_header encode MODE SIZE CHUNK PID NAME | decode | layout SIZE CHUNK\n");
	return 1;
}
