/*
 * nt_trace2_import_line.c - one Trace2 EVENT line (a JSON object) becomes one Trace2 record.
 *
 * The keys Git writes for each message (the table of format/nt_t2_fields.h) are mapped to
 * the record's call site (category, label / key / name, file, line, repo) and typed
 * arguments, in Git's units. Every other key, one that only another message has included,
 * is kept as it was written (a JsonValue argument holding the raw
 * value and the key's position in the line), and an event this version does not know is
 * kept whole as a Trace2Unknown record: newer Git versions add keys and events, and an
 * import must not lose what it cannot interpret. Empty and absent stay different: an empty
 * string is an empty argument, an absent key no argument.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/nt_arg_encode.h"
#include "nt_json.h"
#include "nt_trace2_import.h"
#include "reader/trace2/nt_trace2.h"

/* The rows of a message an import records as arguments: its own keys and Git's values of
 * what the reader would otherwise derive (t_abs, t_rel, nesting). The call site's rows
 * (category, label / key / name) are handled before these. */
static int recorded_row(const t2_field *f)
{
	return f->store != NT_T2_STORE_CATEGORY && f->store != NT_T2_STORE_LABEL;
}

/* Which key names the label of the call site ("" = none). */
static const char *label_key(nt_t2_event t)
{
	const t2_field *f = t2_field_stored(t, NT_T2_STORE_LABEL);
	return f != NULL ? f->key : "";
}

