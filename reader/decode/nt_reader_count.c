/*
 * nt_reader_count.c - nt_reader_count_records(): every record of an archive, or of each
 * section of a many-process reader, by kind, the records that carry no event included
 * (timestamps, padding, chunk headers, compressed chunks), by the one framing of
 * format/nt_record.h. For --stats: what the archive is made of. nt_reader_count_blocked()
 * is the same walk summing the BlockedRecords by their chunk's thread. A stream-order visit
 * that met no damage counts the same records as it goes and keeps the count in the reader
 * (r->counted), which is then the answer: --stats visits and then counts, and each chunk
 * is decompressed once instead of twice.
 */
#include <stdlib.h>

#include "nt_reader_internal.h"

/* What a walk adds to: records by kind, and the BlockedRecords by thread (global index:
 * the section's thread_base added) when `blocked` is set. */
typedef struct tally {
	uint64_t *counts;
	nt_reader_blocked *blocked;
	uint32_t nblocked, thread_base;
	uint64_t blocked_records;
} tally;

/* A BlockedRecord of `size` bytes at `rec` in a chunk of `thread`. */
static void add_blocked(tally *t, const uint8_t *rec, uint64_t size, uint32_t thread)
{
	if (size < sizeof(nt_blocked_record))
		return; /* framed, but too short to hold its fields: skipped as damage is */
	t->blocked_records++;
	uint64_t index = (uint64_t)t->thread_base + thread;
	if (index >= t->nblocked)
		return;
	nt_reader_blocked *b = &t->blocked[index];
	b->waits += nt_load_le32(rec + offsetof(nt_blocked_record, waits));
	b->timeouts += nt_load_le32(rec + offsetof(nt_blocked_record, timeouts));
	b->ns += nt_load_le64(rec + offsetof(nt_blocked_record, blocked_ns));
}

/* Inside a chunk at `data` + off: the records that carry no event (timestamps, padding),
 * by the framing. */
static void count_in_chunk(const uint8_t *data, uint64_t off, uint64_t end, tally *t)
{
	uint64_t p = off + sizeof(nt_chunk_header), rec;
	uint32_t thread = nt_load_le32(data + off + offsetof(nt_chunk_header, thread));
	t->counts[NT_KIND_CHUNK]++;
	while (nt_chunk_record_frame(data + p, end - p, &rec) == NT_FRAME_OK) {
		uint32_t head = nt_record_head_at(data + p);
		unsigned kind = nt_head_is_compact(head) ? nt_compact_kind(head) : data[p];
		if (!nt_kind_is_known_event(kind))
			t->counts[kind]++; /* no event, or one of a kind this reader does not know */
		if (kind == NT_KIND_BLOCKED && t->blocked != NULL)
			add_blocked(t, data + p, rec, thread);
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

static void count_zchunk(const nt_reader *r, uint64_t off, uint64_t size, zcount *z, tally *t)
{
	t->counts[NT_KIND_ZCHUNK]++;
	if (z->buf == NULL && (z->buf = malloc(NT_MAX_ZCHUNK_BYTES)) == NULL)
		return;
	if (z->dec == NULL && (z->dec = nt_reader_decoder_take(z->top)) == NULL)
		return;
	if (nt_zchunk_decode(z->dec, r->data + off, size, z->buf, NT_MAX_ZCHUNK_BYTES) == NULL)
		count_in_chunk(z->buf, 0, ((const nt_chunk_header *)(const void *)z->buf)->size_bytes,
			       t);
}

/* The top-level records of [off, end): a finished archive, or the stream an arena saved. */
static void count_stream(const nt_reader *r, uint64_t off, uint64_t end, zcount *z, tally *t)
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
				count_zchunk(r, off, size, z, t);
			else
				count_in_chunk(r->data, off, off + size, t);
		} else {
			t->counts[r->data[off]]++;
		}
		off += size;
	}
}

/* Wherever the layout keeps records. An arena image holds its durable records in the
 * durable region (up to the first zero word) and its chunks in slots, which is where the
 * open found them: the bytes between are no record stream. */
