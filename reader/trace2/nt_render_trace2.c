/*
 * nt_render_trace2.c - Git's EVENT lines (git/git trace2/tr2_tgt_event.c and json-writer.c,
 * v2.39.5; shared/reference/trace2-formats.md §4), and the driver that renders one archive
 * or several in the order Git would have written them to one shared file.
 *
 * Several archives (one per process, as NANOTRACE=<directory> leaves them) are merged by
 * the time of each line: each archive keeps its own order, and lines interleave by time as
 * the processes' writes would have. That needs the rendered lines of all archives at once,
 * so memory is O(Trace2 lines) in that case; a single archive streams.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reader/common/nt_follow_loop.h"
#include "reader/common/nt_grow.h"
#include "reader/common/nt_out.h"
#include "reader/common/nt_struct_in.h"
#include "nt_trace2.h"

/* ---- EVENT ------------------------------------------------------------------------------ */

void t2_json_str(t2_buf *b, const char *s, size_t n)
{
	size_t i = nt_json_plain_prefix(s, n, 1);
	if (i == n && n < SIZE_MAX - 2 && t2_grow(b, n + 2)) { /* nothing to escape: one copy */
		char *p = b->p + b->len;
		p[0] = '"';
		memcpy(p + 1, s, n);
		p[n + 1] = '"';
		p[n + 2] = '\0';
		b->len += n + 2;
		return;
	}
	t2_put(b, "\"", 1);
	t2_put(b, s, i);
	while (i < n) {
		char esc[8];
		t2_put(b, esc, nt_json_escape_byte(esc, (unsigned char)s[i]));
		i++;
		size_t run = nt_json_plain_prefix(s + i, n - i, 1);
		t2_put(b, s + i, run);
		i += run;
	}
	t2_put(b, "\"", 1);
}

/* An EVENT line being written: the keys this version renders, and between them, at the
 * positions they had, the keys an import kept without knowing them (NT_ARG_JSON). Counting
 * keys is what puts a kept key back where it stood, since Git's key order is fixed. */
typedef struct ev_line {
	t2_buf *b;
	const t2_msg *m;
	uint32_t keys; /* keys written */
	uint32_t arg;  /* next argument that may be a kept key */
	int kept;      /* the message has kept keys at all (most have none) */
} ev_line;

/* A key kept from an import: untrusted, escaped. */
static void key_name(ev_line *l, const char *k, size_t n)
{
	if (l->keys++ > 0)
		t2_put(l->b, ",", 1);
	t2_json_str(l->b, k, n);
	t2_put(l->b, ":", 1);
}

/* A key of the field table: a C identifier, written as it is (`"key":`). */
static void table_key(ev_line *l, const char *k)
{
	size_t n = strlen(k);
	if (!t2_grow(l->b, n + 4))
		return;
	char *p = l->b->p + l->b->len, *start = p;
	if (l->keys++ > 0)
		*p++ = ',';
	*p++ = '"';
	memcpy(p, k, n);
	p += n;
	*p++ = '"';
	*p++ = ':';
	*p = '\0';
	l->b->len += (size_t)(p - start);
}

/* The kept keys due at this point (all: the rest, at the end of the line). The value is
 * untrusted archive data written as it was imported; an empty one becomes null so that the
 * line stays JSON. */
static void kept_keys(ev_line *l, int all)
{
	const nt_reader_event *e = l->m->ev;
	for (; l->arg < e->arg_count; l->arg++) {
		const nt_reader_arg *a = &e->args[l->arg];
		if (a->type != NT_ARG_JSON)
			continue;
		if (!all && a->value.json.position > l->keys)
			return;
		key_name(l, a->name, strlen(a->name));
		if (a->value.json.len == 0)
			t2_puts(l->b, "null");
		else
			t2_put(l->b, a->value.json.ptr, a->value.json.len);
	}
}

static void key(ev_line *l, const char *k)
{
	if (l->kept)
		kept_keys(l, 0);
	table_key(l, k);
}

static void kv_str(ev_line *l, const char *k, const char *s, size_t n)
{
	key(l, k);
	t2_json_str(l->b, s, n);
}

static void kv_secs(ev_line *l, const char *k, double v)
{
	key(l, k);
	t2_printf(l->b, "%.6f", v);
}

/* "%.6f" of us / 1e6, without the double. */
static void kv_us(ev_line *l, const char *k, uint64_t us)
{
	key(l, k);
	t2_put_secs(l->b, us);
}

