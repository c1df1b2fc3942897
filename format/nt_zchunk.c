/*
 * nt_zchunk.c - makes CompressedChunk records and turns them back into chunks (nt_zchunk.h).
 *
 * Chunks are compressed as 4 byte lanes (codec ZstdLanes4, nt_lanes.h); frames of plain
 * records (codec Zstd, format 2.0 and 1.1 archives) still decode.
 *
 * A frame carries its content size (so a reader checks it against the header before
 * decompressing) and zstd's 32-bit content checksum (so a bit flip in the compressed bytes is
 * damage found here, not wrong events delivered later).
 */
#include <stdlib.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode (zstd >= 1.4.5) */
#include <zstd.h>

#include "nt_lanes.h"
#include "nt_record.h"
#include "nt_zchunk.h"

#define HEAD ((uint32_t)sizeof(nt_zchunk_record))
#define CHUNK_HEAD ((uint32_t)sizeof(nt_chunk_header))

/* Each holds the lanes of one chunk's records (nt_lanes.h), so neither allocates per chunk.
 * raw_literals: the literal mode the encoder's context is set to (see nt_zchunk_encode). */
struct nt_zchunk_encoder {
	ZSTD_CCtx *cctx;
	int raw_literals;
	uint8_t lanes[NT_MAX_ZCHUNK_BYTES];
};

/* Why a small chunk's literals are stored, not Huffman-coded: decoding a Huffman table costs
 * zstd about 2.5-3 us whatever the chunk's size (1.5.4; the chunk of a short process, 400
 * bytes of records, then decodes in a fifth of that), while the table saves a few dozen
 * bytes on such a chunk (416 bytes of records: 176 bytes compressed, 201 without). Every
 * thread's last chunk is a small one, and a bundle of short processes is made of them; a
 * full chunk keeps its table, which saves more (16 KiB: 1,076 bytes, 1,238 without). */
#define RAW_LITERALS_BELOW 4096u

/* The encoder's literal mode for `records` bytes. Should zstd refuse it, the chunk is
 * compressed in the mode the context has: either makes a valid frame. */
static void set_literal_mode(nt_zchunk_encoder *e, size_t records)
{
	int raw = records < RAW_LITERALS_BELOW;
	if (raw == e->raw_literals)
		return;
	if (!ZSTD_isError(ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_literalCompressionMode,
						 raw ? ZSTD_ps_disable : ZSTD_ps_auto)))
		e->raw_literals = raw;
}

struct nt_zchunk_decoder {
	ZSTD_DCtx *dctx;
	uint8_t lanes[NT_MAX_ZCHUNK_BYTES];
};

int nt_zchunk_level_ok(int level)
{
	return level >= NT_ZCHUNK_LEVEL_MIN && level <= NT_ZCHUNK_LEVEL_MAX;
}

nt_zchunk_encoder *nt_zchunk_encoder_new(int level)
{
	if (level == 0 || !nt_zchunk_level_ok(level))
		return NULL;
	nt_zchunk_encoder *e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->cctx = ZSTD_createCCtx();
	if (e->cctx == NULL ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_contentSizeFlag, 1))) {
		nt_zchunk_encoder_free(e);
		return NULL;
	}
	return e;
}

void nt_zchunk_encoder_free(nt_zchunk_encoder *e)
{
	if (e == NULL)
		return;
	ZSTD_freeCCtx(e->cctx);
	free(e);
}

size_t nt_zchunk_encode(nt_zchunk_encoder *e, const uint8_t *piece, size_t piece_len,
			uint8_t *out, size_t cap)
{
	nt_chunk_header h;
	if (e == NULL || piece_len < CHUNK_HEAD + 8 || piece_len > NT_MAX_ZCHUNK_BYTES ||
	    cap < HEAD + 8)
		return 0;
	memcpy(&h, piece, sizeof(h));
	if (h.kind != NT_KIND_CHUNK || h.size_bytes != piece_len)
		return 0;
	const size_t records = piece_len - CHUNK_HEAD;
	if (records % 4 != 0)
		return 0; /* no saver makes one (pieces end on a word) */
	nt_lanes_split4(e->lanes, piece + CHUNK_HEAD, records);
	set_literal_mode(e, records);
	size_t room = (cap - HEAD) & ~(size_t)7; /* the padded frame must fit */
	size_t n = ZSTD_compress2(e->cctx, out + HEAD, room, e->lanes, records);
	if (ZSTD_isError(n))
		return 0; /* dstSize_tooSmall: not smaller than the piece */
	size_t total = (HEAD + n + 7) & ~(size_t)7;
	if (total > cap || total >= piece_len)
		return 0;
	memset(out + HEAD + n, 0, total - HEAD - n);
	nt_zchunk_record z;
	memset(&z, 0, sizeof(z));
	z.kind = NT_KIND_ZCHUNK;
	z.codec = NT_ZCHUNK_CODEC;
	z.size_bytes = (uint32_t)total;
	z.chunk = h;
	z.compressed_bytes = (uint32_t)n;
	memcpy(out, &z, sizeof(z));
	return total;
}

