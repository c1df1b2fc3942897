/*
 * nt_reader_lazy.c - a bundle's sections closed between visits, so that the reader's memory
 * follows what is open at once, not how many processes the bundle holds.
 *
 * Why: a section's reader is about 2.5 KiB (its decoded header alone is 1,088 bytes, the
 * public nt_archive_info) and a 20,000-process bundle held 20,000 of them from open to
 * close; writing that memory was also most of the open's time (its page faults and their
 * unmapping were half of it, perf). Opening a small section again costs about 0.4 us.
 *
 * How: the open reads each section once, as before, merges its tables into the reader's,
 * keeps what the reader's calls need while it is closed (its string pool, compression
 * counts, where its threads' first chunks start), and closes it. A visit or a count opens
 * it again when it reaches it and closes it after (nt_many_section_open/_done); the pool
 * the open kept is where every later reader of the section points its strings, so the
 * names an event carries stay valid for the reader's life as a plain archive's do, and a
 * section whose bytes are not what they were (its file changed under the mapping) is not
 * read. nt_reader_section_at() opens a section for the reader's life (pins it), so that its
 * .reader and .info mean what they always meant; the reader's own renderers look through
 * nt_reader_section_peek() and nt_reader_section_header() instead, which open nothing.
 *
 * Which sections: those of a bundle of more than NT_SECTIONS_KEPT_OPEN sections (a small
 * bundle costs little, and its sections stay as they were) whose archive a visit reads
 * from its bytes alone: no damage found at open (whose notes a visit reports first), no
 * Arena layout (a live arena's slots and saved-stream bounds), no Trace2 process (whose
 * SIDs the reader's process table points into), no table by a sparse index. Files given
 * one by one or in a directory are mapped by their own readers, and stay open.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/common/nt_grow.h"
#include "nt_reader_internal.h"

int nt_many_sections_mode(void)
{
	static int warned;
	const char *e = getenv("NANOTRACE_READER_SECTIONS");
	if (e == NULL || e[0] == '\0')
		return NT_SECTIONS_AUTO;
	if (strcmp(e, "open") == 0)
		return NT_SECTIONS_OPEN;
	if (strcmp(e, "closed") == 0)
		return NT_SECTIONS_CLOSED;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "nanotrace: NANOTRACE_READER_SECTIONS=\"%.40s\" is not open or "
			"closed: sections are kept open as by default\n", e);
	return NT_SECTIONS_AUTO;
}

/* Up to `max` bytes of s at label + at (the label holding n bytes with its NUL): "%.<max>s". */
static size_t put_text(char *label, size_t n, size_t at, const char *s, size_t max)
{
	size_t len = strnlen(s, max);
	if (at + 1 < n) {
		size_t fit = len < n - 1 - at ? len : n - 1 - at;
		memcpy(label + at, s, fit);
	}
	return at + len;
}

static size_t put_u32(char *label, size_t n, size_t at, uint32_t v)
{
	char digits[10];
	size_t k = sizeof(digits);
	do
		digits[--k] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (at + 1 < n) {
		size_t len = sizeof(digits) - k, fit = len < n - 1 - at ? len : n - 1 - at;
		memcpy(label + at, digits + k, fit);
	}
	return at + sizeof(digits) - k;
}

/* What snprintf(label, n, "%.150s section %u (pid %u, %.60s)", ...) or "%.200s" of a plain
 * file writes, without its format parsing: every open and reopen of a section names its
 * reader, and snprintf was a twentieth of --stats's time on 20,000 sections. */
void nt_many_section_label(const nt_reader_section *s, char *label, size_t n)
{
	if (n == 0)
		return;
	size_t at;
	if (s->end_state != 0) {
		at = put_text(label, n, 0, s->source, 150);
		at = put_text(label, n, at, " section ", 9);
		at = put_u32(label, n, at, s->index);
		at = put_text(label, n, at, " (pid ", 6);
		at = put_u32(label, n, at, s->pid);
		at = put_text(label, n, at, ", ", 2);
		at = put_text(label, n, at, s->name, 60);
		at = put_text(label, n, at, ")", 1);
	} else {
		at = put_text(label, n, 0, s->source, 200);
	}
	label[at < n ? at : n - 1] = '\0';
}