static void kv_list(ev_line *l, const char *k, const nt_reader_arg *a)
{
	key(l, k);
	t2_put(l->b, "[", 1);
	uint32_t pos = 0, len;
	const char *s;
	int first = 1;
	while (nt_reader_list_next(a, &pos, &s, &len)) {
		if (!first)
			t2_put(l->b, ",", 1);
		t2_json_str(l->b, s, len);
		first = 0;
	}
	t2_put(l->b, "]", 1);
}

/* "\"%4d-%02d-%02dT%02d:%02d:%02d.%06ldZ\"" of the broken-down UTC time. */
static void utc_time(t2_buf *b, int64_t us, t2_clock *cache)
{
	struct tm tm;
	long frac = t2_split_time(us, 0, 0, &tm, cache);
	int year = tm.tm_year + 1900;
	if (year < 1000 || year > 9999) { /* "%4d" pads or widens: leave it to printf */
		t2_printf(b, "\"%4d-%02d-%02dT%02d:%02d:%02d.%06ldZ\"", year, tm.tm_mon + 1,
			  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
		return;
	}
	char d[32];
	memcpy(d, "\"", 1);
	memcpy(d + 1, nt_digit_pairs + (year / 100) * 2, 2);
	memcpy(d + 3, nt_digit_pairs + (year % 100) * 2, 2);
	const int two[5] = { tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec };
	const char sep[5] = { '-', '-', 'T', ':', ':' };
	for (int i = 0; i < 5; i++) {
		d[5 + i * 3] = sep[i];
		int v = two[i] < 0 || two[i] > 99 ? 0 : two[i];
		memcpy(d + 6 + i * 3, nt_digit_pairs + v * 2, 2);
	}
	d[20] = '.';
	nt_fmt_u64_zero_padded(d + 21, (uint64_t)frac, 6);
	memcpy(d + 27, "Z\"", 2);
	t2_put(b, d, 29);
}

/* The common keys (NT_T2_COMMON_KEYS; trace2-formats.md §4). An unknown event has only the
 * first three: its other keys, time included, were kept as written. */
static void event_common(ev_line *l, int brief)
{
	const t2_msg *m = l->m;
	uint32_t len = 0;
	const char *ev = m->type == NT_T2E_UNKNOWN ? t2_str(m->x[T2_X_EVENT], &len) : NULL;
	if (ev == NULL) {
		ev = nt_t2_event_names[m->type];
		len = (uint32_t)strlen(ev);
	}
	kv_str(l, NT_T2_COMMON_NAME(event), ev, len);
	kv_str(l, NT_T2_COMMON_NAME(sid), m->sid, strlen(m->sid));
	kv_str(l, NT_T2_COMMON_NAME(thread), m->thread, strlen(m->thread));
	if (m->type == NT_T2E_UNKNOWN)
		return;
	if ((!brief || NT_T2_TIMED_WHEN_BRIEF(m->type)) && m->has_time) {
		key(l, NT_T2_COMMON_NAME(time));
		utc_time(l->b, m->time_us, m->clock_utc);
	}
	if (!brief && m->file != NULL && m->file[0] != '\0') {
		kv_str(l, NT_T2_COMMON_NAME(file), m->file, strlen(m->file));
		key(l, NT_T2_COMMON_NAME(line));
		t2_put_u64(l->b, m->line);
	}
	if (m->has_repo) {
		key(l, NT_T2_COMMON_NAME(repo));
		t2_put_i64(l->b, m->repo);
	}
}

/* A field the reader derives or takes from the call site, when the model has it. */
static void event_model_field(ev_line *l, const t2_field *f)
{
	const t2_msg *m = l->m;
	const char *s = NULL;
	switch (f->store) {
	case NT_T2_STORE_T_ABS:
		if (m->has_t_abs && m->t_abs_exact)
			kv_us(l, f->key, m->t_abs_us);
		return;
	case NT_T2_STORE_T_REL:
	case NT_T2_STORE_RUNTIME:
		if (m->has_t_rel)
			kv_us(l, f->key, m->t_rel_us);
		return;
	case NT_T2_STORE_NESTING:
		key(l, f->key);
		t2_put_u64(l->b, m->nesting);
		return;
	case NT_T2_STORE_CATEGORY: s = m->category; break;
	case NT_T2_STORE_LABEL: s = m->label; break;
	case NT_T2_STORE_ARG: return;
	}
	if (s != NULL)
		kv_str(l, f->key, s, strlen(s));
}

/* A field recorded as an argument, written by its type when recorded. */
static void event_arg_field(ev_line *l, const t2_field *f, const nt_reader_arg *a)
{
	uint32_t len;
	const char *s;
	char num[24];
	switch (f->type) {
	case NT_T2_TYPE_STR:
		/* Empty included: Git writes "msg":"" when a non-empty format expands to nothing. */
		if ((s = t2_str(a, &len)) != NULL && (len > 0 || f->when != NT_T2_WHEN_NONEMPTY))
			kv_str(l, f->key, s, len);
		break;
	case NT_T2_TYPE_TEXT:
		if ((s = t2_value_text(a, num, &len)) != NULL)
			kv_str(l, f->key, s, len);
		break;
	case NT_T2_TYPE_JSON:
		if ((s = t2_str(a, &len)) != NULL) {
			key(l, f->key); /* raw JSON, inserted verbatim (jw_object_sub_jw) */
			t2_put(l->b, s, len);
		}
		break;
	case NT_T2_TYPE_INT:
		key(l, f->key);
		t2_put_i64(l->b, t2_int(a, 0));
		break;
	case NT_T2_TYPE_BOOL:
		key(l, f->key);
		t2_puts(l->b, t2_int(a, 0) ? "true" : "false");
		break;
	case NT_T2_TYPE_LIST:
		if (a->type == NT_ARG_STRING_LIST)
			kv_list(l, f->key, a);
		break;
	case NT_T2_TYPE_NSECS:
		kv_secs(l, f->key, (double)t2_int(a, 0) / 1.0e9);
		break;
	case NT_T2_TYPE_SECS:
	case NT_T2_TYPE_NEST: break; /* never an ARG row */
	}
}

int t2_format_event(t2_buf *b, const t2_msg *m, int brief, int nesting)
{
	/* The nesting filter: only what the reader counts nesting for. */
	if (t2_field_stored(m->type, NT_T2_STORE_NESTING) != NULL &&
	    (int64_t)m->nesting > (int64_t)nesting)
		return 0;
	ev_line l = { .b = b, .m = m };
	for (uint32_t i = 0; i < m->ev->arg_count && !l.kept; i++)
		l.kept = m->ev->args[i].type == NT_ARG_JSON;
	t2_puts(b, "{");
	event_common(&l, brief);
	const t2_field_list *fl = &t2_fields[m->type];
	for (uint32_t i = 0; i < fl->n; i++) {
		if (fl->row[i].store != NT_T2_STORE_ARG)
			event_model_field(&l, &fl->row[i]);
		else if (m->arg[i] != NULL)
			event_arg_field(&l, &fl->row[i], m->arg[i]);
	}
	if (l.kept)
		kept_keys(&l, 1);
	t2_puts(b, "}");
	return 1;
}

/* ---- driver ----------------------------------------------------------------------------- */

typedef struct t2_line {
	int64_t time_us;
	size_t at, len; /* in the archive's text buffer */
} t2_line;

typedef struct t2_render {
	const nt_trace2_options *opt;
	t2_model *model;
	nt_out *out;      /* streaming (one archive), else NULL */
	t2_buf line;
	t2_buf text;      /* collected lines (several archives) */
	t2_line *lines;
	size_t nlines, cap;
	int64_t last_us;
	int oom;
} t2_render;

static int on_event(void *ctx, const nt_reader_event *e)
{
	t2_render *rd = ctx;
	t2_msg m;
	if (!t2_model_decode(rd->model, e, &m))
		return 0;
	const nt_trace2_options *o = rd->opt;
	int brief = o->brief < 0 ? m.brief_capture : o->brief;
	int nesting = o->nesting > 0 ? o->nesting : 2;
	rd->line.len = 0;
	switch (o->format) {
	case NT_TRACE2_NORMAL:
		if (!t2_normal_writes(m.type))
			return 0;
		t2_format_normal(&rd->line, &m, brief);
		break;
	case NT_TRACE2_PERF:
		if (!t2_perf_writes(m.type))
			return 0;
		t2_format_perf(&rd->line, &m, brief);
		break;
	default:
		if (!t2_format_event(&rd->line, &m, brief, nesting))
			return 0;
		break;
	}
	/* strbuf_complete_line: a message that already ends in a newline gets no second one. */
	if (rd->line.len == 0 || rd->line.p[rd->line.len - 1] != '\n')
		t2_put(&rd->line, "\n", 1);
	if (rd->line.oom) {
		rd->oom = 1;
		return 1;
	}
	if (rd->out != NULL) {
		nt_out_bytes(rd->out, rd->line.p, rd->line.len);
		return rd->out->failed; /* a dead output stops the visit */
	}
	if (m.has_time)
		rd->last_us = m.time_us;
	if (!nt_grow(&rd->lines, &rd->cap, rd->nlines + 1, sizeof(*rd->lines))) {
		rd->oom = 1;
		return 1;
	}
	rd->lines[rd->nlines++] = (t2_line){ rd->last_us, rd->text.len, rd->line.len };
	t2_put(&rd->text, rd->line.p, rd->line.len);
	if (rd->text.oom) {
		rd->oom = 1;
		return 1;
	}
	return 0;
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	t2_render *rd = ctx;
	if (rd->opt->on_error)
		rd->opt->on_error(rd->opt->error_ctx, off, msg);
}

void nt_trace2_options_init(nt_trace2_options *opt)
{
	if (opt == NULL)
		return;
	memset(opt, 0, sizeof(*opt));
	opt->struct_size = sizeof(*opt);
	opt->format = NT_TRACE2_NORMAL;
	opt->brief = -1;
	opt->nesting = 2;
	opt->policy = NT_ON_CORRUPT_SKIP;
}

/* The first nt_trace2_options ended with error_ctx; later fields go after it. */
#define TRACE2_OPTIONS_V1_SIZE (offsetof(nt_trace2_options, error_ctx) + sizeof(void *))

static int render_processes(nt_reader *const *readers, size_t n, FILE *out,
			    const nt_trace2_options *opt);

/* The processes behind the readers: a many-process reader stands for its sections that
 * could be opened. *out is malloc'd (free it); returns how many, or -1 when memory runs out. */
static long expand_sections(nt_reader *const *readers, size_t n, nt_reader ***out)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += nt_reader_section_count(readers[i]);
	nt_reader **all = calloc(total ? total : 1, sizeof(*all));
	if (all == NULL)
		return -1;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < nt_reader_section_count(readers[i]); j++) {
			nt_reader *s = nt_reader_section_at(readers[i], j)->reader;
			if (s != NULL)
				all[k++] = s;
		}
	*out = all;
	return (long)k;
}