const char *nt_zchunk_check(const uint8_t *rec, uint64_t size, nt_chunk_header *chunk)
{
	nt_zchunk_record z;
	if (size < HEAD)
		return "compressed chunk is shorter than its header";
	memcpy(&z, rec, sizeof(z));
	if (z.kind != NT_KIND_ZCHUNK || z.size_words != 0 || z.size_bytes != size)
		return "compressed chunk is not framed as a large record";
	if (z.codec != NT_CODEC_ZSTD && z.codec != NT_CODEC_ZSTD_LANES4)
		return "compressed chunk uses a codec this reader does not support";
	if (z.compressed_bytes == 0 || ((uint64_t)HEAD + z.compressed_bytes + 7) / 8 * 8 != size)
		return "compressed chunk's frame length disagrees with its record size";
	if (z.chunk.kind != NT_KIND_CHUNK || z.chunk.size_words != 0 ||
	    z.chunk.size_bytes < CHUNK_HEAD + 8 || z.chunk.size_bytes % 8 != 0 ||
	    z.chunk.size_bytes > NT_MAX_ZCHUNK_BYTES)
		return "compressed chunk's header declares an impossible chunk size";
	if (chunk != NULL)
		*chunk = z.chunk;
	return NULL;
}

nt_zchunk_decoder *nt_zchunk_decoder_new(void)
{
	nt_zchunk_decoder *d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->dctx = ZSTD_createDCtx();
	/* A frame of a 64 KiB chunk needs no larger window: refuse frames that ask for one. */
	if (d->dctx == NULL ||
	    ZSTD_isError(ZSTD_DCtx_setParameter(d->dctx, ZSTD_d_windowLogMax, 17))) {
		nt_zchunk_decoder_free(d);
		return NULL;
	}
	return d;
}

void nt_zchunk_decoder_free(nt_zchunk_decoder *d)
{
	if (d == NULL)
		return;
	ZSTD_freeDCtx(d->dctx);
	free(d);
}

const char *nt_zchunk_check_records(const uint8_t *chunk)
{
	nt_chunk_header h;
	memcpy(&h, chunk, sizeof(h));
	const uint8_t *p = chunk + CHUNK_HEAD;
	const uint32_t len = h.size_bytes - CHUNK_HEAD, event_count = h.event_count;
	uint32_t off = 0, events = 0;
	uint64_t size;
	while (off < len) {
		nt_frame f = nt_chunk_record_frame(p + off, len - off, &size);
		if (f == NT_FRAME_END)
			break; /* a piece ending in a 4-byte gap (nt_arena_saver.c) */
		if (f != NT_FRAME_OK)
			return "compressed chunk decompresses to records that are not framed";
		events += nt_record_is_event_at(p + off);
		off += (uint32_t)size;
	}
	if (events != event_count)
		return NT_ZCHUNK_COUNT_LIE;
	return NULL;
}

const char *nt_zchunk_decode(nt_zchunk_decoder *d, const uint8_t *rec, uint64_t size,
			     uint8_t *out, size_t cap)
{
	nt_chunk_header h;
	const char *why = nt_zchunk_check(rec, size, &h);
	if (why != NULL)
		return why;
	if (d == NULL || cap < h.size_bytes)
		return "no room to decompress a compressed chunk";
	const uint8_t *src = rec + HEAD;
	const uint32_t srclen = ((const nt_zchunk_record *)(const void *)rec)->compressed_bytes;
	const uint32_t want = h.size_bytes - CHUNK_HEAD;
	unsigned long long declared = ZSTD_getFrameContentSize(src, srclen);
	if (declared == ZSTD_CONTENTSIZE_ERROR)
		return "compressed chunk holds no valid zstd frame";
	if (declared != want)
		return "compressed chunk's frame declares another size than its header";
	size_t framed = ZSTD_findFrameCompressedSize(src, srclen);
	if (ZSTD_isError(framed) || framed != srclen)
		return "compressed chunk's frame does not end where its length says";
	const int lanes = ((const nt_zchunk_record *)(const void *)rec)->codec == NT_CODEC_ZSTD_LANES4;
	size_t n = ZSTD_decompressDCtx(d->dctx, lanes ? d->lanes : out + CHUNK_HEAD, want, src,
				       srclen);
	if (ZSTD_isError(n))
		return "compressed chunk's frame is damaged";
	if (n != want)
		return "compressed chunk's frame decompresses to another size than declared";
	if (lanes)
		nt_lanes_join4(out + CHUNK_HEAD, d->lanes, want); /* want % 8 == 0 (checked) */
	memcpy(out, &h, sizeof(h));
	return NULL;
}
