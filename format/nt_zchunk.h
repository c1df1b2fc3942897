/*
 * nt_zchunk.h - CompressedChunk records (nt_format.h's nt_zchunk_record): the one place that
 * makes them from a chunk piece (the saver, trace-import) and the one place that turns them
 * back into a chunk (the reader, tests). format/nt_zchunk.c; built into nt_format_code.
 *
 * The input of the decoder is untrusted: every size is checked against the record and the
 * format's bound NT_MAX_ZCHUNK_BYTES before anything is decompressed, the frame must declare
 * exactly the decompressed size the header gives, fill it exactly, end exactly at
 * compressed_bytes, and hold well-framed records whose events are as many as the header
 * says. Memory: the caller's output buffer; an encoder or decoder holds one codec context (~100
 * KiB; an encoder at a high level far more) and 64 KiB of lanes.
 */
#ifndef NT_ZCHUNK_H
#define NT_ZCHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "nt_format.h"

/* Levels: 0 = store chunks uncompressed; otherwise a zstd level in
 * [NT_ZCHUNK_LEVEL_MIN, NT_ZCHUNK_LEVEL_MAX] (negative = zstd's "fast" levels). */
#define NT_ZCHUNK_LEVEL_MIN (-50)
#define NT_ZCHUNK_LEVEL_MAX 22

/* The level savers use when none is asked for (nanotrace.h's NT_COMPRESSION_DEFAULT, the
 * trace manager's default). */
#define NT_ZCHUNK_LEVEL_DEFAULT 1

/* The codec nt_zchunk_encode writes: what a saver puts in the archive header's compression
 * field when it compresses. The decoder also reads NT_CODEC_ZSTD (archives before 2.1). */
#define NT_ZCHUNK_CODEC NT_CODEC_ZSTD_LANES4

/* Is `level` one a saver accepts (0 included)? */
int nt_zchunk_level_ok(int level);

typedef struct nt_zchunk_encoder nt_zchunk_encoder;

/* An encoder at `level` (nt_zchunk_level_ok, not 0). NULL when memory runs out or the
 * level is refused. One thread at a time; reuse it for every piece. */
nt_zchunk_encoder *nt_zchunk_encoder_new(int level);
void nt_zchunk_encoder_free(nt_zchunk_encoder *e); /* NULL is ignored */

/* Compresses the chunk piece at `piece` (its 40-byte header, then records; `piece_len` =
 * header.size_bytes bytes, at most NT_MAX_ZCHUNK_BYTES) into a CompressedChunk record at
 * `out` (`cap` bytes). Returns the record's size, or 0 when it would not fit in `cap` (pass
 * cap = piece_len: then 0 means "not smaller, store the piece as it is") or the piece is
 * not one. Cost: one zstd compression of piece_len - 40 bytes. */
size_t nt_zchunk_encode(nt_zchunk_encoder *e, const uint8_t *piece, size_t piece_len,
			uint8_t *out, size_t cap);

/* Checks the CompressedChunk record at `rec` (`size` bytes, as framed by nt_record_frame)
 * without decompressing: framing, codec, the chunk header copy and its size bound. Returns
 * NULL, or what is wrong. *chunk (may be NULL) gets the chunk header copy. O(1). */
const char *nt_zchunk_check(const uint8_t *rec, uint64_t size, nt_chunk_header *chunk);

typedef struct nt_zchunk_decoder nt_zchunk_decoder;

nt_zchunk_decoder *nt_zchunk_decoder_new(void); /* NULL when memory runs out */
void nt_zchunk_decoder_free(nt_zchunk_decoder *d); /* NULL is ignored */

/* Turns the CompressedChunk record at `rec` (`size` bytes) back into the chunk it holds:
 * into `out` (`cap` bytes, at least the header's chunk.size_bytes; NT_MAX_ZCHUNK_BYTES
 * always suffices) go the chunk header, then the decompressed records: exactly as many
 * bytes as the header says. Returns NULL, or what is wrong (nothing in `out` is then
 * meaningful). The records themselves are not walked here: a reader frames them as it
 * decodes them and compares its event count with the header's at the chunk's end (the
 * check nt_zchunk_check_records makes in one pass). Cost: one decompression of at most
 * NT_MAX_ZCHUNK_BYTES. */
const char *nt_zchunk_decode(nt_zchunk_decoder *d, const uint8_t *rec, uint64_t size,
			     uint8_t *out, size_t cap);

/* The chunk nt_zchunk_decode made at `chunk`: are its records framed to its end, and as
 * many events as its header says? NULL, or what is wrong. Cost: one walk of the records. */
const char *nt_zchunk_check_records(const uint8_t *chunk);

/* What a reader reports when a decompressed chunk holds another number of events than its
 * header says. */
#define NT_ZCHUNK_COUNT_LIE "compressed chunk's event count disagrees with the records inside"

#endif /* NT_ZCHUNK_H */
