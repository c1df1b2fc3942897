/*
 * nt_reader_open.c - maps an archive, verifies its header and builds the durable tables.
 *
 * The open-time walk frames every top-level record and records the durable ones (strings,
 * threads, call sites), checking each reference against what was defined before it, as the
 * format requires. Damage found here does not fail the open: the visit finds the same damage
 * at the same offsets and reports it under the caller's policy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/common/nt_grow.h"
#include "nt_reader_internal.h"


/* r->notes, allocated at the first need; NULL (and notes_lost) when memory runs out. */
static reader_notes *notes_of(nt_reader *r)
{
	if (r->notes == NULL && (r->notes = calloc(1, sizeof(*r->notes))) == NULL)
		r->notes_lost = 1;
	return r->notes;
}

static void add_damage(nt_reader *r, uint64_t off, const char *msg)
{
	r->summary.open_errors++;
	if (r->ndamage < NT_READER_MAX_OPEN_DAMAGE && notes_of(r) != NULL) {
		r->notes->damage[r->ndamage].offset = off;
		r->notes->damage[r->ndamage++].message = msg;
	}
}

/* Arena chunks are ordered by their own content, not by the slot's claim word: a claimer
 * killed between taking a slot and invalidating it leaves the previous chunk intact under
 * the new claim. Start time orders chunks across threads; within a thread the event ordinal
 * is exact; the claim sequence only breaks ties. */
static int by_start(const void *a, const void *b)
{
	const struct arena_chunk *x = a, *y = b;
	if (x->thread == y->thread && x->first_event != y->first_event)
		return x->first_event < y->first_event ? -1 : 1;
	if (x->base_ticks != y->base_ticks)
		return x->base_ticks < y->base_ticks ? -1 : 1;
	return x->sequence < y->sequence ? -1 : x->sequence > y->sequence;
}

/* A durable record the walk framed: into the tables, or reported as damage. Returns 0 when
 * memory runs out. */
static int take_durable(nt_reader *r, uint64_t off, uint64_t size, pending_names *pn)
{
	const char *why = NULL;
	durable_result res = nt_durable_record(r, off, size, pn, &why);
	if (res == DURABLE_NO_MEMORY)
		return 0;
	if (res == DURABLE_DAMAGED)
		add_damage(r, off, why);
	else
		r->summary.durable_bytes += size;
	return 1;
}

/* The per-slot overwrite counters of an arena (ArchiveHeader.slot_overwritten_offset), or
 * NULL when the archive has none or they do not lie inside the file after the slots. With
 * them, events_overwritten is their sum, exact whatever instant the process was killed at
 * (the header's counter can be a claim behind); a chunk whose slot says it is counted was
 * being overwritten and is not decoded. */
static const uint8_t *slot_counters(nt_reader *r, uint64_t slots_end, uint64_t nslots)
{
	uint64_t off = r->info.slot_overwritten_offset;
	if (off == 0)
		return NULL;
	if (off % 8 || off < slots_end || off > r->size || nslots > (r->size - off) / 8) {
		add_damage(r, 0, "arena header: the slot overwrite counters lie outside the file");
		return NULL;
	}
	uint64_t sum = 0;
	for (uint64_t i = 0; i < nslots; i++)
		sum += nt_load_le64(r->data + off + 8 * i) & ~NT_SLOT_CHUNK_COUNTED;
	r->info.events_overwritten = sum;
	return r->data + off;
}

/* Arena layout: a live arena image. The durable region holds records up to its first zero
 * word; each chunk slot holds a chunk or zeros. Returns 0 when memory runs out; geometry
 * that does not fit the file is an open error (*bad). */
