/*
 * nt_reader_pack.c - a section's reader moved into one block of its many-process reader's
 * slab, so that a bundle of 20,000 short processes costs 20,000 blocks, not 200,000
 * allocations.
 *
 * Why: an open builds its tables by doubling (nt_grow) and trims them, so each section's
 * reader was about ten allocations: their headers and the trims' slack were a third of a
 * small section's memory, and freeing them at close, scattered over a heap of tens of
 * megabytes, took as long as the open itself (glibc's consolidation walks). Packed, the
 * growth buffers are freed as soon as the section is open (the next section's open reuses
 * them from malloc's thread cache) and the close frees the slab's few large blocks.
 *
 * What moves: the reader itself, its name and its tables (strings, pool, threads, the
 * thread order, Trace2 processes with their SIDs, call sites, arena chunks). What stays a
 * separate allocation, freed by nt_single_close as before: the open's damage notes and a
 * streaming arena's covered table (few readers have either), the mapping, and what visits
 * leave (the spare decoder, the kept record count). Every pointer into a moved table is
 * moved with it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "reader/common/nt_grow.h"
#include "nt_reader_internal.h"

/* Blocks of the slab: at least this much, so a small section's block is one bump. */
#define SLAB_BLOCK_BYTES (256u * 1024u)
/* Past 8 MiB of blocks, each further block is a whole number of 2 MiB pages, aligned and
 * marked for transparent huge pages (madvise: the kernel may decline, and nothing changes).
 * Why: a bundle's sections are packed once and written in full, and a fault per 4 KiB page
 * was a fifth of trace-dump --stats's time on 20,000 sections (46 MB of slab, 14,000
 * faults; 5,800 with huge pages, 125 -> 101 ms of CPU, perf stat -r 20). Why not sooner:
 * a huge page is resident whole, and a small bundle's last block would cost up to 2 MiB
 * it does not use; past 8 MiB that is at most a fifth more. */
#define SLAB_HUGE_AFTER (8u << 20)
#define SLAB_HUGE_BYTES (2u << 20)

struct nt_reader_slab_block {
	struct nt_reader_slab_block *next;
	size_t used, size;
	max_align_t data[]; /* aligned as malloc's */
};

