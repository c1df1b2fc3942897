/*
 * nt_reader_decoder.c - the reader's spare zstd decoder. Every visit (cursor) and every
 * count of records that meets a compressed chunk needs a decoder; making one
 * (ZSTD_createDCtx and its tables) costs more than decoding a small archive's chunks, so a
 * reader keeps the last one given back and hands it to the next visit or count. Taking and
 * giving back are atomic exchanges: cursors of one reader on other threads each take their
 * own (whoever finds none spare makes one), so a decoder is never used by two at once. A
 * section of a many-process reader shares that reader's spare (sections are closed before
 * it, so the spare outlives their visits). The read-ahead helper (nt_reader_ahead.c) keeps
 * its own decoder. Calls nothing in the folder.
 */
#include <stdint.h>

#include "nt_reader_internal.h"

/* The spare is the one field a const reader's user changes: readers are always allocated
 * (never const objects), and the exchange is atomic, so the cast is sound. */
static nt_zchunk_decoder **spare_of(const nt_reader *r)
{
	if (r->decoder_owner != NULL) /* a section: its many-process reader's spare */
		r = r->decoder_owner;
	return &((nt_reader *)(uintptr_t)r)->spare_decoder;
}

nt_zchunk_decoder *nt_reader_decoder_take(const nt_reader *r)
{
	nt_zchunk_decoder *d = __atomic_exchange_n(spare_of(r), NULL, __ATOMIC_ACQ_REL);
	return d != NULL ? d : nt_zchunk_decoder_new();
}

void nt_reader_decoder_give(const nt_reader *r, nt_zchunk_decoder *d)
{
	nt_zchunk_decoder *none = NULL;
	if (d != NULL && !__atomic_compare_exchange_n(spare_of(r), &none, d, 0, __ATOMIC_ACQ_REL,
						      __ATOMIC_ACQUIRE))
		nt_zchunk_decoder_free(d); /* another was given back first: one spare is enough */
}

void nt_reader_decoder_free(nt_reader *r)
{
	nt_zchunk_decoder_free(r->spare_decoder);
	r->spare_decoder = NULL;
}
