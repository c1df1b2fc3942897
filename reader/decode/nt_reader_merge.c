/*
 * nt_reader_merge.c - a many-process reader's tables and header, from its sections': their
 * threads and Trace2 processes renumbered into one table each (thread_base, process_base),
 * their headers summed into one (the losses of all, the clock of the earliest), once every
 * section is open (nt_reader_many.c opens them).
 *
 * The headers are added up as the sections open, in an open_totals: the reader's own, or
 * that of a thread opening a range of a bundle's sections, added to the reader's after the
 * sections before that range (nt_open_totals_add), so the sum is the same as one thread
 * adding every section in order: the earliest section's clock (the first of equals), the
 * first section's reason that saving stopped, the largest wait allowed.
 */
#include <stdlib.h>
#include <string.h>

#include "nt_reader_internal.h"

/* The sections' threads, renumbered: section i's thread t is thread_base + t. A closed
 * section's come from what it kept (nt_reader_lazy.c). One table of the whole size, so that
 * a hostile section's index near its field's top costs address space, not a copy. */
static int merge_threads(nt_reader *m)
{
	reader_many *mm = m->many;
	uint64_t limit = 0;
	m->summary.threads = 0;
	for (uint32_t i = 0; i < mm->nsections; i++) {
		nt_reader_section *s = &mm->sections[i];
		s->thread_base = (uint32_t)limit;
		limit += nt_many_section_thread_limit(m, i);
		m->summary.threads += s->summary.threads;
	}
	if (limit > UINT32_MAX / 2)
		return 0;
	m->nthreads = limit ? (size_t)limit : 1;
	m->threads = calloc(m->nthreads, sizeof(*m->threads));
	m->thread_order = malloc((m->summary.threads ? m->summary.threads : 1) * sizeof(uint32_t));
	if (m->threads == NULL || m->thread_order == NULL)
		return 0;
	uint32_t k = 0;
	for (uint32_t i = 0; i < mm->nsections; i++) {
		const nt_reader_section *s = &mm->sections[i];
		for (uint32_t j = 0; j < s->summary.threads && k < m->summary.threads; j++) {
			nt_reader_thread t = *nt_many_section_thread(m, i, j);
			t.index += s->thread_base;
			t.process += s->process_base;
			t.section = s->index;
			m->threads[t.index] = t;
			m->thread_order[k++] = t.index;
			m->thread_limit = t.index + 1;
		}
	}
	m->summary.threads = k;
	return 1;
}

/* The sections' Trace2 processes, renumbered the same way (SIDs stay the sections': a
 * section that has any stays open). */
static int merge_processes(nt_reader *m)
{
	reader_many *mm = m->many;
	uint64_t n = 0;
	for (size_t i = 0; i < mm->nsections; i++) {
		mm->sections[i].process_base = (uint32_t)n;
		n += nt_reader_process_count(mm->sections[i].reader);
	}
	if (n > UINT32_MAX / 2)
		return 0;
	m->nprocesses = (size_t)n;
	m->processes = calloc(n ? (size_t)n : 1, sizeof(*m->processes));
	if (m->processes == NULL)
		return 0;
	for (size_t i = 0; i < mm->nsections; i++) {
		const nt_reader_section *s = &mm->sections[i];
		for (uint32_t j = 0; j < nt_reader_process_count(s->reader); j++) {
			const nt_reader_process *p = nt_reader_process_at(s->reader, j);
			if (p != NULL) {
				m->processes[s->process_base + j] = *p;
				m->processes[s->process_base + j].index = s->process_base + j;
			}
		}
	}
	return 1;
}

static void add_counts(nt_archive_info *to, const nt_archive_info *in)
{
	to->events_written += in->events_written;
	to->events_dropped += in->events_dropped;
	to->events_overwritten += in->events_overwritten;
	to->wraps += in->wraps;
	to->durable_dropped += in->durable_dropped;
	to->chunks_claimed += in->chunks_claimed;
	to->dropped_rolling_full += in->dropped_rolling_full;
	to->dropped_durable_full += in->dropped_durable_full;
	to->dropped_stopped += in->dropped_stopped;
	to->dropped_unsaved += in->dropped_unsaved;
	if (to->save_errno == 0)
		to->save_errno = in->save_errno; /* the first section's reason that saving stopped */
	to->buffers_saved += in->buffers_saved;
	to->values_truncated += in->values_truncated;
	/* what the writers' waits for a streaming saver cost, summed like the losses (each
	 * rendering of a bundle showed the first section's); the longest wait allowed */
	to->blocked_waits += in->blocked_waits;
	to->blocked_timeouts += in->blocked_timeouts;
	to->blocked_ns += in->blocked_ns;
	if (in->blocking_timeout_us > to->blocking_timeout_us)
		to->blocking_timeout_us = in->blocking_timeout_us;
}

