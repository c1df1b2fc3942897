/*
 * nt_reader_visit.c - decodes chunks into events; nt_reader_cursor.c puts them in stream
 * order, nt_reader_time.c in timestamp order.
 *
 * A chunk cursor walks one chunk's records, keeping the running tick count (deltas and
 * Timestamp escapes).
 *
 * A CompressedChunk is decompressed (format/nt_zchunk.h, which checks every size) into a
 * buffer of NT_MAX_ZCHUNK_BYTES and walked there: one buffer per visit in stream order, one
 * per thread in time order (allocated at the thread's first compressed chunk). Records of a
 * decompressed chunk are reported at the CompressedChunk's offset. A chunk that does not
 * decompress is damage at its offset, and its events (the header copy's count) are lost:
 * a gap. With a helper thread (nt_reader_ahead.c) the chunks are decompressed ahead of the
 * visit, which takes each one instead of decompressing it: the same buffer, the same answer.
 * A bundle's small sections come opened, their chunks decompressed, the same way
 * (nt_reader_section_ahead.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nt_reader_visit.h"

void nt_visit_report(visit *v, uint64_t off, const char *msg)
{
	v->damaged = 1;
	if (v->cb->on_error == NULL)
		return;
	if (v->many) {
		char label[256];
		const char *name = v->r->name;
		if (v->closed && name[0] == '\0') { /* a closed section's reader has no name */
			nt_many_section_label(&v->top->many->sections[v->section], label,
					      sizeof(label));
			name = label;
		}
		snprintf(v->msg, NT_VISIT_MSG_BYTES, "%s: %s", name, msg);
		v->cb->on_error(v->ctx, v->base + off, v->msg);
	} else {
		v->cb->on_error(v->ctx, off, msg);
	}
}

int nt_visit_open_section(visit *v)
{
	if (v->r != NULL)
		return 1;
	if (v->open_failed)
		return 0;
	const char *why = "out of memory";
	if (v->given != NULL) { /* opened ahead: the reader is the visit's now */
		v->r = v->given->r;
		v->given->r = NULL;
		if (v->given->why != NULL)
			why = v->given->why;
	} else {
		v->r = nt_many_section_open(v->top, v->section, NULL, &why);
	}
	if (v->r != NULL)
		return 1;
	v->open_failed = v->damaged = 1;
	if (v->cb->on_error != NULL) {
		char label[256];
		nt_many_section_label(&v->top->many->sections[v->section], label, sizeof(label));
		snprintf(v->msg, NT_VISIT_MSG_BYTES, "%s: %s", label, why);
		v->cb->on_error(v->ctx, v->base, v->msg);
	}
	return v->policy == NT_ON_CORRUPT_STOP ? -1 : 0;
}

void nt_visit_close_section(visit *v)
{
	if (v->closed && v->r != NULL) {
		if (v->given != NULL) /* the helper recycles it when it next uses the slot */
			v->given->used = v->r;
		else
			nt_many_section_done(v->top, v->section, v->r, NULL);
		v->r = NULL;
	}
}

void nt_visit_emit_gap(visit *v, const nt_reader_gap *gap)
{
	if (v->cb->on_gap == NULL)
		return;
	nt_reader_gap g = *gap;
	if (v->many) {
		g.thread = &v->threads[gap->thread - v->r->threads];
		g.offset += v->base;
	}
	v->cb->on_gap(v->ctx, &g);
}

/* The clock, ordinals and thread of a cursor at the chunk whose header is `h` (at `off`). */
static void cursor_start(const nt_reader *r, chunk_cursor *c, const nt_chunk_header *h,
			 uint64_t off)
{
	c->ticks = c->base_ticks = h->base_ticks;
	c->first = c->ordinal = h->first_event;
	c->skip_below = 0;
	c->offset = off;
	c->thread = &r->threads[h->thread];
	c->active = 1;
}

static void cursor_open_chunk(const nt_reader *r, chunk_cursor *c, uint64_t off, uint64_t size)
{
	const nt_chunk_header *h = (const nt_chunk_header *)(const void *)(r->data + off);
	c->data = r->data;
	c->report = UINT64_MAX;
	c->pos = off + sizeof(*h);
	c->end = off + (h->size_bytes >= sizeof(*h) && h->size_bytes < size ? h->size_bytes : size);
	cursor_start(r, c, h, off);
}

/* A decompressed chunk at `buf` (nt_zchunk_decode checked its size), of the CompressedChunk
 * at `off`. */
static void cursor_open_buffer(const nt_reader *r, chunk_cursor *c, const uint8_t *buf,
			       uint64_t off)
{
	const nt_chunk_header *h = (const nt_chunk_header *)(const void *)buf;
	c->data = buf;
	c->report = off;
	c->zend = h->first_event + h->event_count;
	c->pos = sizeof(*h);
	c->end = h->size_bytes;
	cursor_start(r, c, h, off);
}

/* The CompressedChunk at `off` (`size` bytes) decompressed by the visit itself into *buf
 * (NT_MAX_ZCHUNK_BYTES, allocated on first use): NULL, or why it cannot be read. */