static int arena_init(nt_reader *r, pending_names *pn, const char **bad)
{
	const nt_archive_info *in = &r->info;
	uint64_t d = in->data_offset, ds = in->durable_size, cs = in->chunk_size;
	uint64_t nslots = 2 * (uint64_t)in->chunks_per_half, all_slots = nslots;
	if (d < r->records_start || d % 8 || ds % 8 || d > r->size || ds > r->size - d) {
		*bad = "arena header: durable region lies outside the file";
		return 1;
	}
	if (cs < sizeof(nt_chunk_header) + 8 || cs % 8 || cs > (1u << 30)) {
		*bad = "arena header: chunk size is not usable";
		return 1;
	}
	uint64_t rolling = d + ds, room = (r->size - rolling) / cs;
	const uint8_t *counted = room >= nslots ? slot_counters(r, rolling + nslots * cs, nslots)
						: NULL;
	if (room < nslots) {
		add_damage(r, r->size, "arena truncated: some chunk slots are missing from the file");
		nslots = room;
	}
	uint64_t off = d;
	while (off + 8 <= rolling && r->data[off] != NT_KIND_INVALID) {
		const char *why = NULL;
		uint64_t size = nt_record_size(r, off, &why);
		if (size == 0 || size > rolling - off) {
			add_damage(r, off, why ? why : "durable record runs past the durable region");
			break;
		}
		if (!take_durable(r, off, size, pn))
			return 0;
		off += size;
	}
	r->chunks = calloc(nslots ? nslots : 1, sizeof(*r->chunks));
	if (r->chunks == NULL)
		return 0;
	for (uint64_t i = 0; i < nslots; i++) {
		uint64_t at = rolling + i * cs;
		const nt_chunk_header *h = (const nt_chunk_header *)(const void *)(r->data + at);
		if (h->kind == NT_KIND_INVALID)
			continue; /* never used, or being reused when the process stopped */
		if (counted != NULL && (nt_load_le64(counted + 8 * i) & NT_SLOT_CHUNK_COUNTED))
			continue; /* being overwritten: its events are counted as overwritten */
		const char *why;
		if (h->kind != NT_KIND_CHUNK || h->size_bytes > cs || h->claim < 2) {
			add_damage(r, at, "chunk slot holds no valid chunk header");
			continue;
		}
		if (!nt_chunk_header_ok(r, at, cs, &why)) {
			add_damage(r, at, why);
			continue;
		}
		r->chunks[r->nchunks++] = (struct arena_chunk){ at, nt_claim_sequence(h->claim),
								h->base_ticks, h->first_event,
								h->thread };
		if (nt_chunk_closed(h->claim, h->slot_wrap, all_slots))
			r->closed_events += h->event_count;
		r->summary.chunks++;
		r->summary.chunk_bytes += cs;
		r->plain_chunk_bytes += cs; /* an arena's slots are never compressed */
	}
	qsort(r->chunks, r->nchunks, sizeof(*r->chunks), by_start);
	r->chunk_size = cs;
	r->arena = 1;
	return 1;
}

/* How far opening got: on, out of memory, or failed with *err filled. */
typedef enum open_step {
	STEP_OK = 0,
	STEP_NO_MEMORY,
	STEP_FAILED,
} open_step;

static int decode_header(nt_reader *r, nt_reader_error *err)
{
	char why[200];
	uint64_t where = 0;
	r->records_start = nt_header_decode(r->data, r->size, &r->info, why, sizeof(why), &where);
	if (r->records_start == 0) {
		nt_reader_fail(err, r->name, where, "%s", why);
		return 0;
	}
	if (r->info.compression > NT_CODEC_LAST) {
		snprintf(why, sizeof(why),
			 "archive's chunks are compressed with codec %u, which this reader (%s) "
			 "does not support",
			 (unsigned)r->info.compression, NT_VERSION_STRING);
		nt_reader_fail(err, r->name, 0, "%s", why);
		return 0;
	}
	if (r->records_start > r->size)
		r->records_start = r->size;
	r->summary.file_bytes = r->size;
	r->summary.header_bytes = r->records_start;
	return 1;
}

/* Arena layout: the arena itself, then the stream a streaming process saved after it, if
 * the header places one in the file. *off is where the record walk starts (the file's end
 * when there is no saved stream). */