/* What a many-process reader found about its inputs and the sections it could not open,
 * reported as a visit would, before the messages. Returns how many. */
static unsigned report_inputs(nt_reader *const *readers, size_t n,
			      const nt_trace2_options *opt)
{
	unsigned found = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t off;
		const char *msg;
		for (uint32_t j = 0; (msg = nt_reader_problem_at(readers[i], j, &off)) != NULL; j++, found++)
			if (opt->on_error)
				opt->on_error(opt->error_ctx, off, msg);
		for (uint32_t j = 0; j < nt_reader_section_count(readers[i]); j++) {
			const nt_reader_section *s = nt_reader_section_at(readers[i], j);
			if (s->reader != NULL)
				continue;
			found++;
			if (opt->on_error)
				opt->on_error(opt->error_ctx, s->error_offset, s->error);
		}
	}
	return found;
}

int nt_render_trace2(nt_reader *const *readers, size_t n, FILE *out,
		     const nt_trace2_options *user_opt)
{
	if (readers == NULL || n == 0 || out == NULL || user_opt == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (readers[i] == NULL)
			return -1;
	nt_trace2_options copy;
	nt_trace2_options_init(&copy);
	if (nt_struct_copy_in(&copy, sizeof(copy), user_opt, TRACE2_OPTIONS_V1_SIZE,
			      "nt_render_trace2", "nt_trace2_options_init") != 0)
		return -1;
	if (report_inputs(readers, n, &copy) && copy.policy == NT_ON_CORRUPT_STOP)
		return -1;
	nt_reader **all;
	long k = expand_sections(readers, n, &all);
	if (k < 0)
		return -1;
	int rc = k > 0 ? render_processes(all, (size_t)k, out, &copy) : 0;
	free(all);
	return rc;
}

/* The processes' Trace2 messages as one stream. */
static int render_processes(nt_reader *const *readers, size_t n, FILE *out,
			    const nt_trace2_options *opt)
{
	t2_render *rd = calloc(n, sizeof(*rd));
	nt_out *o = malloc(sizeof(*o)); /* a 64 KiB block: not on the stack */
	if (rd == NULL || o == NULL) {
		free(rd);
		free(o);
		return -1;
	}
	nt_out_init(o, out);
	int rc = 0;
	for (size_t i = 0; i < n && rc >= 0; i++) {
		rd[i].opt = opt;
		rd[i].out = n == 1 ? o : NULL;
		rd[i].model = t2_model_new(readers[i]);
		if (rd[i].model == NULL) {
			rc = -1;
			break;
		}
		nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error };
		nt_order order = nt_reader_info(readers[i])->stream_ordered ? NT_ORDER_STREAM : NT_ORDER_TIME;
		int v = nt_reader_visit(readers[i], &cb, &rd[i], order, opt->policy);
		if (rd[i].oom || v < 0)
			rc = -1;
		/* its lines are in rd[i].text: the model and the line buffer go now, so that a
		 * bundle of thousands of processes holds one of each at a time */
		t2_model_free(rd[i].model);
		rd[i].model = NULL;
		free(rd[i].line.p);
		rd[i].line = (t2_buf){ 0 };
	}
	if (rc >= 0 && n > 1) {
		/* Merge: each archive in its own order, interleaved by time (ties: the earlier
		 * archive first). */
		size_t *next = calloc(n, sizeof(size_t));
		if (next == NULL) {
			rc = -1;
		} else {
			for (;;) {
				size_t best = n;
				for (size_t i = 0; i < n; i++) {
					if (next[i] >= rd[i].nlines)
						continue;
					if (best == n || rd[i].lines[next[i]].time_us <
								 rd[best].lines[next[best]].time_us)
						best = i;
				}
				if (best == n)
					break;
				const t2_line *l = &rd[best].lines[next[best]++];
				nt_out_bytes(o, rd[best].text.p + l->at, l->len);
			}
			free(next);
		}
	}
	for (size_t i = 0; i < n; i++) {
		t2_model_free(rd[i].model);
		free(rd[i].line.p);
		free(rd[i].text.p);
		free(rd[i].lines);
	}
	free(rd);
	if (nt_out_flush(o) != 0)
		rc = -1;
	int saved = errno;
	free(o);
	errno = saved;
	return rc;
}

