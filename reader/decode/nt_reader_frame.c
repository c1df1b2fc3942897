/*
 * nt_reader_frame.c - the top-level records of an open archive, framed the one way
 * format/nt_record.h defines, and judged as a visit takes them (a chunk must belong to a
 * thread the archive defined). Opening, counting, the visit and the decompress-ahead queue
 * all step through a file with these; none of them frames a record itself.
 */
#include "nt_reader_internal.h"

uint64_t nt_record_size(const nt_reader *r, uint64_t off, const char **why)
{
	uint64_t size;
	nt_frame f = nt_top_record_frame(r->data, r->size, off, &size);
	if (f != NT_FRAME_OK)
		*why = nt_frame_problem(f);
	return size;
}

uint64_t nt_resync(const nt_reader *r, uint64_t off)
{
	for (off += 8; off + sizeof(nt_chunk_header) <= r->size; off += 8) {
		uint64_t size;
		const char *why;
		if (nt_kind_is_chunk(r->data[off]) &&
		    nt_top_record_frame(r->data, r->size, off, &size) == NT_FRAME_OK &&
		    nt_chunk_header_ok(r, off, size, &why))
			return off;
	}
	return r->size;
}

int nt_chunk_header_ok(const nt_reader *r, uint64_t off, uint64_t size, const char **why)
{
	if (r->data[off] == NT_KIND_ZCHUNK) {
		const char *bad = nt_zchunk_check(r->data + off, size, NULL);
		if (bad != NULL) {
			*why = bad;
			return 0;
		}
	} else if (r->data[off + 1] != 0 || size < sizeof(nt_chunk_header)) {
		*why = "chunk header is malformed";
		return 0;
	}
	uint32_t t = nt_chunk_at(r, off)->thread;
	if (t == 0 || t >= r->nthreads || r->threads[t].name == NULL) {
		*why = "chunk belongs to a thread the archive never defined";
		return 0;
	}
	return 1;
}
