/*
 * nt_trace2_import.c - the archive a Git Trace2 EVENT import builds: durable records,
 * chunks and the header (nt_trace2_import_line.c maps each line, nt_trace2_import_files.c
 * chooses the order of the lines).
 *
 * Every field the three renderings need is kept: each SID becomes a ProcessRecord (the
 * brief flag set when its events carry no time), each (SID, thread name) a Thread, each
 * (category, label or key, file, line) a CallSite, and each line one Trace2 record whose
 * arguments are the line's other fields, in Git's units (t_abs and t_rel in microseconds,
 * timer totals in nanoseconds, nesting as written). Times become ticks of a nanosecond
 * clock whose zero is the Unix epoch, so the reader returns them to the microsecond.
 *
 * The archive is a Stream-layout archive whose record stream keeps the lines' order: a new
 * chunk starts whenever the thread changes (header stream_ordered), because the order of
 * lines in a shared Trace2 file is itself information (several processes append to it)
 * that times alone cannot restore. A chunk also ends before it would pass
 * NT_MAX_ZCHUNK_BYTES, so that every chunk can be compressed (nt_archive_compress).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/nt_archive_header_encode.h"
#include "reader/common/nt_grow.h"
#include "nt_trace2_import.h"
#include "format/nt_version.h"

/* ---- durable records ------------------------------------------------------------------*/

int nt_imp_fail(nt_importer *im, size_t column, const char *fmt, ...)
{
	va_list ap;
	char what[400];
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	im->err->line = im->line;
	im->err->column = column;
	snprintf(im->err->message, sizeof(im->err->message), "%s%sline %lu, column %zu: %s",
		 im->input ? im->input : "", im->input ? ": " : "", im->line, column, what);
	return 0;
}

int nt_imp_oom(nt_importer *im)
{
	im->oom = 1;
	return nt_imp_fail(im, 0, "out of memory");
}

uint32_t nt_imp_intern(nt_importer *im, const char *s, size_t len)
{
	if (len > NT_MAX_STRING_LENGTH)
		len = NT_MAX_STRING_LENGTH; /* only category, label and file names reach here */
	struct nt_slot *sl = nt_table_find(&im->strings, s, len);
	if (sl == NULL)
		return nt_imp_oom(im);
	if (sl->value)
		return sl->value;
	if (im->nstrings + 1 > NT_MAX_STRING_INDEX)
		return nt_imp_fail(im, 0, "more than %u distinct strings", NT_MAX_STRING_INDEX);
	uint32_t words = 1 + nt_words_for_bytes((uint32_t)len);
	nt_string_record *rec = nt_bytes_grow(&im->durable, words * 8u);
	if (rec == NULL)
		return nt_imp_oom(im);
	sl->value = ++im->nstrings;
	rec->kind = NT_KIND_STRING;
	rec->size_words = (uint8_t)words;
	rec->length = (uint16_t)len;
	rec->index = sl->value;
	memcpy(rec + 1, s, len);
	return sl->value;
}

uint32_t nt_imp_callsite(nt_importer *im, const char *cat, size_t catn, const char *name,
			 size_t namen, const char *file, size_t filen, uint32_t line, uint32_t repo)
{
	uint32_t c = nt_imp_intern(im, cat, catn), n = c ? nt_imp_intern(im, name, namen) : 0;
	uint32_t f = n ? nt_imp_intern(im, file, filen) : 0;
	if (f == 0)
		return 0;
	uint32_t key[5] = { c, n, f, line, repo };
	struct nt_slot *sl = nt_table_find(&im->callsites, key, sizeof(key));
	if (sl == NULL)
		return nt_imp_oom(im);
	if (sl->value)
		return sl->value;
	if (im->ncallsites + 1 > NT_MAX_CALLSITE_INDEX)
		return nt_imp_fail(im, 0, "more than %u distinct call sites", NT_MAX_CALLSITE_INDEX);
	nt_callsite_record *rec = nt_bytes_grow(&im->durable, sizeof(*rec));
	if (rec == NULL)
		return nt_imp_oom(im);
	sl->value = ++im->ncallsites;
	*rec = (nt_callsite_record){ .kind = NT_KIND_CALLSITE, .size_words = 3,
				     .index = (uint16_t)sl->value, .line = line, .category = c,
				     .name = n, .file = f, .repo = repo };
	return sl->value;
}