static open_step start_arena(nt_reader *r, pending_names *pn, uint64_t *off,
			     nt_reader_error *err)
{
	const char *bad = NULL;
	*off = r->size;
	if (!arena_init(r, pn, &bad))
		return STEP_NO_MEMORY;
	if (bad != NULL) {
		nt_reader_fail(err, r->name, 0, "%s", bad);
		return STEP_FAILED;
	}
	uint64_t so = r->info.stream_offset, se = r->info.stream_end;
	if (so == 0)
		return STEP_OK;
	uint64_t slots_end = r->info.data_offset + r->info.durable_size +
			     2 * (uint64_t)r->info.chunks_per_half * r->chunk_size;
	if (so < slots_end || so % 8 || se < so || so > r->size) {
		add_damage(r, 0, "arena header: the saved stream lies outside the file");
		return STEP_OK;
	}
	/* Bytes past stream_end are a save the process did not finish. */
	if (se < r->size)
		r->size = se;
	r->tail = 1;
	*off = r->records_start = so;
	r->ncovered = r->nthreads ? r->nthreads : 1;
	r->covered = calloc(r->ncovered, sizeof(uint64_t));
	return r->covered ? STEP_OK : STEP_NO_MEMORY;
}

/* A chunk of the top-level stream: counted, and in a saved stream's tail the events it
 * holds are noted as covered (the arena's copies of them are skipped). Returns 0 when
 * memory runs out. */
static int walk_chunk(nt_reader *r, uint64_t off, uint64_t size)
{
	const char *why;
	/* What the chunk's header counts, even when the chunk is damaged otherwise: only
	 * events no framed chunk claims are missing from the file (check_truncation). */
	uint64_t head = r->data[off] == NT_KIND_ZCHUNK ? sizeof(nt_zchunk_record)
						       : sizeof(nt_chunk_header);
	if (size >= head)
		r->chunk_events += nt_chunk_at(r, off)->event_count;
	if (!nt_chunk_header_ok(r, off, size, &why)) {
		r->summary.open_errors++; /* the visit reports it */
		return 1;
	}
	const nt_chunk_header *h = nt_chunk_at(r, off);
	if (r->summary.chunks == 0)
		r->chunks_from = off;
	r->chunks_to = off + size;
	r->after_chunk = (nt_kind_tally){ 0 }; /* inside the range now */
	r->summary.chunks++;
	r->summary.chunk_bytes += size;
	r->zchunks += r->data[off] == NT_KIND_ZCHUNK;
	r->plain_chunk_bytes += r->data[off] == NT_KIND_ZCHUNK ? h->size_bytes : size;
	if (r->tail) {
		uint64_t end = h->first_event + h->event_count;
		/* The saved stream defines threads of its own after covered was sized: grow it
		 * (within the thread table, which bounds it). */
		if (h->thread >= r->nthreads)
			return 1;
		if (!nt_grow(&r->covered, &r->ncovered, (size_t)h->thread + 1, sizeof(uint64_t)))
			return 0;
		if (end > r->covered[h->thread])
			r->covered[h->thread] = end;
	}
	return 1;
}

/* The records outside the chunk range, by kind (r->outside): one of `kind` met; those met
 * after the last chunk, merged in at the walk's end. */
static void kind_tally_add(nt_kind_tally *t, uint8_t kind)
{
	for (unsigned i = 0; i < t->n; i++)
		if (t->kind[i] == kind) {
			t->count[i]++;
			return;
		}
	if (t->n == NT_KIND_TALLY_KINDS) {
		t->full = 1;
		return;
	}
	t->kind[t->n] = kind;
	t->count[t->n++] = 1;
}

static void kind_tally_merge(nt_kind_tally *to, const nt_kind_tally *from)
{
	to->full |= from->full;
	for (unsigned i = 0; i < from->n && !to->full; i++) {
		unsigned j = 0;
		while (j < to->n && to->kind[j] != from->kind[i])
			j++;
		if (j == NT_KIND_TALLY_KINDS) {
			to->full = 1;
		} else {
			to->kind[j] = from->kind[i];
			to->count[j] += from->count[i];
			to->n = (uint8_t)(j == to->n ? j + 1 : to->n);
		}
	}
}

/* The top-level records from *off to the end. Returns 0 when memory runs out (*off is then
 * past the record that needed it). */