/* The `count` decimal digits at s as a number, or -1 when one is not a digit. */
static long digits(const char *s, int count)
{
	long v = 0;
	for (int i = 0; i < count; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (H. Hinnant's
 * days_from_civil): what timegm() computes for 1 <= m <= 12, 1 <= d <= 31 (a day past a
 * month's end counts on into the next month, as timegm does), in a few multiplications. */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* "2026-11-21T23:02:46.881067Z" (exactly Git's 27 bytes) to microseconds since the epoch.
 * Reads the n bytes at s and nothing else: no NUL needed, no library parser (sscanf needs
 * a C string, and on the line itself took strlen of the rest of the input per line). */
static int parse_time(const char *s, size_t n, int64_t *us)
{
	static const uint8_t at[] = { 4, 7, 10, 13, 16, 19, 26 }; /* where "--T::.Z" stand */
	if (n != 27)
		return 0;
	for (size_t i = 0; i < sizeof(at); i++)
		if (s[at[i]] != "--T::.Z"[i])
			return 0;
	long y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
	long h = digits(s + 11, 2), mi = digits(s + 14, 2), sec = digits(s + 17, 2);
	long frac = digits(s + 20, 6);
	if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
	    mi > 59 || sec < 0 || sec > 60 || frac < 0)
		return 0;
	int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	*us = secs * 1000000 + frac;
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
	size_t n = strlen(key);
	for (int i = 0; i < lc->n; i++)
		if (nt_json_string_is_n(&lc->m[i].key, key, n)) {
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
static char *decode(nt_importer *im, const line_ctx *lc, const nt_json_value *v, const char *key,
		    size_t *len)
{
	if (v->type != NT_JSON_STRING) {
		nt_imp_fail(im, col(lc, v), "\"%s\" must be a string", key);
		return NULL;
	}
	char *buf = malloc(v->n + 1);
	if (buf == NULL) {
		nt_imp_oom(im);
		return NULL;
	}
	long n = nt_json_string_decode(v, buf);
	if (n < 0) {
		free(buf);
		nt_imp_fail(im, col(lc, v), "\"%s\" holds a lone UTF-16 surrogate escape", key);
		return NULL;
	}
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* Room at the end of the record for an argument named `name` with `plen` payload bytes:
 * the place to encode it (zeroed) and the name's index in *name_idx, or NULL after a
 * failure. */
static uint64_t *grow_arg(nt_importer *im, nt_bytes *rec, const char *name, size_t name_len,
			  size_t plen, uint32_t *name_idx)
{
	if (plen > NT_MAX_RECORD_BYTES) {
		nt_imp_fail(im, 1, "a value of %zu bytes does not fit one record, which holds at "
				   "most %u bytes", plen, NT_MAX_RECORD_BYTES);
		return NULL;
	}
	*name_idx = nt_imp_intern(im, name, name_len);
	if (*name_idx == 0)
		return NULL;
	uint64_t *q = nt_bytes_grow(rec, (1 + nt_words_for_bytes((uint32_t)plen)) * 8u);
	if (q == NULL)
		nt_imp_oom(im);
	return q;
}

/* Appends one fixed-size argument (nt_arg_put_fixed: an integer that fits 32 bits takes
 * one word, else two). */
static int put_fixed(nt_importer *im, nt_bytes *rec, const char *name, unsigned type,
		     uint64_t v)
{
	uint32_t name_idx;
	uint64_t *q = grow_arg(im, rec, name, strlen(name), (NT_ARG_FIXED_MAX_WORDS - 1) * 8u,
			       &name_idx);
	if (q == NULL)
		return 0;
	uint64_t *end = nt_arg_put_fixed(q, type, name_idx, v);
	rec->len -= (size_t)(q + NT_ARG_FIXED_MAX_WORDS - end) * 8u;
	return 1;
}

/* Appends an argument of `type` whose payload is `len` bytes at p (value32 in its header). */
static int put_bytes(nt_importer *im, nt_bytes *rec, const char *name, unsigned type,
		     uint32_t value32, const void *p, size_t len)
{
	uint32_t name_idx;
	uint64_t *q = grow_arg(im, rec, name, strlen(name), len, &name_idx);
	if (q != NULL)
		nt_arg_put_bytes(q, name_idx, type, value32, len ? p : "", (uint32_t)len);
	return q != NULL;
}

/* Appends a string argument of `len` bytes. */
static int put_string(nt_importer *im, nt_bytes *rec, const char *name, const char *s,
		      size_t len)
{
	return put_bytes(im, rec, name, NT_ARG_STRING, (uint32_t)len, s, len);
}

static int put_field(nt_importer *im, line_ctx *lc, nt_bytes *rec, const t2_field *f,
		     const nt_json_value *v)
{
	int64_t i;
	uint64_t u;
	size_t len;
	switch (f->type) {
	case NT_T2_TYPE_INT:
	case NT_T2_TYPE_NEST:
		if (!nt_json_int64(v, &i))
			return nt_imp_fail(im, col(lc, v), "\"%s\" must be an integer", f->key);
		return put_fixed(im, rec, f->key, NT_ARG_INT64, (uint64_t)i);
	case NT_T2_TYPE_BOOL:
		if (v->type != NT_JSON_TRUE && v->type != NT_JSON_FALSE)
			return nt_imp_fail(im, col(lc, v), "\"%s\" must be true or false", f->key);
		return put_fixed(im, rec, f->key, NT_ARG_BOOL, v->type == NT_JSON_TRUE);
	case NT_T2_TYPE_SECS:
	case NT_T2_TYPE_NSECS:
		if (!nt_json_fixed(v, 6, &u))
			return nt_imp_fail(im, col(lc, v),
				    "\"%s\" must be seconds with at most 6 decimals, not negative",
				    f->key);
		if (f->type == NT_T2_TYPE_NSECS) {
			if (u > UINT64_MAX / 1000)
				return nt_imp_fail(im, col(lc, v), "\"%s\" is too large", f->key);
			u *= 1000;
		}
		return put_fixed(im, rec, f->key, NT_ARG_UINT64, u);
	case NT_T2_TYPE_JSON:
		/* data_json: the JSON text is kept verbatim (Git writes it with jw_object_sub_jw). */
		return put_string(im, rec, f->key, v->p, v->n);
	case NT_T2_TYPE_STR:
	case NT_T2_TYPE_TEXT: {
		char *s = decode(im, lc, v, f->key, &len);
		if (s == NULL)
			return 0;
		int ok = put_string(im, rec, f->key, s, len);
		free(s);
		return ok;
	}
	case NT_T2_TYPE_LIST: {
		if (v->type != NT_JSON_ARRAY)
			return nt_imp_fail(im, col(lc, v), "\"%s\" must be an array of strings", f->key);
		nt_bytes list = { 0 };
		size_t pos = 0;
		uint32_t count = 0;
		nt_json_value e;
		int ok = 1;
		while (ok && nt_json_array_next(v, &pos, &e)) {
			char *s = decode(im, lc, &e, f->key, &len);
			uint8_t *at = s ? nt_bytes_grow(&list, 4 + len) : NULL;
			if (s != NULL && at == NULL)
				nt_imp_oom(im);
			if (at != NULL) {
				nt_arg_put_item(at, s, (uint32_t)len);
				count++;
			}
			ok = at != NULL;
			free(s);
		}
		if (ok)
			ok = put_bytes(im, rec, f->key, NT_ARG_STRING_LIST, count, list.p, list.len);
		free(list.p);
		return ok;
	}
	}
	return 0;
}

/* Like member(), but leaves the key to be kept: an unknown event's time orders it, and
 * is written back as it stood. */
static const nt_json_value *peek(const line_ctx *lc, const char *key)
{
	size_t n = strlen(key);
	for (int i = 0; i < lc->n; i++)
		if (nt_json_string_is_n(&lc->m[i].key, key, n))
			return &lc->m[i].value;
	return NULL;
}

/* Every key not used so far, as a JsonValue argument at its position in the line. */
static int put_kept(nt_importer *im, line_ctx *lc, nt_bytes *rec)
{
	for (int i = 0; i < lc->n; i++) {
		if (lc->used[i])
			continue;
		const nt_json_value *k = &lc->m[i].key, *v = &lc->m[i].value;
		size_t klen;
		char *name = decode(im, lc, k, "key", &klen);
		if (name == NULL)
			return 0;
		int ok = 1;
		if (memchr(name, 0, klen) != NULL)
			ok = nt_imp_fail(im, col(lc, k), "a NUL character in a key is not supported");
		else if (klen > NT_MAX_STRING_LENGTH)
			ok = nt_imp_fail(im, col(lc, k), "a key longer than %u bytes",
					 NT_MAX_STRING_LENGTH);
		uint32_t name_idx;
		uint64_t *q = ok ? grow_arg(im, rec, name, klen, 4 + v->n, &name_idx) : NULL;
		free(name);
		if (q == NULL)
			return 0;
		nt_arg_put_json(q, name_idx, (uint32_t)i, v->p, (uint32_t)v->n);
	}
	return 1;
}

/* The message type: a known Git event, or NT_T2_UNKNOWN (the name then goes into *unknown,
 * a fresh string of *unknown_len bytes). */
static int line_type(nt_importer *im, line_ctx *lc, const nt_json_value *ev, char **unknown,
		     size_t *unknown_len)
{
	for (int t = 0; t < NT_T2_EVENT_COUNT; t++)
		if (t != NT_T2E_UNKNOWN && nt_json_string_is(ev, nt_t2_event_names[t]))
			return t;
	*unknown = decode(im, lc, ev, NT_T2_COMMON_NAME(event), unknown_len);
	return *unknown != NULL ? NT_T2E_UNKNOWN : -1;
}

/* The line's ticks: its own time, else its process's last (a brief stream has almost
 * none). A known event other than version and atexit without time marks the process
 * brief; an unknown event's time, kept as written, only orders it when it can. */
static int line_ticks(nt_importer *im, line_ctx *lc, int type, uint32_t proc, uint64_t *ticks)
{
	*ticks = im->procs[proc].ticks;
	const char *time_key = NT_T2_COMMON_NAME(time);
	const nt_json_value *tv = type == NT_T2E_UNKNOWN ? peek(lc, time_key) : member(lc, time_key);
	int64_t us = -1;
	/* Ticks are nanoseconds since 1970 that the reader takes as int64: up to 2262-04-11
	 * (a later time would wrap, silently). */
	int ok = tv != NULL && tv->type == NT_JSON_STRING && parse_time(tv->p + 1, tv->n - 2, &us) &&
		 us >= 0 && us <= INT64_MAX / 1000;
	if (tv != NULL && !ok && type != NT_T2E_UNKNOWN)
		return nt_imp_fail(im, col(lc, tv), "\"time\" must be UTC like "
						    "\"2026-11-21T23:02:46.881067Z\", from 1970 to 2262");
	if (ok) {
		*ticks = (uint64_t)us * 1000u;
		im->procs[proc].ticks = *ticks;
	} else if (tv == NULL && !NT_T2_TIMED_WHEN_BRIEF(type) && type != NT_T2E_UNKNOWN) {
		im->procs[proc].brief = 1;
	}
	if (!im->have_ticks || *ticks < im->first_ticks)
		im->first_ticks = *ticks;
	if (!im->have_ticks || *ticks > im->last_ticks)
		im->last_ticks = *ticks;
	im->have_ticks = 1;
	return 1;
}

/* The thread index of the line's (sid, thread); *proc its process. 0 after a failure. */
static uint32_t line_thread(nt_importer *im, line_ctx *lc, const nt_json_value *sid,
			    const nt_json_value *thread, uint32_t *proc)
{
	size_t sid_len, th_len;
	char *sid_s = decode(im, lc, sid, NT_T2_COMMON_NAME(sid), &sid_len);
	char *th_s = sid_s ? decode(im, lc, thread, NT_T2_COMMON_NAME(thread), &th_len) : NULL;
	uint32_t p = th_s ? nt_imp_process(im, sid_s, sid_len) : 0;
	uint32_t tidx = p ? nt_imp_thread(im, p - 1, th_s, th_len) : 0;
	free(sid_s);
	free(th_s);
	*proc = p ? p - 1 : 0;
	return tidx;
}

typedef struct line_site {
	uint32_t callsite;
	int empty_category, empty_label; /* present but "": explicit arguments */
} line_site;

/* The call site: file:line, the category and label / key / name, and the repository
 * (CallSiteRecord.repo: id + 1). An unknown event gets an empty one and keeps all its keys
 * as written: this version cannot tell what they mean. */
static int line_site_of(nt_importer *im, line_ctx *lc, int type, line_site *site)
{
	memset(site, 0, sizeof(*site));
	if (type == NT_T2E_UNKNOWN)
		return (site->callsite = nt_imp_callsite(im, "", 0, "", 0, "", 0, 0, 0)) != 0;
	const nt_json_value *fv = member(lc, NT_T2_COMMON_NAME(file));
	const nt_json_value *lv = member(lc, NT_T2_COMMON_NAME(line));
	const nt_json_value *rv = member(lc, NT_T2_COMMON_NAME(repo));
	/* Only messages with a label have a category (others render none: a category on one
	 * of them is a key this version does not know, and is kept). */
	const char *lk = label_key((nt_t2_event)type);
	const t2_field *cf = t2_field_stored((nt_t2_event)type, NT_T2_STORE_CATEGORY);
	const nt_json_value *cv = cf != NULL ? member(lc, cf->key) : NULL;
	const nt_json_value *labv = lk[0] ? member(lc, lk) : NULL;
	char *file = NULL, *cat = NULL, *lab = NULL;
	size_t file_len = 0, cat_len = 0, lab_len = 0;
	int64_t line = 0, repo = -1;
	int ok = 1;
	if (fv != NULL && (file = decode(im, lc, fv, NT_T2_COMMON_NAME(file), &file_len)) == NULL)
		ok = 0;
	if (ok && lv != NULL && (!nt_json_int64(lv, &line) || line < 0 || line > UINT32_MAX))
		ok = nt_imp_fail(im, col(lc, lv), "\"line\" must be a line number");
	if (ok && cv != NULL && (cat = decode(im, lc, cv, cf->key, &cat_len)) == NULL)
		ok = 0;
	if (ok && labv != NULL && (lab = decode(im, lc, labv, lk, &lab_len)) == NULL)
		ok = 0;
	if (ok && ((file && memchr(file, 0, file_len)) || (cat && memchr(cat, 0, cat_len)) ||
		   (lab && memchr(lab, 0, lab_len))))
		ok = nt_imp_fail(im, 1, "a NUL character in file, category or %s is not supported",
				 lk);
	if (ok && rv != NULL && (!nt_json_int64(rv, &repo) || repo < 0 || repo >= UINT32_MAX))
		ok = nt_imp_fail(im, col(lc, rv), "\"repo\" must be a repository id");
	if (ok)
		site->callsite = nt_imp_callsite(im, cat ? cat : "", cat_len, lab ? lab : "",
						 lab_len, file ? file : "", file_len,
						 (uint32_t)line, (uint32_t)(repo + 1));
	/* A category or label that is present but empty cannot live in the call site, where
	 * "" means none. */
	site->empty_category = cat != NULL && cat_len == 0;
	site->empty_label = lab != NULL && lab_len == 0;
	free(file);
	free(cat);
	free(lab);
	return site->callsite != 0;
}

/* Gives the member whose value is v back to put_kept. */
static void unuse(line_ctx *lc, const nt_json_value *v)
{
	for (int i = 0; i < lc->n; i++)
		if (&lc->m[i].value == v)
			lc->used[i] = 0;
}

/* The record: event header, then the arguments, then the kept keys. */
static int put_record(nt_importer *im, line_ctx *lc, nt_bytes *rec, int type,
		      const line_site *site, const char *unknown, size_t unknown_len)
{
	nt_event_record *head = nt_bytes_grow(rec, sizeof(*head));
	if (head == NULL)
		return nt_imp_oom(im);
	*head = (nt_event_record){ .kind = (uint8_t)(NT_KIND_T2_FIRST + type),
				   .callsite = (uint16_t)site->callsite };
	int ok = 1;
	if (unknown != NULL)
		ok = put_string(im, rec, NT_T2_ARG_EVENT, unknown, unknown_len);
	if (ok && site->empty_category)
		ok = put_string(im, rec, NT_T2_ARG_CATEGORY, "", 0);
	if (ok && site->empty_label)
		ok = put_string(im, rec, NT_T2_ARG_LABEL, "", 0);
	const t2_field_list *fl = &t2_fields[type];
	for (const t2_field *f = fl->row; ok && f < fl->row + fl->n; f++) {
		const nt_json_value *v = recorded_row(f) ? member(lc, f->key) : NULL;
		/* Git leaves out what it writes only when non-empty, and so does the EVENT
		 * renderer (the writer records it always): an empty one in the input is kept as
		 * written instead of lost. */
		if (v != NULL && f->when == NT_T2_WHEN_NONEMPTY && v->type == NT_JSON_STRING &&
		    v->n == 2)
			unuse(lc, v); /* kept as written, by put_kept */
		else if (v != NULL)
			ok = put_field(im, lc, rec, f, v);
	}
	if (ok)
		ok = put_kept(im, lc, rec);
	if (ok && rec->len > NT_MAX_RECORD_BYTES)
		ok = nt_imp_fail(im, 1, "the %s event takes %zu bytes; one record holds at most %u",
				 unknown != NULL ? unknown : nt_t2_event_names[type], rec->len,
				 NT_MAX_RECORD_BYTES);
	if (ok)
		((nt_event_record *)(void *)rec->p)->size_words = (uint8_t)(rec->len / 8);
	return ok;
}

int nt_imp_line(nt_importer *im, const char *text, size_t n)
{
	line_ctx lc = { .text = text };
	const char *jerr = NULL;
	size_t at = 0;
	lc.n = nt_json_object(text, n, lc.m, MAX_MEMBERS, &jerr, &at);
	if (lc.n < 0)
		return nt_imp_fail(im, at + 1, "%s", jerr);
	const nt_json_value *ev = member(&lc, NT_T2_COMMON_NAME(event));
	const nt_json_value *sid = member(&lc, NT_T2_COMMON_NAME(sid));
	const nt_json_value *thread = member(&lc, NT_T2_COMMON_NAME(thread));
	if (ev == NULL || sid == NULL || thread == NULL)
		return nt_imp_fail(im, 1, "missing \"%s\" (every Trace2 event has event, sid and "
					  "thread)", ev == NULL ? "event" : sid == NULL ? "sid" : "thread");
	char *unknown = NULL;
	size_t unknown_len = 0;
	int type = line_type(im, &lc, ev, &unknown, &unknown_len);
	uint32_t proc = 0, tidx = type >= 0 ? line_thread(im, &lc, sid, thread, &proc) : 0;
	uint64_t ticks = 0;
	line_site site;
	nt_bytes *rec = &im->record;
	rec->len = 0;
	int ok = tidx != 0 && line_ticks(im, &lc, type, proc, &ticks) &&
		 line_site_of(im, &lc, type, &site) &&
		 put_record(im, &lc, rec, type, &site, unknown, unknown_len) &&
		 nt_imp_emit(im, tidx, ticks, rec);
	free(unknown);
	return ok;
}

int nt_imp_line_time(const char *text, size_t n, int64_t *us)
{
	line_ctx lc = { .text = text };
	const char *jerr;
	size_t at;
	lc.n = nt_json_object(text, n, lc.m, MAX_MEMBERS, &jerr, &at);
	const nt_json_value *tv = lc.n > 0 ? peek(&lc, NT_T2_COMMON_NAME(time)) : NULL;
	return tv != NULL && tv->type == NT_JSON_STRING && parse_time(tv->p + 1, tv->n - 2, us);
}

int nt_imp_blank(const char *text, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (text[i] != ' ' && text[i] != '\t')
			return 0;
	return 1;
}
