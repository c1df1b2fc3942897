/*
 * nt_saver_test.h - the trace manager's side of a saver, for tests (tests/format): an output
 * in memory, and what a manager makes of it, the saved records behind a Stream-layout header
 * made from the arena's own header (decoded from a copy, re-encoded), read back.
 */
#ifndef NT_SAVER_TEST_H
#define NT_SAVER_TEST_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/nt_archive_header_decode.h"
#include "format/nt_archive_header_encode.h"
#include "runtime/nt_arena_saver.h"
#include "nt_test_util.h"

typedef struct test_sink {
	uint8_t *data;
	size_t len, cap;
	int keep;          /* keep the bytes (else only count them) */
	int fail_with;     /* append returns this errno */
	unsigned appends, commits;
	uint64_t committed_end;
} test_sink;

static int test_sink_append(void *ctx, const void *d, size_t n)
{
	test_sink *s = (test_sink *)ctx;
	s->appends++;
	if (s->fail_with)
		return s->fail_with;
	if (s->keep && n > 0) {
		if (s->len + n > s->cap) {
			size_t cap = (s->len + n) * 2;
			uint8_t *p = (uint8_t *)realloc(s->data, cap);
			if (p == NULL)
				return ENOMEM;
			s->data = p;
			s->cap = cap;
		}
		memcpy(s->data + s->len, d, n);
	}
	s->len += n;
	return 0;
}

static void test_sink_commit(void *ctx, uint64_t end)
{
	test_sink *s = (test_sink *)ctx;
	s->commits++;
	s->committed_end = end;
}

__attribute__((unused)) static nt_saver_output test_sink_output(test_sink *s)
{
	nt_saver_output out = { test_sink_append, test_sink_commit, s };
	return out;
}

/* A Stream-layout header, for records that follow it, made from the arena header at `map`
 * (decoded from a copy, as a manager does: the arena may change under it) with
 * `events` written; its length, or 0 when the arena header does not decode. */
static size_t test_stream_header(const uint8_t *map, uint64_t events, uint8_t out[1024])
{
	uint8_t copy[NT_ARENA_HEADER_BYTES];
	memcpy(copy, map, sizeof(copy));
	nt_archive_info info;
	char why[200];
	uint64_t where;
	if (nt_header_decode(copy, sizeof(copy), &info, why, sizeof(why), &where) == 0)
		return 0;
	info.layout = NT_LAYOUT_STREAM;
	info.slot_overwritten_offset = 0;
	info.stream_offset = 0;
	info.stream_end = 0;
	info.events_written = events;
	info.data_offset = 0;
	info.data_offset = nt_header_encode(&info, out, 1024, NULL);
	return nt_header_encode(&info, out, 1024, NULL);
}

/* Reads the `len` saved bytes at `data` behind a header made from the arena at `map` into
 * *t (test_read_memory); returns its result, or -1 when the arena header does not decode. */
__attribute__((unused)) static int test_read_saved(const uint8_t *map, uint64_t events,
						   const uint8_t *data, size_t len,
						   nt_order order, test_trace *t)
{
	uint8_t hdr[1024];
	size_t hlen = test_stream_header(map, events, hdr);
	uint8_t *archive = (uint8_t *)malloc(hlen + len + 1);
	if (hlen == 0 || archive == NULL) {
		free(archive);
		memset(t, 0, sizeof(*t));
		return -1;
	}
	memcpy(archive, hdr, hlen);
	if (len > 0)
		memcpy(archive + hlen, data, len);
	int rc = test_read_memory(archive, hlen + len, order, t);
	free(archive);
	return rc;
}

#endif /* NT_SAVER_TEST_H */