static int walk_records(nt_reader *r, uint64_t *off, pending_names *pn)
{
	while (*off < r->size) {
		const char *why = NULL;
		uint64_t size = nt_record_size(r, *off, &why);
		if (size == 0) {
			/* The visit reports it; resynchronise on the next chunk header. */
			r->summary.open_errors++;
			*off = nt_resync(r, *off);
			continue;
		}
		uint8_t kind = r->data[*off];
		int ok = 1;
		if (nt_kind_is_chunk(kind))
			ok = walk_chunk(r, *off, size);
		else if (nt_kind_is_durable(kind))
			ok = take_durable(r, *off, size, pn);
		if (!nt_kind_is_chunk(kind))
			kind_tally_add(r->summary.chunks == 0 ? &r->outside : &r->after_chunk, kind);
		*off += size;
		if (!ok)
			return 0;
	}
	kind_tally_merge(&r->outside, &r->after_chunk);
	return 1;
}

/* A Stream archive's chunks hold every event its header counts as written, less those
 * circular mode overwrote, and a live streaming arena's saved stream every event its header
 * counts (the writer keeps the count with the stream's end): fewer is a file cut short, at a
 * record boundary or not (a cut inside a record is damage of its own as well), by the events
 * no chunk record claims. A live oneshot or circular arena (a killed process's, or a copy
 * of one) counts the events of the chunks that closed, as they close, never ahead of them:
 * its closed chunks less the overwritten ones hold at least that many, and fewer is a file
 * cut short (or slots destroyed) by at least the difference; a chunk still open when the
 * process stopped is in no count. Writers that keep no count (written 0) leave nothing to
 * check. */
static void check_truncation(nt_reader *r)
{
	uint64_t written = r->info.events_written, overwritten = r->info.events_overwritten;
	uint64_t found = r->chunk_events;
	int live_slots = 0;
	if (r->info.layout == NT_LAYOUT_ARENA && r->tail) {
		overwritten = 0; /* streaming overwrites nothing; the arena's slots are not counted */
	} else if (r->info.layout == NT_LAYOUT_ARENA) {
		found = r->closed_events;
		live_slots = 1;
	} else if (r->info.layout != NT_LAYOUT_STREAM) {
		return;
	}
	if (written <= overwritten)
		return;
	uint64_t expected = written - overwritten;
	if (found >= expected || notes_of(r) == NULL)
		return;
	char *truncation = r->notes->truncation;
	if (live_slots)
		snprintf(truncation, sizeof(r->notes->truncation),
			 "arena is truncated: its header counts %" PRIu64 " events in closed chunks, "
			 "its slots hold %" PRIu64 " (at least %" PRIu64 " missing)",
			 expected, found, expected - found);
	else
		snprintf(truncation, sizeof(r->notes->truncation),
			 "archive is truncated: its header counts %" PRIu64 " events written, its "
			 "chunks hold %" PRIu64 " (%" PRIu64 " missing)",
			 expected, found, expected - found);
	add_damage(r, r->size, truncation);
}

/* Why saving stopped and the events it cost are the writer's word, checked like any other:
 * the events not saved are some of the events dropped, counted only when saving stopped,
 * and the reason is an errno (Linux's are below 4096). A lie is damage at the header; the
 * values are shown as they are, and nothing is computed from them. */
static void check_save_account(nt_reader *r)
{
	const nt_archive_info *in = &r->info;
	char lie[sizeof(r->notes->save_lie)];
	if (in->dropped_unsaved > in->events_dropped)
		snprintf(lie, sizeof(lie),
			 "header counts %" PRIu64 " events not saved, more than the %" PRIu64
			 " it counts dropped", in->dropped_unsaved, in->events_dropped);
	else if (in->dropped_unsaved != 0 && in->save_errno == 0)
		snprintf(lie, sizeof(lie),
			 "header counts %" PRIu64 " events not saved but no reason saving stopped",
			 in->dropped_unsaved);
	else if (in->save_errno > 4095)
		snprintf(lie, sizeof(lie),
			 "header's reason saving stopped (%" PRIu32 ") is no errno", in->save_errno);
	else
		return;
	if (notes_of(r) == NULL)
		return;
	memcpy(r->notes->save_lie, lie, sizeof(lie));
	add_damage(r, 0, r->notes->save_lie);
}

/* *arr (of *n elements of `elem` bytes) cut to `keep` (>= 1) when that is fewer: the
 * tables grow by doubling, and a bundle keeps a reader per section. A failed shrink keeps
 * the array as it was. */
