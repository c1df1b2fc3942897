/*
 * nt_trace2_import.c - a Git Trace2 EVENT stream (JSON lines) becomes a nanotrace archive.
 *
 * Every field the three renderings need is kept: each SID becomes a ProcessRecord (the
 * brief flag set when its events carry no time), each (SID, thread name) a Thread, each
 * (category, label or key, file, line) a CallSite, and each line one Trace2 record whose
 * arguments are the line's other fields, in Git's units (t_abs and t_rel in microseconds,
 * timer totals in nanoseconds, nesting as written). Times become ticks of a nanosecond
 * clock whose zero is the Unix epoch, so the reader returns them to the microsecond.
 *
 * The archive is a Stream-layout archive whose record stream keeps the input's line order:
 * a new chunk starts whenever the thread changes (header stream_ordered), because the order
 * of lines in a shared Trace2 file is itself information (several processes append to it)
 * that times alone cannot restore.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nt_archive_header_encode.h"
#include "nt_import_tables.h"
#include "nt_json.h"
#include "nt_reader_internal.h"

/* ---- importer state ----------------------------------------------------------------------*/

typedef struct import_thread {
	uint64_t events;   /* ordinal of its next event */
} import_thread;

typedef struct importer {
	nt_bytes durable, chunks;
	nt_name_table strings, callsites, processes, thread_names;
	uint32_t nstrings, ncallsites, nprocesses, nthreads;
	size_t *process_rec;     /* durable offset of each ProcessRecord (flags patched at end) */
	uint32_t *process_brief; /* by process: saw an event that lacks its time */
	uint64_t *process_ticks; /* by process: last time seen */
	import_thread *threads;  /* by thread index */
	uint32_t cur_thread;     /* thread of the open chunk, 0 = none */
	size_t chunk_at;         /* offset of the open chunk header in `chunks` */
	uint32_t chunk_events;
	uint64_t chunk_ticks;    /* ticks of the chunk's last event */
	uint64_t seq, events, first_ticks, last_ticks;
	uint32_t first_pid;
	int have_ticks;
	nt_trace2_import_error *err;
	unsigned long line;
	int oom;
} importer;