int nt_many_section_may_close(const nt_reader *m, const nt_reader *s, size_t bundle_sections)
{
	int mode = m->many->sections_mode;
	if (bundle_sections == 0 || s->mapped || mode == NT_SECTIONS_OPEN ||
	    (mode == NT_SECTIONS_AUTO && bundle_sections <= NT_SECTIONS_KEPT_OPEN))
		return 0;
	return !s->arena && !s->tail && s->ndamage == 0 && s->notes == NULL &&
	       s->summary.open_errors == 0 && s->nprocesses == 0 && s->pool != NULL &&
	       s->nstrings * sizeof(*s->strings) < NT_GROW_FRESH_BYTES &&
	       s->nthreads * sizeof(*s->threads) < NT_GROW_FRESH_BYTES &&
	       s->ncallsites * sizeof(*s->callsites) < NT_GROW_FRESH_BYTES;
}

/* Its threads in index order (their names pointed at `pool`), and each one's first chunk by
 * its base time: where a time-ordered merge starts the thread's stream (a chunk's records
 * only move its clock on). */
static int keep_threads(nt_reader_slab *kept, lazy_section *lz, const nt_reader *s,
			const char *pool)
{
	uint32_t n = s->summary.threads;
	lz->threads = nt_reader_slab_alloc(kept, (n ? n : 1) * sizeof(*lz->threads));
	lz->keys = nt_reader_slab_alloc(kept, (n ? n : 1) * sizeof(*lz->keys));
	if (lz->threads == NULL || lz->keys == NULL)
		return -1;
	for (uint32_t j = 0; j < n; j++) {
		lz->threads[j] = s->threads[s->thread_order[j]];
		const char *name = lz->threads[j].name;
		if (name != NULL && name >= s->pool && name < s->pool + s->pool_len)
			lz->threads[j].name = pool + (name - s->pool);
		lz->keys[j] = INT64_MAX;
	}
	const char *why;
	uint64_t size;
	for (uint64_t off = nt_chunks_from(s), to = nt_chunks_to(s);
	     off < to && (size = nt_record_size(s, off, &why)) != 0; off += size) {
		if (!nt_kind_is_chunk(s->data[off]) || !nt_chunk_header_ok(s, off, size, &why))
			continue;
		const nt_chunk_header *h = nt_chunk_at(s, off);
		for (uint32_t j = 0; j < n; j++) /* a small section's few threads */
			if (lz->threads[j].index == h->thread && lz->keys[j] == INT64_MAX)
				lz->keys[j] = nt_ticks_to_ns(s, h->base_ticks);
	}
	lz->thread_limit = nt_reader_thread_index_limit(s);
	return 0;
}

int nt_many_close_now(nt_reader *m, uint32_t i, nt_reader_slab *kept, nt_reader **spare)
{
	reader_many *mm = m->many;
	nt_reader_section *sec = &mm->sections[i];
	nt_reader *s = sec->reader;
	/* as many as the table of sections has room for: a bundle reserves it whole */
	if (!nt_grow(&mm->lazy, &mm->lazy_cap, mm->sections_cap, sizeof(*mm->lazy)))
		return -1;
	lazy_section *lz = &mm->lazy[i];
	char *pool = nt_reader_slab_alloc(kept, s->pool_len ? s->pool_len : 1);
	if (pool == NULL || keep_threads(kept, lz, s, pool) < 0)
		return -1;
	memcpy(pool, s->pool, s->pool_len);
	lz->pool = pool;
	lz->pool_len = s->pool_len;
	lz->lazy = 1;
	lz->data = s->data;
	lz->size = s->size;
	lz->blocked_waits = s->info.blocked_waits;
	sec->reader = NULL;
	sec->info = NULL;
	nt_section_recycle(spare, s);
	return 0;
}