static void trim(void *arr, size_t *n, size_t keep, size_t elem)
{
	void **p = (void **)arr;
	/* A table nt_grow allocated fresh keeps its slack as pages never touched, which cost
	 * nothing; a realloc that moves it (a sanitizer's always does) would touch them all. */
	if (keep >= *n || *n * elem >= NT_GROW_FRESH_BYTES)
		return;
	void *q = realloc(*p, keep * elem);
	if (q != NULL) {
		*p = q;
		*n = keep;
	}
}

/* The tables to what the archive defines, before names point into the pool. */
static void trim_tables(nt_reader *r)
{
	trim(&r->strings, &r->nstrings, r->string_limit ? r->string_limit : 1,
	     sizeof(*r->strings));
	trim(&r->callsites, &r->ncallsites, r->callsite_limit ? r->callsite_limit : 1,
	     sizeof(*r->callsites));
	trim(&r->threads, &r->nthreads, r->thread_limit ? r->thread_limit : 1, sizeof(*r->threads));
	trim(&r->pool, &r->pool_cap, r->pool_len ? r->pool_len : 1, 1);
}

static int by_index(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Once the pool stops moving: names become pointers, and the lookups that need the whole
 * walk are built. Returns 0 when memory runs out. */
static int finish_tables(nt_reader *r, const pending_names *pn)
{
	r->string_limit = pn->string_limit;
	r->callsite_limit = pn->callsite_limit;
	if (!r->untrimmed)
		trim_tables(r);
	/* In file order: the last definition of an index names it. */
	for (size_t i = 0; i < pn->nstring_defs; i++)
		r->strings[pn->string_defs[i].index].str = r->pool + pn->string_defs[i].at;
	for (size_t i = 0; i < pn->nthread_defs; i++)
		r->threads[pn->thread_defs[i].index].name = r->pool + pn->thread_defs[i].at;
	for (size_t i = 0; i < pn->ncallsite_defs; i++) {
		const reader_callsite *c = &r->callsites[pn->callsite_defs[i]];
		if (r->strings[c->name].len > r->max_event_name_len)
			r->max_event_name_len = r->strings[c->name].len;
	}
	/* nt_reader_thread_at() is O(1): the defined indices (each once, as first defined),
	 * in order. */
	if (r->thread_order == NULL && (r->thread_order = malloc(sizeof(uint32_t))) == NULL)
		return 0;
	qsort(r->thread_order, r->summary.threads, sizeof(uint32_t), by_index);
	return 1;
}

uint32_t nt_header_notes(const nt_archive_info *in)
{
	uint32_t notes = 0;
	if (in->events_dropped || in->dropped_rolling_full || in->dropped_durable_full ||
	    in->dropped_stopped || in->dropped_unsaved || in->events_overwritten)
		notes |= NT_HEADER_NOTE_LOSSES;
	if (in->save_errno)
		notes |= NT_HEADER_NOTE_SAVE_STOPPED;
	if (in->blocking_timeout_us || in->blocked_waits)
		notes |= NT_HEADER_NOTE_BLOCKED;
	if (in->traceparent[0])
		notes |= NT_HEADER_NOTE_TRACEPARENT;
	return notes;
}

void nt_reader_describe_self(nt_reader *r)
{
	nt_reader_section *s = &r->self;
	s->pid = r->info.pid;
	s->mode = r->info.buffering_mode;
	s->end_text = s->message = s->error = "";
	s->name = r->info.process_name;
	s->source = r->name;
	s->size = r->size;
	s->reader = r;
	s->info = &r->info;
	s->summary = r->summary;
	s->events_written = r->info.events_written;
	s->header_notes = nt_header_notes(&r->info);
}

static void free_pending(pending_names *pn)
{
	free(pn->string_defs);
	free(pn->thread_defs);
	free(pn->callsite_defs);
	memset(pn, 0, sizeof(*pn));
}

static nt_reader *reader_init(nt_reader *r, nt_reader_error *err)
{
	if (!decode_header(r, err)) {
		nt_single_close(r);
		return NULL;
	}
	pending_names *pn = &r->pending; /* empty: a new reader's, or emptied by a recycle */
	uint64_t off = r->records_start;
	open_step step = STEP_OK;
	if (r->info.layout == NT_LAYOUT_ARENA) {
		step = start_arena(r, pn, &off, err);
	} else if (r->info.layout != NT_LAYOUT_STREAM) {
		nt_reader_fail(err, r->name, 0, "%s", "unknown archive layout in the header");
		step = STEP_FAILED;
	} else if (r->info.data_offset >= r->records_start && r->info.data_offset <= r->size &&
		   r->info.data_offset % 8 == 0) {
		off = r->records_start = r->info.data_offset;
	}
	if (step == STEP_OK && !walk_records(r, &off, pn))
		step = STEP_NO_MEMORY;
	if (r->summary.chunks == 0)
		r->chunks_from = r->chunks_to = r->size;
	if (step == STEP_OK) {
		check_truncation(r);
		check_save_account(r);
	}
	if (step == STEP_OK && (!finish_tables(r, pn) || r->notes_lost))
		step = STEP_NO_MEMORY;
	if (!r->untrimmed)
		free_pending(pn); /* nothing grows them again: only a recycle would use them */
	if (step == STEP_NO_MEMORY)
		nt_reader_fail(err, r->name, off, "%s", "out of memory while reading the durable tables");
	if (step != STEP_OK) {
		nt_single_close(r);
		return NULL;
	}
	nt_reader_describe_self(r);
	nt_reader_prepare_clock(r);
	return r;
}

/* A reader (new and zeroed, or a recycled one, emptied) over `data`, named `name`. */
static nt_reader *reader_start(nt_reader *r, const uint8_t *data, size_t size, int mapped,
			       const char *name, int untrimmed, nt_reader_error *err)
{
	r->data = data;
	r->size = r->mapped_size = size;
	r->mapped = mapped;
	r->untrimmed = untrimmed;
	if ((r->name = strdup(name)) == NULL) {
		nt_reader_fail(err, name, 0, "%s", "out of memory");
		nt_single_close(r);
		return NULL;
	}
	if (data == NULL || size == 0) {
		nt_reader_fail(err, r->name, 0, "%s", "empty input: not a nanotrace archive");
		nt_single_close(r);
		return NULL;
	}
	return reader_init(r, err);
}

static nt_reader *reader_over(const uint8_t *data, size_t size, int mapped, const char *name,
			      int untrimmed, nt_reader_error *err)
{
	nt_reader *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		if (mapped)
			munmap((void *)(uintptr_t)data, size);
		nt_reader_fail(err, name, 0, "%s", "out of memory");
		return NULL;
	}
	return reader_start(r, data, size, mapped, name, untrimmed, err);
}