static int fail(importer *im, size_t column, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(importer *im, size_t column, const char *fmt, ...)
{
	va_list ap;
	char what[400];
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	im->err->line = im->line;
	im->err->column = column;
	snprintf(im->err->message, sizeof(im->err->message), "line %lu, column %zu: %s", im->line,
		 column, what);
	return 0;
}

static int oom(importer *im)
{
	im->oom = 1;
	return fail(im, 0, "out of memory");
}

static uint32_t intern(importer *im, const char *s, size_t len)
{
	if (len > NT_MAX_STRING_LENGTH)
		len = NT_MAX_STRING_LENGTH; /* only category, label and file names reach here */
	struct nt_slot *sl = nt_table_find(&im->strings, s, len);
	if (sl == NULL)
		return oom(im);
	if (sl->value)
		return sl->value;
	if (im->nstrings + 1 > NT_MAX_STRING_INDEX)
		return fail(im, 0, "more than %u distinct strings", NT_MAX_STRING_INDEX);
	uint32_t words = 1 + nt_words_for_bytes((uint32_t)len);
	nt_string_record *rec = nt_bytes_grow(&im->durable, words * 8u);
	if (rec == NULL)
		return oom(im);
	sl->value = ++im->nstrings;
	rec->kind = NT_KIND_STRING;
	rec->size_words = (uint8_t)words;
	rec->length = (uint16_t)len;
	rec->index = sl->value;
	memcpy(rec + 1, s, len);
	return sl->value;
}

static uint32_t callsite(importer *im, const char *cat, size_t catn, const char *name,
			 size_t namen, const char *file, size_t filen, uint32_t line, uint32_t repo)
{
	uint32_t c = intern(im, cat, catn), n = c ? intern(im, name, namen) : 0;
	uint32_t f = n ? intern(im, file, filen) : 0;
	if (f == 0)
		return 0;
	uint32_t key[5] = { c, n, f, line, repo };
	struct nt_slot *sl = nt_table_find(&im->callsites, key, sizeof(key));
	if (sl == NULL)
		return oom(im);
	if (sl->value)
		return sl->value;
	if (im->ncallsites + 1 > NT_MAX_CALLSITE_INDEX)
		return fail(im, 0, "more than %u distinct call sites", NT_MAX_CALLSITE_INDEX);
	nt_callsite_record *rec = nt_bytes_grow(&im->durable, sizeof(*rec));
	if (rec == NULL)
		return oom(im);
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

static uint32_t process_of(importer *im, const char *sid, size_t len)
{
	struct nt_slot *sl = nt_table_find(&im->processes, sid, len);
	if (sl == NULL)
		return oom(im);
	if (sl->value)
		return sl->value;
	if (len > NT_MAX_SID_LENGTH)
		return fail(im, 0, "SID longer than %u bytes", NT_MAX_SID_LENGTH);
	uint32_t index = im->nprocesses;
	if (index + 1 >= MAX_PROCESS_INDEX)
		return fail(im, 0, "more than %u processes", MAX_PROCESS_INDEX - 1);
	size_t *pr = realloc(im->process_rec, (index + 1) * sizeof(*pr));
	if (pr != NULL)
		im->process_rec = pr;
	uint32_t *pb = realloc(im->process_brief, (index + 1) * sizeof(*pb));
	if (pb != NULL)
		im->process_brief = pb;
	uint64_t *pt = realloc(im->process_ticks, (index + 1) * sizeof(*pt));
	if (pt != NULL)
		im->process_ticks = pt;
	if (pr == NULL || pb == NULL || pt == NULL)
		return oom(im);
	uint32_t words = 4 + nt_words_for_bytes((uint32_t)len);
	im->process_rec[index] = im->durable.len;
	im->process_brief[index] = 0;
	im->process_ticks[index] = 0;
	nt_process_record *rec = nt_bytes_grow(&im->durable, words * 8u);
	if (rec == NULL)
		return oom(im);
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

static uint32_t thread_of(importer *im, uint32_t process, const char *name, size_t len)
{
	if (len > NT_MAX_THREAD_NAME_LENGTH)
		return fail(im, 0, "thread name longer than %u bytes", NT_MAX_THREAD_NAME_LENGTH);
	char key[4 + NT_MAX_THREAD_NAME_LENGTH];
	memcpy(key, &process, 4);
	memcpy(key + 4, name, len);
	struct nt_slot *sl = nt_table_find(&im->thread_names, key, 4 + len);
	if (sl == NULL)
		return oom(im);
	if (sl->value)
		return sl->value;
	uint32_t index = im->nthreads + 1;
	import_thread *t = realloc(im->threads, (index + 1) * sizeof(*t));
	if (t == NULL)
		return oom(im);
	im->threads = t;
	im->threads[index] = (import_thread){ 0 };
	uint32_t words = 3 + nt_words_for_bytes((uint32_t)len);
	nt_thread_record *rec = nt_bytes_grow(&im->durable, words * 8u);
	if (rec == NULL)
		return oom(im);
	const nt_process_record *pr = (const void *)(im->durable.p + im->process_rec[process]);
	*rec = (nt_thread_record){ .kind = NT_KIND_THREAD, .size_words = (uint8_t)words,
				   .name_length = (uint16_t)len, .index = index, .pid = pr->pid,
				   .process = process };
	memcpy(rec + 1, name, len);
	im->nthreads = index;
	sl->value = index;
	return index;
}

/* ---- one line ----------------------------------------------------------------------------*/

enum field_kind { F_STR, F_INT, F_BOOL, F_LIST, F_RAW, F_USEC, F_NSEC };
typedef struct field_spec {
	const char *key;
	enum field_kind kind;
} field_spec;

/* The keys each message carries after the common ones (trace2-formats.md §4). category and
 * label / key / name go to the call site and are handled before these. */
static const field_spec *fields_of(nt_t2_event t)
{
	static const field_spec version[] = { { "evt", F_STR }, { "exe", F_STR }, { 0 } };
	static const field_spec start[] = { { "t_abs", F_USEC }, { "argv", F_LIST }, { 0 } };
	static const field_spec exit_[] = { { "t_abs", F_USEC }, { "code", F_INT }, { 0 } };
	static const field_spec signal_[] = { { "t_abs", F_USEC }, { "signo", F_INT }, { 0 } };
	static const field_spec error[] = { { "msg", F_STR }, { "fmt", F_STR }, { 0 } };
	static const field_spec path[] = { { "path", F_STR }, { 0 } };
	static const field_spec ancestry[] = { { "ancestry", F_LIST }, { 0 } };
	static const field_spec name[] = { { "name", F_STR }, { "hierarchy", F_STR }, { 0 } };
	static const field_spec alias[] = { { "alias", F_STR }, { "argv", F_LIST }, { 0 } };
	static const field_spec child_start[] = { { "child_id", F_INT }, { "child_class", F_STR },
		{ "hook_name", F_STR }, { "cd", F_STR }, { "use_shell", F_BOOL }, { "argv", F_LIST },
		{ 0 } };
	static const field_spec child_exit[] = { { "child_id", F_INT }, { "pid", F_INT },
		{ "code", F_INT }, { "ready", F_STR }, { "t_rel", F_USEC }, { 0 } };
	static const field_spec thread_exit[] = { { "t_rel", F_USEC }, { 0 } };
	static const field_spec exec[] = { { "exec_id", F_INT }, { "exe", F_STR }, { "argv", F_LIST },
		{ "code", F_INT }, { 0 } };
	static const field_spec param[] = { { "scope", F_STR }, { "param", F_STR },
		{ "value", F_STR }, { 0 } };
	static const field_spec repo[] = { { "worktree", F_STR }, { 0 } };
	static const field_spec region[] = { { "t_rel", F_USEC }, { "nesting", F_INT },
		{ "msg", F_STR }, { 0 } };
	static const field_spec data[] = { { "t_abs", F_USEC }, { "t_rel", F_USEC },
		{ "nesting", F_INT }, { "value", F_STR }, { 0 } };
	static const field_spec data_json[] = { { "t_abs", F_USEC }, { "t_rel", F_USEC },
		{ "nesting", F_INT }, { "value", F_RAW }, { 0 } };
	static const field_spec printf_[] = { { "t_abs", F_USEC }, { "msg", F_STR }, { 0 } };
	static const field_spec timer[] = { { "intervals", F_INT }, { "t_total", F_NSEC },
		{ "t_min", F_NSEC }, { "t_max", F_NSEC }, { 0 } };
	static const field_spec counter[] = { { "count", F_INT }, { 0 } };
	static const field_spec none[] = { { 0 } };
	switch (t) {
	case NT_T2_VERSION: return version;
	case NT_T2_START: return start;
	case NT_T2_EXIT:
	case NT_T2_ATEXIT: return exit_;
	case NT_T2_SIGNAL: return signal_;
	case NT_T2_ERROR: return error;
	case NT_T2_CMD_PATH: return path;
	case NT_T2_CMD_ANCESTRY: return ancestry;
	case NT_T2_CMD_NAME:
	case NT_T2_CMD_MODE: return name;
	case NT_T2_ALIAS: return alias;
	case NT_T2_CHILD_START: return child_start;
	case NT_T2_CHILD_EXIT:
	case NT_T2_CHILD_READY: return child_exit;
	case NT_T2_THREAD_EXIT: return thread_exit;
	case NT_T2_EXEC:
	case NT_T2_EXEC_RESULT: return exec;
	case NT_T2_DEF_PARAM: return param;
	case NT_T2_DEF_REPO: return repo;
	case NT_T2_REGION_ENTER:
	case NT_T2_REGION_LEAVE: return region;
	case NT_T2_DATA: return data;
	case NT_T2_DATA_JSON: return data_json;
	case NT_T2_PRINTF: return printf_;
	case NT_T2_TIMER:
	case NT_T2_TH_TIMER: return timer;
	case NT_T2_COUNTER:
	case NT_T2_TH_COUNTER: return counter;
	default: return none;
	}
}

/* Which key names the label of the call site ("" = none). */
static const char *label_key(nt_t2_event t)
{
	switch (t) {
	case NT_T2_REGION_ENTER:
	case NT_T2_REGION_LEAVE: return "label";
	case NT_T2_DATA:
	case NT_T2_DATA_JSON: return "key";
	case NT_T2_TIMER:
	case NT_T2_TH_TIMER:
	case NT_T2_COUNTER:
	case NT_T2_TH_COUNTER: return "name";
	default: return "";
	}
}

/* "2026-11-21T23:02:46.881067Z" to microseconds since the epoch. */
static int parse_time(const char *s, size_t n, int64_t *us)
{
	struct tm tm = { 0 };
	int y, mo, d, h, mi, sec, used = 0;
	long frac;
	char tail;
	if (n != 27 || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%6ld%c%n", &y, &mo, &d, &h, &mi, &sec,
			      &frac, &tail, &used) != 8 || used != 27 || tail != 'Z')
		return 0;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || frac < 0)
		return 0;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	time_t t = timegm(&tm);
	*us = (int64_t)t * 1000000 + frac;
	return 1;
}

#define MAX_MEMBERS 64

typedef struct line_ctx {
	nt_json_member m[MAX_MEMBERS];
	int n;
	uint8_t used[MAX_MEMBERS];
	const char *text;
} line_ctx;

static const nt_json_value *member(line_ctx *lc, const char *key)
{
	for (int i = 0; i < lc->n; i++)
		if (nt_json_string_is(&lc->m[i].key, key)) {
			lc->used[i] = 1;
			return &lc->m[i].value;
		}
	return NULL;
}

static size_t col(const line_ctx *lc, const nt_json_value *v)
{
	return (size_t)(v->p - lc->text) + 1;
}

/* Decodes a string value into a fresh buffer (caller frees). */
static char *decode(importer *im, const line_ctx *lc, const nt_json_value *v, const char *key,
		    size_t *len)
{
	if (v->type != NT_JSON_STRING) {
		fail(im, col(lc, v), "\"%s\" must be a string", key);
		return NULL;
	}
	char *buf = malloc(v->n + 1);
	if (buf == NULL) {
		oom(im);
		return NULL;
	}
	long n = nt_json_string_decode(v, buf);
	if (n < 0) {
		free(buf);
		fail(im, col(lc, v), "\"%s\" holds a lone UTF-16 surrogate escape", key);
		return NULL;
	}
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* Appends one argument to the record being built. */
static int put_arg(importer *im, nt_bytes *rec, const char *name, uint8_t type, uint32_t value32,
		   const void *payload, size_t plen)
{
	uint32_t name_idx = intern(im, name, strlen(name));
	if (name_idx == 0)
		return 0;
	uint32_t words = 1 + nt_words_for_bytes((uint32_t)plen);
	nt_arg_header *h = nt_bytes_grow(rec, words * 8u);
	if (h == NULL)
		return oom(im);
	*h = (nt_arg_header){ .type = type, .size_words = (uint8_t)(words > 255 ? 0 : words),
			      .name = (uint16_t)name_idx, .value32 = value32 };
	if (plen)
		memcpy(h + 1, payload, plen);
	return 1;
}

static int put_int(importer *im, nt_bytes *rec, const char *name, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		return put_arg(im, rec, name, NT_ARG_INT32, (uint32_t)(int32_t)v, NULL, 0);
	return put_arg(im, rec, name, NT_ARG_INT64, 0, &v, 8);
}

static int put_u64(importer *im, nt_bytes *rec, const char *name, uint64_t v)
{
	if (v <= UINT32_MAX)
		return put_arg(im, rec, name, NT_ARG_UINT32, (uint32_t)v, NULL, 0);
	return put_arg(im, rec, name, NT_ARG_UINT64, 0, &v, 8);
}

static int put_field(importer *im, line_ctx *lc, nt_bytes *rec, const field_spec *f,
		     const nt_json_value *v)
{
	int64_t i;
	uint64_t u;
	size_t len;
	switch (f->kind) {
	case F_INT:
		if (!nt_json_int64(v, &i))
			return fail(im, col(lc, v), "\"%s\" must be an integer", f->key);
		return put_int(im, rec, f->key, i);
	case F_BOOL:
		if (v->type != NT_JSON_TRUE && v->type != NT_JSON_FALSE)
			return fail(im, col(lc, v), "\"%s\" must be true or false", f->key);
		return put_arg(im, rec, f->key, NT_ARG_BOOL, v->type == NT_JSON_TRUE, NULL, 0);
	case F_USEC:
	case F_NSEC:
		if (!nt_json_fixed(v, 6, &u))
			return fail(im, col(lc, v),
				    "\"%s\" must be seconds with at most 6 decimals, not negative",
				    f->key);
		if (f->kind == F_NSEC) {
			if (u > UINT64_MAX / 1000)
				return fail(im, col(lc, v), "\"%s\" is too large", f->key);
			u *= 1000;
		}
		return put_u64(im, rec, f->key, u);
	case F_RAW:
		/* data_json: the JSON text is kept verbatim (Git writes it with jw_object_sub_jw). */
		return put_arg(im, rec, f->key, NT_ARG_STRING, (uint32_t)v->n, v->p, v->n);
	case F_STR: {
		char *s = decode(im, lc, v, f->key, &len);
		if (s == NULL)
			return 0;
		int ok = put_arg(im, rec, f->key, NT_ARG_STRING, (uint32_t)len, s, len);
		free(s);
		return ok;
	}
	case F_LIST: {
		if (v->type != NT_JSON_ARRAY)
			return fail(im, col(lc, v), "\"%s\" must be an array of strings", f->key);
		nt_bytes list = { 0 };
		size_t pos = 0;
		uint32_t count = 0;
		nt_json_value e;
		int ok = 1;
		while (ok && nt_json_array_next(v, &pos, &e)) {
			char *s = decode(im, lc, &e, f->key, &len);
			uint8_t *at = s ? nt_bytes_grow(&list, 4 + len) : NULL;
			if (s != NULL && at == NULL)
				oom(im);
			if (at != NULL) {
				uint32_t l32 = (uint32_t)len;
				memcpy(at, &l32, 4);
				memcpy(at + 4, s, len);
				count++;
			}
			ok = at != NULL;
			free(s);
		}
		if (ok)
			ok = put_arg(im, rec, f->key, NT_ARG_STRING_LIST, count, list.p, list.len);
		free(list.p);
		return ok;
	}
	}
	return 0;
}

static int emit_record(importer *im, uint32_t thread, uint64_t ticks, const nt_bytes *rec)
{
	if (thread != im->cur_thread) {
		if (im->cur_thread != 0) {
			nt_chunk_header *h = (void *)(im->chunks.p + im->chunk_at);
			h->size_bytes = (uint32_t)(im->chunks.len - im->chunk_at);
			h->event_count = im->chunk_events;
		}
		im->chunk_at = im->chunks.len;
		nt_chunk_header *h = nt_bytes_grow(&im->chunks, sizeof(*h));
		if (h == NULL)
			return oom(im);
		*h = (nt_chunk_header){ .kind = NT_KIND_CHUNK, .thread = thread,
					.claim = (++im->seq + 1) << 1, .base_ticks = ticks,
					.first_event = im->threads[thread].events };
		im->cur_thread = thread;
		im->chunk_events = 0;
		im->chunk_ticks = ticks;
	}
	if (ticks < im->chunk_ticks || ticks - im->chunk_ticks > UINT32_MAX) {
		/* Times of a shared file go backwards across processes: a Timestamp resets. */
		nt_timestamp_record *ts = nt_bytes_grow(&im->chunks, sizeof(*ts));
		if (ts == NULL)
			return oom(im);
		*ts = (nt_timestamp_record){ .kind = NT_KIND_TIMESTAMP, .size_words = 2,
					     .ticks = ticks };
		im->chunk_ticks = ticks;
	}
	uint8_t *p = nt_bytes_grow(&im->chunks, rec->len);
	if (p == NULL)
		return oom(im);
	memcpy(p, rec->p, rec->len);
	nt_event_record *e = (void *)p;
	e->delta = (uint32_t)(ticks - im->chunk_ticks);
	im->chunk_ticks = ticks;
	im->chunk_events++;
	im->threads[thread].events++;
	im->events++;
	return 1;
}

static int import_line(importer *im, const char *text, size_t n)
{
	line_ctx lc = { .text = text };
	const char *jerr = NULL;
	size_t at = 0;
	lc.n = nt_json_object(text, n, lc.m, MAX_MEMBERS, &jerr, &at);
	if (lc.n < 0)
		return fail(im, at + 1, "%s", jerr);

	const nt_json_value *ev = member(&lc, "event"), *sid = member(&lc, "sid"),
			    *thread = member(&lc, "thread");
	if (ev == NULL || sid == NULL || thread == NULL)
		return fail(im, 1, "missing \"%s\" (every Trace2 event has event, sid and thread)",
			    ev == NULL ? "event" : sid == NULL ? "sid" : "thread");
	int type = -1;
	for (int t = 0; t < NT_T2_EVENT_COUNT; t++)
		if (nt_json_string_is(ev, nt_t2_event_names[t]))
			type = t;
	if (type < 0)
		return fail(im, col(&lc, ev), "unknown Trace2 event %.*s", (int)(ev->n < 64 ? ev->n : 64),
			    ev->p);

	size_t sid_len, th_len;
	char *sid_s = decode(im, &lc, sid, "sid", &sid_len);
	char *th_s = sid_s ? decode(im, &lc, thread, "thread", &th_len) : NULL;
	uint32_t proc = th_s ? process_of(im, sid_s, sid_len) : 0;
	uint32_t tidx = proc ? thread_of(im, proc - 1, th_s, th_len) : 0;
	free(sid_s);
	free(th_s);
	if (tidx == 0)
		return 0;
	proc--;

	/* Time: the line's own, else the process's last (a brief stream has almost none). */
	uint64_t ticks = im->process_ticks[proc];
	const nt_json_value *tv = member(&lc, "time");
	if (tv != NULL) {
		int64_t us;
		if (tv->type != NT_JSON_STRING || !parse_time(tv->p + 1, tv->n - 2, &us) || us < 0)
			return fail(im, col(&lc, tv), "\"time\" must be UTC like "
						      "\"2026-11-21T23:02:46.881067Z\"");
		ticks = (uint64_t)us * 1000u;
		im->process_ticks[proc] = ticks;
	} else if (type != NT_T2_VERSION && type != NT_T2_ATEXIT) {
		im->process_brief[proc] = 1;
	}
	if (!im->have_ticks || ticks < im->first_ticks)
		im->first_ticks = ticks;
	if (!im->have_ticks || ticks > im->last_ticks)
		im->last_ticks = ticks;
	im->have_ticks = 1;

	/* Call site: file:line, and the category and label / key / name. */
	const nt_json_value *fv = member(&lc, "file"), *lv = member(&lc, "line");
	const nt_json_value *cv = member(&lc, "category");
	const char *lk = label_key((nt_t2_event)type);
	const nt_json_value *labv = lk[0] ? member(&lc, lk) : NULL;
	char *file = NULL, *cat = NULL, *lab = NULL;
	size_t file_len = 0, cat_len = 0, lab_len = 0;
	int64_t line = 0;
	int ok = 1;
	if (fv != NULL && (file = decode(im, &lc, fv, "file", &file_len)) == NULL)
		ok = 0;
	if (ok && lv != NULL && (!nt_json_int64(lv, &line) || line < 0 || line > UINT32_MAX))
		ok = fail(im, col(&lc, lv), "\"line\" must be a line number");
	if (ok && cv != NULL && (cat = decode(im, &lc, cv, "category", &cat_len)) == NULL)
		ok = 0;
	if (ok && labv != NULL && (lab = decode(im, &lc, labv, lk, &lab_len)) == NULL)
		ok = 0;
	if (ok && ((file && memchr(file, 0, file_len)) || (cat && memchr(cat, 0, cat_len)) ||
		   (lab && memchr(lab, 0, lab_len))))
		ok = fail(im, 1, "a NUL character in file, category or %s is not supported", lk);
	/* The repository belongs to the call site (CallSiteRecord.repo: id + 1). */
	const nt_json_value *rv = member(&lc, "repo");
	int64_t repo = -1;
	if (ok && rv != NULL && (!nt_json_int64(rv, &repo) || repo < 0 || repo >= UINT32_MAX))
		ok = fail(im, col(&lc, rv), "\"repo\" must be a repository id");
	uint32_t cs = ok ? callsite(im, cat ? cat : "", cat_len, lab ? lab : "", lab_len,
				    file ? file : "", file_len, (uint32_t)line, (uint32_t)(repo + 1))
			 : 0;

	nt_bytes rec = { 0 };
	nt_event_record *head = cs ? nt_bytes_grow(&rec, sizeof(*head)) : NULL;
	if (cs && head == NULL)
		oom(im);
	if (head != NULL) {
		*head = (nt_event_record){ .kind = (uint8_t)(NT_KIND_T2_FIRST + type),
					   .callsite = (uint16_t)cs };
		/* A category or label that is present but empty cannot live in the call site,
		 * where "" means none. */
		ok = 1;
		if (cat != NULL && cat_len == 0)
			ok = put_arg(im, &rec, "category", NT_ARG_STRING, 0, NULL, 0);
		if (ok && lab != NULL && lab_len == 0)
			ok = put_arg(im, &rec, "label", NT_ARG_STRING, 0, NULL, 0);
		for (const field_spec *f = fields_of((nt_t2_event)type); ok && f->key; f++) {
			const nt_json_value *v = member(&lc, f->key);
			if (v != NULL)
				ok = put_field(im, &lc, &rec, f, v);
		}
		for (int i = 0; ok && i < lc.n; i++)
			if (!lc.used[i])
				ok = fail(im, col(&lc, &lc.m[i].key),
					  "key %.*s is not part of a Trace2 %s event",
					  (int)(lc.m[i].key.n < 64 ? lc.m[i].key.n : 64),
					  lc.m[i].key.p, nt_t2_event_names[type]);
		if (ok && rec.len > NT_MAX_RECORD_BYTES)
			ok = fail(im, 1, "the %s event takes %zu bytes; one record holds at most %u",
				  nt_t2_event_names[type], rec.len, NT_MAX_RECORD_BYTES);
		if (ok) {
			head = (void *)rec.p;
			head->size_words = (uint8_t)(rec.len / 8);
			ok = emit_record(im, tidx, ticks, &rec);
		}
	} else {
		ok = 0;
	}
	free(rec.p);
	free(file);
	free(cat);
	free(lab);
	return ok;
}

/* ---- the archive -------------------------------------------------------------------------*/

static int finish_archive(importer *im, void **out, size_t *out_size)
{
	if (im->cur_thread != 0) {
		nt_chunk_header *h = (void *)(im->chunks.p + im->chunk_at);
		h->size_bytes = (uint32_t)(im->chunks.len - im->chunk_at);
		h->event_count = im->chunk_events;
	}
	for (uint32_t i = 0; i < im->nprocesses; i++) {
		nt_process_record *pr = (void *)(im->durable.p + im->process_rec[i]);
		if (im->process_brief[i])
			pr->flags |= NT_PROCESS_BRIEF;
	}
	nt_archive_info info;
	memset(&info, 0, sizeof(info));
	info.format_major = NT_FORMAT_MAJOR;
	info.format_minor = NT_FORMAT_MINOR;
	snprintf(info.producer, sizeof(info.producer), "trace-import (nanotrace %s)", "0.1.0");
	snprintf(info.process_name, sizeof(info.process_name), "%s", "git trace2 event stream");
	info.clock_source = NT_CLOCK_MONOTONIC; /* ticks are ns since the epoch */
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
		return fail(im, 0, "internal error: the archive header does not fit");
	info.data_offset = hlen;
	hlen = nt_header_encode(&info, header, sizeof(header), NULL);
	size_t total = hlen + im->durable.len + im->chunks.len;
	uint8_t *buf = malloc(total ? total : 1);
	if (buf == NULL)
		return oom(im);
	memcpy(buf, header, hlen);
	if (im->durable.len)
		memcpy(buf + hlen, im->durable.p, im->durable.len);
	if (im->chunks.len)
		memcpy(buf + hlen + im->durable.len, im->chunks.p, im->chunks.len);
	*out = buf;
	*out_size = total;
	return 1;
}

int nt_trace2_import(const void *data, size_t size, void **archive, size_t *archive_size,
		     nt_trace2_import_error *err)
{
	nt_trace2_import_error dummy;
	if (err == NULL)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	if (archive == NULL || archive_size == NULL || (data == NULL && size != 0)) {
		snprintf(err->message, sizeof(err->message), "invalid argument");
		return -1;
	}
	*archive = NULL;
	*archive_size = 0;
	importer im = { .err = err };
	const char *p = data, *end = p ? p + size : NULL;
	int ok = 1;
	while (ok && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		im.line++;
		size_t n = (size_t)(eol - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		/* Blank lines carry nothing (trace2receiver skips them too). */
		int blank = 1;
		for (size_t i = 0; i < n && blank; i++)
			blank = p[i] == ' ' || p[i] == '\t';
		if (!blank)
			ok = import_line(&im, p, n);
		p = nl ? nl + 1 : end;
	}
	if (ok)
		ok = finish_archive(&im, archive, archive_size);
	free(im.durable.p);
	free(im.chunks.p);
	nt_table_free(&im.strings);
	nt_table_free(&im.callsites);
	nt_table_free(&im.processes);
	nt_table_free(&im.thread_names);
	free(im.process_rec);
	free(im.process_brief);
	free(im.process_ticks);
	free(im.threads);
	if (ok)
		err->lines = im.line;
	return ok ? 0 : -1;
}
