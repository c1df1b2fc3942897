/* nt_zchunk_test.h - tests only: a copy of a plain Stream-layout archive whose Chunk records
 * are CompressedChunk records (format/nt_zchunk.h's encoder, as the saver uses it), so one
 * recording gives both forms of the same events. Link nt_format_code. */
#ifndef NT_ZCHUNK_TEST_H
#define NT_ZCHUNK_TEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/nt_format.h"
#include "format/nt_zchunk.h"

/* First record of a Stream-layout archive: after the size-prefixed header, 8-aligned. */
static inline size_t nt_test_records_start(const uint8_t *a)
{
	uint32_t prefix;
	memcpy(&prefix, a, 4);
	return ((size_t)prefix + 4 + 7) & ~(size_t)7;
}

/* Size of the top-level record at `off` (0 when malformed). */
static inline size_t nt_test_top_size(const uint8_t *a, size_t n, size_t off)
{
	if (off + 8 > n)
		return 0;
	uint32_t size = a[off + 1] ? a[off + 1] * 8u : 0;
	if (size == 0)
		memcpy(&size, a + off + 4, 4);
	return size >= 8 && size % 8 == 0 && size <= n - off ? size : 0;
}

/* The compressed copy (malloc'd, *out_n bytes; *zchunks compressed chunks), NULL when memory
 * runs out or the archive does not frame. Chunks that would not shrink stay plain. */
__attribute__((unused)) static uint8_t *nt_test_compress_archive(const uint8_t *a, size_t n,
								   int level, size_t *out_n,
								   size_t *zchunks)
{
	uint8_t *out = (uint8_t *)malloc(n);
	nt_zchunk_encoder *e = nt_zchunk_encoder_new(level);
	size_t off = nt_test_records_start(a), o = off, size;
	*zchunks = 0;
	if (out == NULL || e == NULL || off > n) {
		free(out);
		nt_zchunk_encoder_free(e);
		return NULL;
	}
	memcpy(out, a, off);
	for (; off < n; off += size) {
		size = nt_test_top_size(a, n, off);
		if (size == 0) {
			free(out);
			nt_zchunk_encoder_free(e);
			return NULL;
		}
		size_t z = a[off] == NT_KIND_CHUNK ? nt_zchunk_encode(e, a + off, size, out + o, size) : 0;
		if (z == 0)
			memcpy(out + o, a + off, size);
		*zchunks += z != 0;
		o += z ? z : size;
	}
	nt_zchunk_encoder_free(e);
	*out_n = o;
	return out;
}

#endif /* NT_ZCHUNK_TEST_H */