/* ---- live follow ------------------------------------------------------------------------ */

typedef struct t2_follow {
	t2_render rd;
	nt_follower *f;
	int bound; /* the model reads this poll's copy (a new copy may sit where the last was) */
} t2_follow;

/* The model over the poll's copy, before its first event. */
static int follow_event(void *ctx, const nt_reader_event *e)
{
	t2_follow *tf = ctx;
	if (!tf->bound) {
		/* The model only reads through the reader. */
		nt_reader *rw = (nt_reader *)(uintptr_t)nt_follow_reader(tf->f);
		if (tf->rd.model == NULL ? (tf->rd.model = t2_model_new(rw)) == NULL
					 : !t2_model_rebind(tf->rd.model, rw)) {
			tf->rd.oom = 1;
			return 1;
		}
		tf->bound = 1;
	}
	return on_event(&tf->rd, e);
}

/* The end of one poll's output (nt_follow_loop); the next poll binds its model anew. */
static int t2_after_poll(void *ctx, int status)
{
	(void)status;
	t2_follow *tf = ctx;
	tf->bound = 0;
	return nt_out_flush(tf->rd.out) != 0 || tf->rd.oom;
}

int nt_render_trace2_follow(nt_follower *f, FILE *out, const nt_trace2_options *user_opt,
			    unsigned interval_ms, int (*keep_going)(void *arg), void *arg)
{
	return t2_follow_paced(f, out, user_opt, interval_ms, keep_going, NULL, arg);
}