static const char *decompress(visit *v, uint8_t **buf, uint64_t off, uint64_t size)
{
	if (*buf == NULL && (*buf = malloc(NT_MAX_ZCHUNK_BYTES)) == NULL)
		return "out of memory decompressing a compressed chunk";
	if (*v->zdec == NULL && (*v->zdec = nt_reader_decoder_take(v->top)) == NULL)
		return "out of memory decompressing a compressed chunk";
	return nt_zchunk_decode(*v->zdec, v->r->data + off, size, *buf, NT_MAX_ZCHUNK_BYTES);
}

/* Opens the chunk record at `off` (`size` bytes, nt_chunk_header_ok): a Chunk in place, a
 * CompressedChunk decompressed into *buf (NT_MAX_ZCHUNK_BYTES, allocated on first use), or
 * taken from the helper's source `queue` with the buffer it was decompressed into.
 * Returns NULL, or why the compressed chunk cannot be read. */
const char *nt_visit_open_top(visit *v, chunk_cursor *c, uint8_t **buf, uint32_t queue,
				   uint64_t off, uint64_t size)
{
	const nt_reader *r = v->r;
	if (r->data[off] != NT_KIND_ZCHUNK) {
		cursor_open_chunk(r, c, off, size);
		return NULL;
	}
	const char *why;
	section_given *g = v->given;
	while (g != NULL && g->next < g->nz && g->z[g->next].off < off) /* one it skipped */
		g->next++;
	if (g != NULL && g->next < g->nz && g->z[g->next].off == off) {
		why = g->z[g->next].why;
		if (why == NULL)
			cursor_open_buffer(r, c, g->buf[g->next], off);
		g->next++;
		return why;
	}
	if (v->ahead != NULL && nt_ahead_take(v->ahead, queue, off, buf, &why)) {
		if (why == NULL)
			cursor_open_buffer(r, c, *buf, off);
		return why;
	}
	why = decompress(v, buf, off, size);
	if (why == NULL)
		cursor_open_buffer(r, c, *buf, off);
	return why;
}

const char *nt_visit_reload(visit *v, chunk_cursor *c, uint8_t **buf)
{
	const char *why;
	uint64_t size = nt_top_record_size(v->r, c->report, &why);
	if (size == 0)
		return why;
	if ((why = decompress(v, buf, c->report, size)) == NULL)
		c->data = *buf;
	return why;
}

/* The events of a chunk that could not be read, as a gap from the ordinal the thread had
 * reached (*expected, advanced past them). Returns 1 when there are some. */
int nt_visit_lost_chunk(const nt_reader *r, uint64_t off, uint64_t *expected, nt_reader_gap *gap)
{
	const nt_chunk_header *h = nt_chunk_at(r, off);
	uint64_t end = h->first_event + h->event_count;
	if (end <= *expected)
		return 0;
	gap->thread = &r->threads[h->thread];
	gap->events = end - *expected;
	gap->time_ns = nt_ticks_to_ns(r, h->base_ticks);
	gap->offset = off;
	*expected = end;
	return 1;
}

/* Lost events before the chunk `c` just opened, given the ordinal the thread's previous
 * chunk ended at; fills *gap and returns 1 when there are some. */
int nt_visit_chunk_gap(const nt_reader *r, const chunk_cursor *c, uint64_t expected,
		     nt_reader_gap *gap)
{
	if (c->first <= expected)
		return 0;
	gap->thread = c->thread;
	gap->events = c->first - expected;
	gap->time_ns = nt_ticks_to_ns(r, c->base_ticks);
	gap->offset = c->offset;
	return 1;
}

/* Next top-level record at or after *off: returns its size, or 0 at the end of the file.
 * Damage is reported when `quiet` is 0, and then either stops (returns 0, *stopped = 1) or
 * resynchronises on the next chunk header. */
uint64_t nt_visit_next_top(visit *v, uint64_t *off, int quiet, int *stopped)
{
	nt_reader *r = v->r;
	while (*off < r->size) {
		const char *why = NULL;
		uint64_t size = nt_top_record_size(r, *off, &why);
		if (size != 0)
			return size;
		if (!quiet) {
			nt_visit_report(v, *off, why);
			if (v->policy == NT_ON_CORRUPT_STOP) {
				*stopped = 1;
				return 0;
			}
		}
		*off = nt_resync(r, *off);
	}
	return 0;
}

/* Opens an arena chunk, skipping what the saved stream already delivered. */
void nt_visit_open_arena(const nt_reader *r, chunk_cursor *c, uint64_t off)
{
	cursor_open_chunk(r, c, off, r->chunk_size);
	if (r->tail && c->thread->index < r->ncovered) {
		uint64_t covered = r->covered[c->thread->index];
		c->skip_below = covered;
		if (c->first < covered)
			c->first = covered; /* those events are not lost: no gap over them */
	}
}

int nt_reader_list_next(const nt_reader_arg *a, uint32_t *pos, const char **s, uint32_t *len)
{
	if (a->type != NT_ARG_STRING_LIST || *pos + 4 > a->value.list.bytes)
		return 0;
	uint32_t n = nt_load_le32(a->value.list.ptr + *pos);
	*s = (const char *)a->value.list.ptr + *pos + 4;
	*len = n;
	*pos += 4 + n;
	return 1;
}