void *nt_reader_slab_alloc(nt_reader_slab *s, size_t n)
{
	const size_t align = _Alignof(max_align_t);
	n = (n + align - 1) & ~(align - 1);
	struct nt_reader_slab_block *b = s->head;
	if (b == NULL || b->size - b->used < n) {
		size_t size = n > SLAB_BLOCK_BYTES ? n : SLAB_BLOCK_BYTES;
		void *m = NULL;
		if (s->bytes >= SLAB_HUGE_AFTER) {
			size = (sizeof(*b) + n + SLAB_HUGE_BYTES - 1) & ~(size_t)(SLAB_HUGE_BYTES - 1);
			if (posix_memalign(&m, SLAB_HUGE_BYTES, size) != 0)
				return NULL;
			(void)madvise(m, size, MADV_HUGEPAGE);
			size -= sizeof(*b);
		} else if ((m = malloc(sizeof(*b) + size)) == NULL) {
			return NULL;
		}
		b = m;
		s->bytes += size;
		b->used = 0;
		b->size = size;
		b->next = s->head;
		s->head = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += n;
	return p;
}

void nt_reader_slab_adopt(nt_reader_slab *to, nt_reader_slab *from)
{
	struct nt_reader_slab_block *tail = from->head;
	if (tail == NULL)
		return;
	while (tail->next != NULL)
		tail = tail->next;
	tail->next = to->head;
	to->head = from->head;
	to->bytes += from->bytes;
	from->head = NULL;
	from->bytes = 0;
}

void nt_reader_slab_free(nt_reader_slab *s)
{
	struct nt_reader_slab_block *b = s->head;
	while (b != NULL) {
		struct nt_reader_slab_block *next = b->next;
		free(b);
		b = next;
	}
	s->head = NULL;
}

/* Lays the packed reader's parts out one after the other. */
typedef struct layout {
	char *at;
} layout;

static void *place(layout *l, const void *src, size_t bytes)
{
	void *dst = l->at;
	if (bytes != 0)
		memcpy(dst, src, bytes);
	l->at += (bytes + 7) & ~(size_t)7;
	return dst;
}

static size_t rounded(size_t bytes)
{
	return (bytes + 7) & ~(size_t)7;
}

/* A pointer into the old pool, moved to the same place in the new one (compared as
 * addresses: a thread's name may be a pointer elsewhere). */
static const char *moved(const char *p, const char *from, size_t n, const char *to)
{
	uintptr_t at = (uintptr_t)p, base = (uintptr_t)from;
	return p != NULL && at >= base && at - base < n ? to + (at - base) : p;
}

void nt_reader_use_pool(nt_reader *r, const char *pool)
{
	for (size_t i = 0; i < r->nstrings; i++)
		r->strings[i].str = moved(r->strings[i].str, r->pool, r->pool_cap, pool);
	for (size_t i = 0; i < r->nthreads; i++)
		r->threads[i].name = moved(r->threads[i].name, r->pool, r->pool_cap, pool);
}

/* Entries of a table by index that its archive uses: up to the highest index defined (a
 * section's tables are not trimmed: nt_section_over), at least one. */
static size_t used(size_t limit, size_t allocated)
{
	size_t n = limit ? limit : 1;
	return n < allocated ? n : allocated;
}

/* The bytes the parts take, each rounded to 8. */
static size_t packed_size(const nt_reader *r, size_t name_len)
{
	size_t n = rounded(sizeof(*r)) + rounded(name_len + 1);
	n += rounded(used(r->string_limit, r->nstrings) * sizeof(*r->strings));
	n += rounded(r->pool_len);
	n += rounded(used(r->thread_limit, r->nthreads) * sizeof(*r->threads));
	n += rounded(r->summary.threads * sizeof(*r->thread_order));
	n += rounded(r->nprocesses * sizeof(*r->processes));
	for (size_t i = 0; i < r->nprocesses; i++)
		if (r->processes[i].sid != NULL)
			n += rounded((size_t)r->processes[i].sid_len + 1);
	n += rounded(used(r->callsite_limit, r->ncallsites) * sizeof(*r->callsites));
	n += rounded((size_t)r->nchunks * sizeof(*r->chunks));
	return n;
}

/* A table by index as large as nt_grow allocates fresh is a sparse one's (an index near a
 * limit, one entry defined): its untouched pages cost nothing, and copying it would write
 * every one of them (32 MiB for a thread index near 2^20, in a section of a few hundred
 * bytes). Such a reader is not packed. */
static int has_sparse_table(const nt_reader *r)
{
	return r->nstrings * sizeof(*r->strings) >= NT_GROW_FRESH_BYTES ||
	       r->nthreads * sizeof(*r->threads) >= NT_GROW_FRESH_BYTES ||
	       r->nprocesses * sizeof(*r->processes) >= NT_GROW_FRESH_BYTES ||
	       r->ncallsites * sizeof(*r->callsites) >= NT_GROW_FRESH_BYTES;
}

nt_reader *nt_reader_pack(nt_reader *r, nt_reader_slab *slab)
{
	if (has_sparse_table(r))
		return r;
	size_t name_len = strlen(r->name);
	layout l = { nt_reader_slab_alloc(slab, packed_size(r, name_len)) };
	if (l.at == NULL)
		return r; /* stays as it was: nt_single_close frees it part by part */
	nt_reader *p = place(&l, r, sizeof(*r));
	p->packed = 1;
	memset(&p->pending, 0, sizeof(p->pending)); /* r's, freed with its tables below */
	p->name = place(&l, r->name, name_len + 1);
	p->nstrings = used(r->string_limit, r->nstrings);
	p->strings = place(&l, r->strings, p->nstrings * sizeof(*r->strings));
	char *pool = place(&l, r->pool, r->pool_len);
	p->pool_cap = r->pool_len;
	p->nthreads = used(r->thread_limit, r->nthreads);
	p->threads = place(&l, r->threads, p->nthreads * sizeof(*r->threads));
	nt_reader_use_pool(p, pool); /* p->pool is still r's: what they point into */
	p->pool = pool;
	p->thread_order = place(&l, r->thread_order, r->summary.threads * sizeof(*r->thread_order));
	p->processes = place(&l, r->processes, r->nprocesses * sizeof(*r->processes));
	for (size_t i = 0; i < p->nprocesses; i++)
		if (r->processes[i].sid != NULL)
			p->processes[i].sid = place(&l, r->processes[i].sid,
						    (size_t)r->processes[i].sid_len + 1);
	p->ncallsites = used(r->callsite_limit, r->ncallsites);
	p->callsites = place(&l, r->callsites, p->ncallsites * sizeof(*r->callsites));
	p->chunks = place(&l, r->chunks, (size_t)r->nchunks * sizeof(*r->chunks));
	nt_reader_describe_self(p);
	nt_reader_free_tables(r);
	return p;
}