static void add_summary(nt_reader_summary *to, const nt_reader_summary *in)
{
	to->header_bytes += in->header_bytes;
	to->durable_bytes += in->durable_bytes;
	to->chunk_bytes += in->chunk_bytes;
	to->chunks += in->chunks;
	to->strings += in->strings;
	to->callsites += in->callsites;
	to->open_errors += in->open_errors;
}

void nt_open_totals_add_section(open_totals *t, const nt_reader_section *s, const nt_reader *r)
{
	const nt_archive_info *in = nt_reader_info(r);
	if (!t->have_first || in->start_monotonic_ns < t->first.start_monotonic_ns) {
		t->first = *in;
		t->have_first = 1;
	}
	add_counts(&t->sum, in);
	add_summary(&t->summary, &s->summary);
	t->zchunks += r->zchunks;
	t->plain_chunk_bytes += r->plain_chunk_bytes;
	if (nt_reader_max_category_len(r) > t->max_category_len)
		t->max_category_len = nt_reader_max_category_len(r);
	if (nt_reader_max_name_len(r) > t->max_name_len)
		t->max_name_len = nt_reader_max_name_len(r);
	if (nt_reader_max_event_name_len(r) > t->max_event_name_len)
		t->max_event_name_len = nt_reader_max_event_name_len(r);
}

void nt_open_totals_add(open_totals *to, const open_totals *later)
{
	if (later->have_first &&
	    (!to->have_first || later->first.start_monotonic_ns < to->first.start_monotonic_ns)) {
		to->first = later->first;
		to->have_first = 1;
	}
	add_counts(&to->sum, &later->sum);
	add_summary(&to->summary, &later->summary);
	to->zchunks += later->zchunks;
	to->plain_chunk_bytes += later->plain_chunk_bytes;
	if (later->max_category_len > to->max_category_len)
		to->max_category_len = later->max_category_len;
	if (later->max_name_len > to->max_name_len)
		to->max_name_len = later->max_name_len;
	if (later->max_event_name_len > to->max_event_name_len)
		to->max_event_name_len = later->max_event_name_len;
}

static void trim(void *arr, size_t *cap, size_t n, size_t elem)
{
	void **p = (void **)arr;
	if (n > 0 && n < *cap) { /* grown by doubling */
		void *fit = realloc(*p, n * elem);
		if (fit != NULL) {
			*p = fit;
			*cap = n;
		}
	}
}

int nt_many_finish(nt_reader *m, nt_reader_error *err)
{
	reader_many *mm = m->many;
	trim(&mm->sections, &mm->sections_cap, mm->nsections, sizeof(*mm->sections));
	trim(&mm->lazy, &mm->lazy_cap, mm->nsections, sizeof(*mm->lazy));
	if (!merge_processes(m) || !merge_threads(m)) {
		nt_reader_fail(err, m->name, 0, "%s", "out of memory while merging the sections' tables");
		return 0;
	}
	const open_totals *t = &mm->totals;
	add_summary(&m->summary, &t->summary);
	m->max_category_len = t->max_category_len;
	m->max_name_len = t->max_name_len;
	m->max_event_name_len = t->max_event_name_len;
	if (t->have_first) {
		const nt_archive_info *sum = &t->sum;
		m->info = t->first;
		m->info.pid = 0;
		m->info.process_name[0] = '\0';
		m->info.events_written = sum->events_written;
		m->info.events_dropped = sum->events_dropped;
		m->info.events_overwritten = sum->events_overwritten;
		m->info.wraps = sum->wraps;
		m->info.durable_dropped = sum->durable_dropped;
		m->info.chunks_claimed = sum->chunks_claimed;
		m->info.dropped_rolling_full = sum->dropped_rolling_full;
		m->info.dropped_durable_full = sum->dropped_durable_full;
		m->info.dropped_stopped = sum->dropped_stopped;
		m->info.dropped_unsaved = sum->dropped_unsaved;
		m->info.save_errno = sum->save_errno;
		m->info.buffers_saved = sum->buffers_saved;
		m->info.values_truncated = sum->values_truncated;
		m->info.blocked_waits = sum->blocked_waits;
		m->info.blocked_timeouts = sum->blocked_timeouts;
		m->info.blocked_ns = sum->blocked_ns;
		m->info.blocking_timeout_us = sum->blocking_timeout_us;
	}
	m->summary.file_bytes = m->size;
	return 1;
}