/* "...-P%08x" at the end of the SID's last component: Git's pid. */
static uint32_t pid_of_sid(const char *sid, size_t len)
{
	size_t i = len;
	while (i > 0 && sid[i - 1] != '-' && sid[i - 1] != '/')
		i--;
	if (i == 0 || sid[i - 1] != '-' || i >= len || sid[i] != 'P' || len - i != 9)
		return 0;
	uint32_t pid = 0;
	for (size_t j = i + 1; j < len; j++) {
		char c = sid[j];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (v < 0)
			return 0;
		pid = pid << 4 | (uint32_t)v;
	}
	return pid;
}

uint32_t nt_imp_process(nt_importer *im, const char *sid, size_t len)
{
	struct nt_slot *sl = nt_table_find(&im->processes, sid, len);
	if (sl == NULL)
		return nt_imp_oom(im);
	if (sl->value)
		return sl->value;
	if (len > NT_MAX_SID_LENGTH)
		return nt_imp_fail(im, 0, "SID longer than %u bytes", NT_MAX_SID_LENGTH);
	uint32_t index = im->nprocesses;
	if (index + 1 >= NT_MAX_PROCESS_INDEX)
		return nt_imp_fail(im, 0, "more than %u processes", NT_MAX_PROCESS_INDEX - 1);
	if (!nt_grow(&im->procs, &im->procs_cap, index + 1, sizeof(*im->procs)))
		return nt_imp_oom(im);
	uint32_t words = 4 + nt_words_for_bytes((uint32_t)len);
	im->procs[index] = (nt_imp_proc){ .rec = im->durable.len };
	nt_process_record *rec = nt_bytes_grow(&im->durable, words * 8u);
	if (rec == NULL)
		return nt_imp_oom(im);
	*rec = (nt_process_record){ .kind = NT_KIND_PROCESS, .size_words = (uint8_t)words,
				    .sid_length = (uint16_t)len, .index = index,
				    .pid = pid_of_sid(sid, len) };
	memcpy(rec + 1, sid, len);
	if (index == 0)
		im->first_pid = rec->pid;
	im->nprocesses++;
	sl->value = index + 1; /* 0 = new */
	return sl->value;
}

uint32_t nt_imp_thread(nt_importer *im, uint32_t process, const char *name, size_t len)
{
	if (len > NT_MAX_THREAD_NAME_LENGTH)
		return nt_imp_fail(im, 0, "thread name longer than %u bytes", NT_MAX_THREAD_NAME_LENGTH);
	char key[4 + NT_MAX_THREAD_NAME_LENGTH];
	memcpy(key, &process, 4);
	memcpy(key + 4, name, len);
	struct nt_slot *sl = nt_table_find(&im->thread_names, key, 4 + len);
	if (sl == NULL)
		return nt_imp_oom(im);
	if (sl->value)
		return sl->value;
	uint32_t index = im->nthreads + 1;
	if (!nt_grow(&im->thread_events, &im->thread_events_cap, index + 1,
		     sizeof(*im->thread_events)))
		return nt_imp_oom(im);
	im->thread_events[index] = 0;
	uint32_t words = 3 + nt_words_for_bytes((uint32_t)len);
	nt_thread_record *rec = nt_bytes_grow(&im->durable, words * 8u);
	if (rec == NULL)
		return nt_imp_oom(im);
	const nt_process_record *pr = (const void *)(im->durable.p + im->procs[process].rec);
	*rec = (nt_thread_record){ .kind = NT_KIND_THREAD, .size_words = (uint8_t)words,
				   .name_length = (uint16_t)len, .index = index, .pid = pr->pid,
				   .process = process };
	memcpy(rec + 1, name, len);
	im->nthreads = index;
	sl->value = index;
	return index;
}

