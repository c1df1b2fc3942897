/*
 * nt_reader_section_ahead.c - a bundle's closed sections (nt_reader_lazy.c) opened again,
 * and their few compressed chunks decompressed, on a helper thread (nt_reader_pipe.c) ahead
 * of a stream-order visit that reads them one after the other.
 *
 * Why: in a bundle of thousands of short processes, what a section costs besides its
 * events is opening it again, decompressing its one chunk and recycling its reader: about
 * a fifth of `--stats`'s time on 20,000 sections of 50 events (perf). Each is a function of
 * the section's bytes alone, which nothing changes during a visit, so the helper's reader
 * and buffers are the ones the visit would have made: the visit takes them
 * (nt_visit_open_section, nt_visit_open_top) and what it does with them, every message and
 * gap included, is what it does serially.
 * A section with more than NT_GIVEN_CHUNKS compressed chunks gets its reader only: its
 * chunks are its own visit's helper's (nt_reader_ahead.c).
 *
 * The visit gives each reader back to its slot as it was; the helper recycles it there
 * (nt_section_recycle) for the slot's next section, so the readers' allocations stay on
 * the helper's side.
 *
 * Memory: at most SECTIONS_WINDOW sections' readers (about 2.5 KiB each) and NT_GIVEN_CHUNKS
 * buffers each (NT_MAX_ZCHUNK_BYTES, of which only what a chunk decompresses to is written).
 */
#include <stdlib.h>

#include "nt_reader_visit.h"

/* Fewer closed sections than this are visited serially: a thread's start costs about as
 * much as opening this many again. */
#define SECTIONS_AHEAD_MIN 64
#define SECTIONS_WINDOW 64
#define NOT_CLOSED UINT32_MAX

struct sections_ahead {
	const nt_reader *m;
	uint32_t *section; /* per visit: its section when it is closed, else NOT_CLOSED */
	nt_zchunk_decoder *dec;
	nt_pipe *pipe;
};

/* The slot's readers of its last job, the visit's included, recycled into its spare. */
static void given_drop(void *ctx, void *slot)
{
	sections_ahead *a = ctx;
	section_given *g = slot;
	nt_many_section_done(a->m, g->section, g->used, &g->spare);
	nt_many_section_done(a->m, g->section, g->r, &g->spare);
	g->used = g->r = NULL;
}

static void given_free(void *ctx, void *slot)
{
	(void)ctx;
	section_given *g = slot;
	given_drop(ctx, slot);
	for (uint32_t k = 0; k < NT_GIVEN_CHUNKS; k++)
		free(g->buf[k]);
	nt_section_recycle(NULL, g->spare); /* closes it */
}

/* The compressed chunks of the section's record stream, in the order a visit's walk meets
 * them (skipping damage quietly, as nt_reader_ahead.c's walk does), decompressed. */
static void decompress_chunks(sections_ahead *a, section_given *g)
{
	const nt_reader *r = g->r;
	uint64_t off = nt_chunks_from(r), to = nt_chunks_to(r);
	while (off < to && g->nz < NT_GIVEN_CHUNKS) {
		const char *why;
		uint64_t size = nt_top_record_size(r, off, &why);
		if (size == 0) {
			off = nt_resync(r, off);
			continue;
		}
		if (r->data[off] == NT_KIND_ZCHUNK) {
			uint32_t k = g->nz;
			if (g->buf[k] == NULL && (g->buf[k] = malloc(NT_MAX_ZCHUNK_BYTES)) == NULL)
				return;
			g->z[k].off = off;
			g->z[k].why = nt_zchunk_decode(a->dec, r->data + off, size, g->buf[k],
						       NT_MAX_ZCHUNK_BYTES);
			g->nz = k + 1;
		}
		off += size;
	}
}

static void given_run(void *ctx, uint32_t i, void *slot)
{
	sections_ahead *a = ctx;
	section_given *g = slot;
	given_drop(ctx, slot);
	g->tried = 0;
	g->nz = g->next = 0;
	g->why = NULL;
	if ((g->section = a->section[i]) == NOT_CLOSED)
		return;
	g->tried = 1;
	g->r = nt_many_section_open(a->m, g->section, &g->spare, &g->why);
	if (g->r != NULL && g->r->zchunks <= NT_GIVEN_CHUNKS && a->dec != NULL)
		decompress_chunks(a, g);
}

static const nt_pipe_ops given_ops = { given_run, given_drop, given_free };

sections_ahead *nt_sections_ahead_start(const visit *vs, uint32_t nv, uint32_t buffers)
{
	uint32_t closed = 0;
	for (uint32_t i = 0; i < nv; i++)
		closed += vs[i].closed != 0;
	if (buffers == 0 || closed < SECTIONS_AHEAD_MIN)
		return NULL;
	sections_ahead *a = calloc(1, sizeof(*a));
	if (a == NULL || (a->section = malloc(nv * sizeof(*a->section))) == NULL) {
		free(a);
		return NULL;
	}
	a->m = vs[0].top;
	for (uint32_t i = 0; i < nv; i++)
		a->section[i] = vs[i].closed ? vs[i].section : NOT_CLOSED;
	a->dec = nt_reader_decoder_take(a->m);
	a->pipe = nt_pipe_start(&given_ops, a, nv, SECTIONS_WINDOW, sizeof(section_given));
	if (a->pipe == NULL) {
		nt_sections_ahead_stop(a);
		return NULL;
	}
	return a;
}

section_given *nt_sections_ahead_take(sections_ahead *a, uint32_t vi)
{
	section_given *g = a != NULL ? nt_pipe_take(a->pipe, vi) : NULL;
	if (g != NULL && !g->tried) { /* an open section: its visit reads it as it is */
		nt_pipe_done(a->pipe, vi);
		return NULL;
	}
	return g;
}

void nt_sections_ahead_done(sections_ahead *a, uint32_t vi)
{
	if (a != NULL)
		nt_pipe_done(a->pipe, vi);
}

void nt_sections_ahead_stop(sections_ahead *a)
{
	if (a == NULL)
		return;
	nt_pipe_stop(a->pipe);
	nt_reader_decoder_give(a->m, a->dec);
	free(a->section);
	free(a);
}