int t2_follow_paced(nt_follower *f, FILE *out, const nt_trace2_options *user_opt,
		    unsigned interval_ms, int (*keep_going)(void *arg),
		    int (*pause)(void *arg, unsigned interval_ms), void *arg)
{
	if (f == NULL || out == NULL || user_opt == NULL)
		return NT_FOLLOW_FAILED;
	nt_trace2_options copy;
	nt_trace2_options_init(&copy);
	if (nt_struct_copy_in(&copy, sizeof(copy), user_opt, TRACE2_OPTIONS_V1_SIZE,
			      "nt_render_trace2_follow", "nt_trace2_options_init") != 0)
		return NT_FOLLOW_FAILED;
	t2_follow *tf = calloc(1, sizeof(*tf));
	nt_out *o = malloc(sizeof(*o));
	if (tf == NULL || o == NULL) {
		free(tf);
		free(o);
		return NT_FOLLOW_FAILED;
	}
	nt_out_init(o, out);
	tf->rd.opt = &copy;
	tf->rd.out = o;
	tf->f = f;
	nt_reader_callbacks cb = { .on_event = follow_event };
	int st = nt_follow_loop_paced(f, &cb, tf, t2_after_poll, interval_ms, keep_going, pause,
				      arg);
	t2_model_free(tf->rd.model);
	free(tf->rd.line.p);
	int saved = errno;
	free(tf);
	free(o);
	errno = saved;
	return st;
}