static void count_archive(const nt_reader *r, zcount *z, tally *t)
{
	if (r->arena) {
		uint64_t off = r->info.data_offset, end = off + r->info.durable_size;
		while (off + 8 <= end && r->data[off] != NT_KIND_INVALID) {
			const char *why;
			uint64_t size = nt_record_size(r, off, &why);
			if (size == 0 || size > end - off)
				break;
			t->counts[r->data[off]]++;
			off += size;
		}
		for (uint32_t i = 0; i < r->nchunks; i++)
			count_in_chunk(r->data, r->chunks[i].offset,
				       r->chunks[i].offset + r->chunk_size, t);
	}
	if (!r->arena || r->tail)
		count_stream(r, r->records_start, r->size, z, t);
}

/* One archive, or every section of a many-process reader that opened, with the reader's
 * one decoder and one buffer for all (a decoder per section cost a 20,000-process bundle's
 * --stats a quarter of its time in zeroing new ones). Counting BlockedRecords, a section
 * whose header counts no wait is not walked. */
static void count_all(const nt_reader *r, tally *t)
{
	zcount z = { r, NULL, NULL };
	if (r->many) {
		for (uint32_t i = 0; i < r->many->nsections; i++) {
			const char *why;
			int closed = nt_many_section_closed(r, i);
			if (closed && t->blocked != NULL && r->many->lazy[i].blocked_waits == 0)
				continue;
			nt_reader *s = nt_many_section_open(r, i, NULL, &why); /* skipped as a visit skips it */
			if (s != NULL && (t->blocked == NULL || s->info.blocked_waits != 0)) {
				t->thread_base = r->many->sections[i].thread_base;
				count_archive(s, &z, t);
			}
			if (closed)
				nt_many_section_done(r, i, s, NULL);
		}
	} else if (t->blocked == NULL || r->info.blocked_waits != 0) {
		count_archive(r, &z, t);
	}
	nt_reader_decoder_give(r, z.dec);
	free(z.buf);
}

void nt_count_records(const nt_reader *r, uint64_t counts[256])
{
	const uint64_t *kept = __atomic_load_n(&r->counted, __ATOMIC_ACQUIRE);
	if (kept != NULL) { /* a clean stream-order visit counted them (nt_reader_cursor.c) */
		for (int k = 0; k < 256; k++)
			counts[k] += kept[k];
		return;
	}
	tally t = { counts, NULL, 0, 0, 0 };
	count_all(r, &t);
}

uint64_t nt_count_blocked(const nt_reader *r, nt_reader_blocked *per_thread, uint32_t n)
{
	uint64_t scratch[256] = { 0 };
	tally t = { scratch, per_thread, n, 0, 0 };
	count_all(r, &t);
	return t.blocked_records;
}

/* ---- the count a stream-order visit keeps ------------------------------------------- */

/* Every section (or the archive) a record stream: an Arena layout's durable region is read
 * at open and its slots hold chunks the visit takes in another way, so its walk here is
 * not what the visit walks. */
int nt_count_wanted(const nt_reader *r)
{
	if (__atomic_load_n(&r->counted, __ATOMIC_ACQUIRE) != NULL)
		return 0;
	if (r->many == NULL)
		return !r->arena;
	for (size_t i = 0; i < r->many->nsections; i++) {
		const nt_reader *s = r->many->sections[i].reader;
		if (s != NULL && s->arena)
			return 0;
	}
	return 1;
}

/* As count_stream counts a top-level record that frames: a compressed chunk also as the
 * chunk it holds (one that does not decompress is damage, and then nothing is kept). */
void nt_count_top(uint64_t *tally, uint8_t kind)
{
	tally[kind]++;
	if (kind == NT_KIND_ZCHUNK)
		tally[NT_KIND_CHUNK]++;
}

int nt_count_outside(const nt_reader *r, uint64_t *tally)
{
	if (r->outside.full)
		return 0;
	for (unsigned i = 0; tally != NULL && i < r->outside.n; i++)
		tally[r->outside.kind[i]] += r->outside.count[i];
	return 1;
}

int nt_count_keep(nt_reader *r, uint64_t *tally)
{
	uint64_t *none = NULL;
	return __atomic_compare_exchange_n(&r->counted, &none, tally, 0, __ATOMIC_RELEASE,
					   __ATOMIC_RELAXED);
}
