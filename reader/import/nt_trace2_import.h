/*
 * nt_trace2_import.h - the importer's state, shared by its three mechanisms (not installed):
 *   nt_trace2_import.c        the archive being built: durable records, chunks, the header;
 *   nt_trace2_import_line.c   one EVENT line (JSON) becomes one Trace2 record;
 *   nt_trace2_import_files.c  several streams (files, directories) merged into one.
 */
#ifndef NT_TRACE2_IMPORT_H
#define NT_TRACE2_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "nt_import_tables.h"
#include <nanotrace/nanotrace_reader.h>
#include "format/nt_record.h"

/* What the importer tracks per process. */
typedef struct nt_imp_proc {
	size_t rec;     /* durable offset of its ProcessRecord (flags patched at end) */
	int brief;      /* saw an event that lacks its time */
	uint64_t ticks; /* last time seen */
} nt_imp_proc;

typedef struct nt_importer {
	nt_bytes durable, chunks;
	nt_bytes record;         /* the record of the line being imported (reused) */
	nt_name_table strings, callsites, processes, thread_names;
	uint32_t nstrings, ncallsites, nprocesses, nthreads;
	nt_imp_proc *procs;      /* by process index */
	uint64_t *thread_events; /* by thread index: ordinal of its next event */
	size_t procs_cap, thread_events_cap;
	uint32_t cur_thread;     /* thread of the open chunk, 0 = none */
	size_t chunk_at;         /* offset of the open chunk header in `chunks` */
	uint32_t chunk_events;
	uint64_t chunk_ticks;    /* ticks of the chunk's last event */
	uint64_t seq, events, first_ticks, last_ticks;
	uint32_t first_pid;
	int have_ticks;
	nt_trace2_import_error *err;
	const char *input;       /* name of the stream being read, for messages (NULL: none) */
	unsigned long line;      /* its line being read */
	int oom;
	nt_trace2_import_progress progress; /* NULL: none (nt_trace2_import_paths_progress) */
	void *progress_ctx;
	uint64_t done_bytes, total_bytes, next_report;
} nt_importer;

/* Fills im->err ("[input: ]line L, column C: what"); returns 0 so callers can return it. */
int nt_imp_fail(nt_importer *im, size_t column, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int nt_imp_oom(nt_importer *im);

/* Index of the interned string, or 0 after a failure. */
uint32_t nt_imp_intern(nt_importer *im, const char *s, size_t len);
/* Index of the call site, or 0 after a failure. */
uint32_t nt_imp_callsite(nt_importer *im, const char *cat, size_t catn, const char *name,
			 size_t namen, const char *file, size_t filen, uint32_t line,
			 uint32_t repo);
/* Process index + 1 of the SID, or 0 after a failure. */
uint32_t nt_imp_process(nt_importer *im, const char *sid, size_t len);
/* Thread index of (process, name), or 0 after a failure. */
uint32_t nt_imp_thread(nt_importer *im, uint32_t process, const char *name, size_t len);
/* Appends a built record (event header + arguments) to the thread's chunk, dated `ticks`. */
int nt_imp_emit(nt_importer *im, uint32_t thread, uint64_t ticks, const nt_bytes *rec);

/* nt_trace2_import_line.c: one non-blank line. Returns 1, or 0 with im->err filled. */
int nt_imp_line(nt_importer *im, const char *text, size_t n);
/* The line's "time" in microseconds since the epoch: 1, or 0 when it has none (or is not
 * a JSON object: the import itself reports that). */
int nt_imp_line_time(const char *text, size_t n, int64_t *us);
/* Is the line blank (spaces and tabs only)? Blank lines carry nothing (trace2receiver skips
 * them too). */
int nt_imp_blank(const char *text, size_t n);

/* The archive from everything imported so far. */
int nt_imp_finish(nt_importer *im, void **out, size_t *out_size);
void nt_imp_free(nt_importer *im);

#endif /* NT_TRACE2_IMPORT_H */