int nt_imp_emit(nt_importer *im, uint32_t thread, uint64_t ticks, const nt_bytes *rec)
{
	/* Room for the record and a Timestamp before it, within a compressible chunk. */
	size_t need = rec->len + sizeof(nt_timestamp_record);
	if (thread != im->cur_thread || im->chunks.len - im->chunk_at + need > NT_MAX_ZCHUNK_BYTES) {
		if (im->cur_thread != 0) {
			nt_chunk_header *h = (void *)(im->chunks.p + im->chunk_at);
			h->size_bytes = (uint32_t)(im->chunks.len - im->chunk_at);
			h->event_count = im->chunk_events;
		}
		im->chunk_at = im->chunks.len;
		nt_chunk_header *h = nt_bytes_grow(&im->chunks, sizeof(*h));
		if (h == NULL)
			return nt_imp_oom(im);
		*h = (nt_chunk_header){ .kind = NT_KIND_CHUNK, .thread = thread,
					.claim = (++im->seq + 1) << 1, .base_ticks = ticks,
					.first_event = im->thread_events[thread] };
		im->cur_thread = thread;
		im->chunk_events = 0;
		im->chunk_ticks = ticks;
	}
	if (ticks < im->chunk_ticks || ticks - im->chunk_ticks > UINT32_MAX) {
		/* Times of a shared file go backwards across processes: a Timestamp resets. */
		nt_timestamp_record *ts = nt_bytes_grow(&im->chunks, sizeof(*ts));
		if (ts == NULL)
			return nt_imp_oom(im);
		*ts = (nt_timestamp_record){ .kind = NT_KIND_TIMESTAMP, .size_words = 2,
					     .ticks = ticks };
		im->chunk_ticks = ticks;
	}
	uint8_t *p = nt_bytes_grow(&im->chunks, rec->len);
	if (p == NULL)
		return nt_imp_oom(im);
	memcpy(p, rec->p, rec->len);
	nt_event_record *e = (void *)p;
	e->delta = (uint32_t)(ticks - im->chunk_ticks);
	im->chunk_ticks = ticks;
	im->chunk_events++;
	im->thread_events[thread]++;
	im->events++;
	return 1;
}

/* ---- the archive -------------------------------------------------------------------------*/

int nt_imp_finish(nt_importer *im, void **out, size_t *out_size)
{
	if (im->cur_thread != 0) {
		nt_chunk_header *h = (void *)(im->chunks.p + im->chunk_at);
		h->size_bytes = (uint32_t)(im->chunks.len - im->chunk_at);
		h->event_count = im->chunk_events;
	}
	for (uint32_t i = 0; i < im->nprocesses; i++) {
		nt_process_record *pr = (void *)(im->durable.p + im->procs[i].rec);
		if (im->procs[i].brief)
			pr->flags |= NT_PROCESS_BRIEF;
	}
	nt_archive_info info;
	memset(&info, 0, sizeof(info));
	info.format_major = NT_FORMAT_MAJOR;
	info.format_minor = NT_FORMAT_MINOR;
	snprintf(info.producer, sizeof(info.producer), "trace-import (nanotrace %s)", NT_VERSION_STRING);
	snprintf(info.process_name, sizeof(info.process_name), "%s", "git trace2 event stream");
	info.clock_source = NT_CLOCK_SOURCE_MONOTONIC; /* ticks are ns since the epoch */
	info.ticks_per_second = 1000000000u;
	info.start_ticks = info.start_monotonic_ns = info.start_realtime_ns = im->first_ticks;
	info.finish_ticks = info.finish_monotonic_ns = info.finish_realtime_ns = im->last_ticks;
	info.pid = im->first_pid;
	info.final_state = NT_FINAL_FINISHED;
	info.ended_by = NT_END_FINISHED;
	info.layout = NT_LAYOUT_STREAM;
	info.events_written = im->events;
	info.chunks_claimed = im->seq;
	info.stream_ordered = 1;
	uint8_t header[1024];
	size_t hlen = nt_header_encode(&info, header, sizeof(header), NULL);
	if (hlen == 0)
		return nt_imp_fail(im, 0, "internal error: the archive header does not fit");
	info.data_offset = hlen;
	hlen = nt_header_encode(&info, header, sizeof(header), NULL);
	size_t total = hlen + im->durable.len + im->chunks.len;
	uint8_t *buf = malloc(total ? total : 1);
	if (buf == NULL)
		return nt_imp_oom(im);
	memcpy(buf, header, hlen);
	if (im->durable.len)
		memcpy(buf + hlen, im->durable.p, im->durable.len);
	if (im->chunks.len)
		memcpy(buf + hlen + im->durable.len, im->chunks.p, im->chunks.len);
	*out = buf;
	*out_size = total;
	return 1;
}

void nt_imp_free(nt_importer *im)
{
	free(im->durable.p);
	free(im->chunks.p);
	free(im->record.p);
	nt_table_free(&im->strings);
	nt_table_free(&im->callsites);
	nt_table_free(&im->processes);
	nt_table_free(&im->thread_names);
	free(im->procs);
	free(im->thread_events);
}