nt_reader *nt_reader_over(const uint8_t *data, size_t size, int mapped, const char *name,
			  nt_reader_error *err)
{
	return reader_over(data, size, mapped, name, 0, err);
}

nt_reader *nt_section_over(nt_reader **spare, const uint8_t *data, size_t size,
			   const char *name, nt_reader_error *err)
{
	nt_reader *r = spare != NULL ? __atomic_exchange_n(spare, NULL, __ATOMIC_ACQ_REL) : NULL;
	return r != NULL ? reader_start(r, data, size, 0, name, 1, err)
			 : reader_over(data, size, 0, name, 1, err);
}

/* *p (*cap entries of `elem` bytes) emptied for a recycled reader: its first `used`
 * entries zeroed (the rest are as nt_grow made them: zero), or the whole freed (and *p and
 * *cap 0) when nt_grow allocated it fresh. A table by index must read as undefined again;
 * one only appended to passes used = 0. */
static void empty_table(void *p, size_t *cap, size_t elem, size_t used)
{
	void **t = (void **)p;
	if (*cap * elem >= NT_GROW_FRESH_BYTES) {
		free(*t);
		*t = NULL;
		*cap = 0;
	} else if (used != 0 && *t != NULL) {
		memset(*t, 0, (used < *cap ? used : *cap) * elem);
	}
}

