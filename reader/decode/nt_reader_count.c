/*
 * nt_reader_count.c - nt_reader_count_records(): every record of an archive, or of each
 * section of a many-process reader, by kind, the records that carry no event included
 * (timestamps, padding, chunk headers, compressed chunks), by the one framing of
 * format/nt_record.h. For --stats: what the archive is made of.
 */
#include <stdlib.h>

#include "nt_reader_internal.h"

/* Inside a chunk at `data` + off: the records that carry no event (timestamps, padding),
 * by the framing. */
static void count_in_chunk(const uint8_t *data, uint64_t off, uint64_t end, uint64_t *counts)
{
	uint64_t p = off + sizeof(nt_chunk_header), rec;
	counts[NT_KIND_CHUNK]++;
	while (nt_chunk_record_frame(data + p, end - p, &rec) == NT_FRAME_OK) {
		uint32_t head = nt_record_head_at(data + p);
		unsigned kind = nt_head_is_compact(head) ? nt_compact_kind(head) : data[p];
		if (!nt_kind_is_known_event(kind))
			counts[kind]++; /* no event, or one of a kind this reader does not know */
		p += rec;
	}
}

/* A compressed chunk counts as a CompressedChunk and, when it decompresses, as the chunk it
 * holds. */
typedef struct zcount {
	const nt_reader *top; /* whose kept decoder is taken (nt_reader_decoder.c) */
	nt_zchunk_decoder *dec;
	uint8_t *buf;
} zcount;

static void count_zchunk(const nt_reader *r, uint64_t off, uint64_t size, zcount *z,
			 uint64_t *counts)
{
	counts[NT_KIND_ZCHUNK]++;
	if (z->buf == NULL && (z->buf = malloc(NT_MAX_ZCHUNK_BYTES)) == NULL)
		return;
	if (z->dec == NULL && (z->dec = nt_reader_decoder_take(z->top)) == NULL)
		return;
	if (nt_zchunk_decode(z->dec, r->data + off, size, z->buf, NT_MAX_ZCHUNK_BYTES) == NULL)
		count_in_chunk(z->buf, 0, ((const nt_chunk_header *)(const void *)z->buf)->size_bytes,
			       counts);
}

/* The top-level records of [off, end): a finished archive, or the stream an arena saved. */
static void count_stream(const nt_reader *r, uint64_t off, uint64_t end, zcount *z,
			 uint64_t *counts)
{
	while (off < end) {
		const char *why;
		uint64_t size = nt_record_size(r, off, &why);
		if (size == 0) {
			off = nt_resync(r, off);
			continue;
		}
		if (nt_kind_is_chunk(r->data[off]) && nt_chunk_header_ok(r, off, size, &why)) {
			if (r->data[off] == NT_KIND_ZCHUNK)
				count_zchunk(r, off, size, z, counts);
			else
				count_in_chunk(r->data, off, off + size, counts);
		} else {
			counts[r->data[off]]++;
		}
		off += size;
	}
}

/* Wherever the layout keeps records. An arena image holds its durable records in the
 * durable region (up to the first zero word) and its chunks in slots, which is where the
 * open found them: the bytes between are no record stream. */
static void count_archive(const nt_reader *r, zcount *z, uint64_t counts[256])
{
	if (r->arena) {
		uint64_t off = r->info.data_offset, end = off + r->info.durable_size;
		while (off + 8 <= end && r->data[off] != NT_KIND_INVALID) {
			const char *why;
			uint64_t size = nt_record_size(r, off, &why);
			if (size == 0 || size > end - off)
				break;
			counts[r->data[off]]++;
			off += size;
		}
		for (uint32_t i = 0; i < r->nchunks; i++)
			count_in_chunk(r->data, r->chunks[i].offset,
				       r->chunks[i].offset + r->chunk_size, counts);
	}
	if (!r->arena || r->tail)
		count_stream(r, r->records_start, r->size, z, counts);
}

/* One archive, or every section of a many-process reader that opened, with the reader's
 * one decoder and one buffer for all (a decoder per section cost a 20,000-process bundle's
 * --stats a quarter of its time in zeroing new ones). */
void nt_count_records(const nt_reader *r, uint64_t counts[256])
{
	zcount z = { r, NULL, NULL };
	if (r->many) {
		for (size_t i = 0; i < r->many->nsections; i++)
			if (r->many->sections[i].reader != NULL)
				count_archive(r->many->sections[i].reader, &z, counts);
	} else {
		count_archive(r, &z, counts);
	}
	nt_reader_decoder_give(r, z.dec);
	free(z.buf);
}