uint32_t nt_many_section_thread_limit(const nt_reader *m, uint32_t i)
{
	if (nt_many_section_closed(m, i))
		return m->many->lazy[i].thread_limit;
	return nt_reader_thread_index_limit(m->many->sections[i].reader);
}

const nt_reader_thread *nt_many_section_thread(const nt_reader *m, uint32_t i, uint32_t j)
{
	if (nt_many_section_closed(m, i))
		return &m->many->lazy[i].threads[j];
	return nt_reader_thread_at(m->many->sections[i].reader, j);
}

int nt_many_section_closed(const nt_reader *m, uint32_t i)
{
	const reader_many *mm = m->many;
	return mm != NULL && i < mm->lazy_cap && i < mm->nsections && mm->lazy[i].lazy &&
	       __atomic_load_n(&mm->sections[i].reader, __ATOMIC_ACQUIRE) == NULL;
}

/* Section i read again from its bytes, its strings pointed at the pool its first open
 * kept; NULL and *why when it cannot be. `pin`: for the reader's life, named as its
 * first open was; else for one visit or count, a reader named "". */
static nt_reader *reopen(const nt_reader *m, uint32_t i, int pin, nt_reader **spare,
			 const char **why)
{
	const reader_many *mm = m->many;
	const nt_reader_section *sec = &mm->sections[i];
	const lazy_section *lz = &mm->lazy[i];
	nt_reader_error err;
	nt_reader *s;
	if (pin) {
		char label[256];
		nt_many_section_label(sec, label, sizeof(label));
		s = nt_reader_over(lz->data, lz->size, 0, label, &err);
	} else { /* unnamed: its visit names the section in a message when it has one */
		s = nt_section_over(spare, lz->data, lz->size, "", &err);
	}
	if (s == NULL) {
		*why = "the section can no longer be read (its file changed since it was opened, "
		       "or memory ran out)";
		return NULL;
	}
	if (s->pool_len != lz->pool_len || memcmp(s->pool, lz->pool, lz->pool_len) != 0 ||
	    s->ndamage != 0) {
		nt_single_close(s);
		*why = "the section's strings are not what they were when it was opened (its file "
		       "changed under the reader)";
		return NULL;
	}
	nt_reader_use_pool(s, lz->pool);
	s->in_many = 1;
	s->file_base = sec->offset;
	s->decoder_owner = m;
	return s;
}

/* The reader's own slot for a reader given back: a cache the const reader's calls share
 * (atomically). */
static nt_reader **shared_spare(const nt_reader *m)
{
	return (nt_reader **)(uintptr_t)&m->many->spare_section;
}

nt_reader *nt_many_section_open(const nt_reader *m, uint32_t i, nt_reader **spare,
				const char **why)
{
	nt_reader *pinned = __atomic_load_n(&m->many->sections[i].reader, __ATOMIC_ACQUIRE);
	if (pinned != NULL || !nt_many_section_closed(m, i))
		return pinned;
	return reopen(m, i, 0, spare != NULL ? spare : shared_spare(m), why);
}

void nt_many_section_done(const nt_reader *m, uint32_t i, nt_reader *s, nt_reader **spare)
{
	if (s != NULL && s != __atomic_load_n(&m->many->sections[i].reader, __ATOMIC_ACQUIRE))
		nt_section_recycle(spare != NULL ? spare : shared_spare(m), s);
}

nt_reader *nt_many_section_pin(const nt_reader *m, uint32_t i)
{
	reader_many *mm = m->many;
	nt_reader_section *sec = &mm->sections[i];
	nt_reader *s = __atomic_load_n(&sec->reader, __ATOMIC_ACQUIRE);
	if (s != NULL || !nt_many_section_closed(m, i))
		return s;
	pthread_mutex_lock(&mm->pin_lock);
	if ((s = sec->reader) == NULL) {
		const char *why;
		if ((s = reopen(m, i, 1, NULL, &why)) != NULL) {
			sec->info = nt_reader_info(s);
			__atomic_store_n(&sec->reader, s, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&mm->pin_lock);
	return s;
}