void nt_section_recycle(nt_reader **spare, nt_reader *r)
{
	if (r == NULL)
		return;
	if (spare == NULL || !r->untrimmed || r->packed || r->mapped || r->many != NULL) {
		nt_single_close(r);
		return;
	}
	free(r->covered);
	free(r->notes);
	free(r->counted);
	nt_reader_decoder_free(r);
	for (uint32_t i = 0; i < r->nprocesses; i++)
		free((char *)(uintptr_t)r->processes[i].sid);
	free(r->processes);
	free(r->chunks);
	free(r->name);
	pending_names pn = r->pending;
	/* the entries by index: every one written lies below its table's highest defined */
	empty_table(&r->strings, &r->nstrings, sizeof(*r->strings), r->string_limit);
	empty_table(&r->threads, &r->nthreads, sizeof(*r->threads), r->thread_limit);
	empty_table(&r->callsites, &r->ncallsites, sizeof(*r->callsites), r->callsite_limit);
	empty_table(&r->pool, &r->pool_cap, 1, 0);
	empty_table(&r->thread_order, &pn.order_cap, sizeof(*r->thread_order), 0);
	empty_table(&pn.string_defs, &pn.string_defs_cap, sizeof(*pn.string_defs), 0);
	empty_table(&pn.thread_defs, &pn.thread_defs_cap, sizeof(*pn.thread_defs), 0);
	empty_table(&pn.callsite_defs, &pn.callsite_defs_cap, sizeof(*pn.callsite_defs), 0);
	/* Zeroed in place and the tables put back: one pass over its 1.8 KiB (a reader built
	 * on the stack and copied over it was two). */
	reader_string *strings = r->strings;
	nt_reader_thread *threads = r->threads;
	reader_callsite *callsites = r->callsites;
	char *pool = r->pool;
	uint32_t *thread_order = r->thread_order;
	size_t nstrings = r->nstrings, nthreads = r->nthreads, ncallsites = r->ncallsites;
	size_t pool_cap = r->pool_cap;
	memset(r, 0, sizeof(*r));
	r->strings = strings;
	r->nstrings = nstrings;
	r->threads = threads;
	r->nthreads = nthreads;
	r->callsites = callsites;
	r->ncallsites = ncallsites;
	r->pool = pool;
	r->pool_cap = pool_cap;
	r->thread_order = thread_order;
	r->pending = (pending_names){ .string_defs = pn.string_defs,
				      .string_defs_cap = pn.string_defs_cap,
				      .thread_defs = pn.thread_defs,
				      .thread_defs_cap = pn.thread_defs_cap,
				      .order_cap = pn.order_cap,
				      .callsite_defs = pn.callsite_defs,
				      .callsite_defs_cap = pn.callsite_defs_cap };
	nt_single_close(__atomic_exchange_n(spare, r, __ATOMIC_ACQ_REL));
}

int nt_map_path(const char *path, const uint8_t **data, size_t *size, nt_reader_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		nt_reader_fail(err, path, 0, "cannot open: %s", strerror(errno));
		return 0;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		nt_reader_fail(err, path, 0, "%s",
			       S_ISDIR(st.st_mode) ? "is a directory, not an archive"
						   : "not a regular file");
		close(fd);
		return 0;
	}
	if (st.st_size == 0) {
		nt_reader_fail(err, path, 0, "%s", "empty file: not a nanotrace archive");
		close(fd);
		return 0;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	int map_errno = errno;
	close(fd);
	if (m == MAP_FAILED) {
		nt_reader_fail(err, path, 0, "cannot map: %s", strerror(map_errno));
		return 0;
	}
	*data = m;
	*size = (size_t)st.st_size;
	return 1;
}

void nt_single_close(nt_reader *r)
{
	if (r == NULL)
		return;
	if (r->mapped)
		munmap((void *)(uintptr_t)r->data, r->mapped_size);
	free(r->covered);
	free(r->notes);
	free(r->counted);
	nt_reader_decoder_free(r);
	if (!r->packed)
		nt_reader_free_tables(r);
}

void nt_reader_free_tables(nt_reader *r)
{
	free(r->pending.string_defs);
	free(r->pending.thread_defs);
	free(r->pending.callsite_defs);
	free(r->strings);
	free(r->pool);
	free(r->threads);
	free(r->thread_order);
	for (uint32_t i = 0; i < r->nprocesses; i++)
		free((char *)(uintptr_t)r->processes[i].sid);
	free(r->processes);
	free(r->callsites);
	free(r->chunks);
	free(r->name);
	free(r);
}
