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
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nt_reader_internal.h"
#include "nt_trace2.h"

/* ---- EVENT ------------------------------------------------------------------------------ */

void t2_json_str(t2_buf *b, const char *s, size_t n)
{
	t2_put(b, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *esc = NULL;
		char u[8];
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\f': esc = "\\f"; break;
		case '\b': esc = "\\b"; break;
		default:
			if (c < 0x20) {
				snprintf(u, sizeof(u), "\\u%04x", c);
				esc = u;
			}
			break;
		}
		if (esc == NULL)
			continue;
		t2_put(b, s + run, i - run);
		t2_puts(b, esc);
		run = i + 1;
	}
	t2_put(b, s + run, n - run);
	t2_put(b, "\"", 1);
}

static void key(t2_buf *b, const char *k)
{
	t2_put(b, ",", 1);
	t2_json_str(b, k, strlen(k));
	t2_put(b, ":", 1);
}

static void kv_str(t2_buf *b, const char *k, const char *s, size_t n)
{
	key(b, k);
	t2_json_str(b, s, n);
}

/* The string argument `name`, under JSON key `k`, when recorded. */
static void kv_arg_str(t2_buf *b, const t2_msg *m, const char *k, const char *name)
{
	uint32_t len;
	const char *s = t2_arg_str(m, name, &len);
	if (s != NULL)
		kv_str(b, k, s, len);
}

static void kv_arg_int(t2_buf *b, const t2_msg *m, const char *name)
{
	if (t2_arg(m, name) == NULL)
		return;
	key(b, name);
	t2_printf(b, "%" PRId64, t2_arg_int(m, name, 0));
}

static void kv_arg_list(t2_buf *b, const t2_msg *m, const char *name)
{
	const nt_reader_arg *a = t2_arg(m, name);
	if (a == NULL || a->type != NT_ARG_STRING_LIST)
		return;
	key(b, name);
	t2_put(b, "[", 1);
	uint32_t pos = 0, len;
	const char *s;
	int first = 1;
	while (nt_reader_list_next(a, &pos, &s, &len)) {
		if (!first)
			t2_put(b, ",", 1);
		t2_json_str(b, s, len);
		first = 0;
	}
	t2_put(b, "]", 1);
}

static void kv_secs(t2_buf *b, const char *k, double v)
{
	key(b, k);
	t2_printf(b, "%.6f", v);
}

static void kv_t_abs(t2_buf *b, const t2_msg *m)
{
	if (m->has_t_abs && m->t_abs_exact)
		kv_secs(b, "t_abs", (double)m->t_abs_us / 1000000.0);
}

static void kv_t_rel(t2_buf *b, const t2_msg *m)
{
	if (m->has_t_rel)
		kv_secs(b, "t_rel", (double)m->t_rel_us / 1000000.0);
}

static void kv_ns(t2_buf *b, const t2_msg *m, const char *k)
{
	if (t2_arg(m, k) != NULL)
		kv_secs(b, k, (double)t2_arg_int(m, k, 0) / 1.0e9);
}

static void kv_label(t2_buf *b, const t2_msg *m, const char *k)
{
	if (m->label != NULL)
		kv_str(b, k, m->label, strlen(m->label));
}

static void kv_category(t2_buf *b, const t2_msg *m)
{
	if (m->category != NULL)
		kv_str(b, "category", m->category, strlen(m->category));
}

static void utc_time(t2_buf *b, int64_t us)
{
	struct tm tm;
	long frac = t2_split_time(us, 0, 0, &tm);
	t2_printf(b, "\"%4d-%02d-%02dT%02d:%02d:%02d.%06ldZ\"", tm.tm_year + 1900, tm.tm_mon + 1,
		  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

int t2_format_event(t2_buf *b, const t2_msg *m, int brief, int nesting)
{
	switch (m->type) {
	case NT_T2_REGION_ENTER:
	case NT_T2_REGION_LEAVE:
	case NT_T2_DATA:
	case NT_T2_DATA_JSON:
		if ((int64_t)m->nesting > (int64_t)nesting)
			return 0;
		break;
	default:
		break;
	}
	const char *ev = nt_t2_event_names[m->type];
	t2_puts(b, "{\"event\":");
	t2_json_str(b, ev, strlen(ev));
	kv_str(b, "sid", m->sid, strlen(m->sid));
	kv_str(b, "thread", m->thread, strlen(m->thread));
	if ((!brief || m->type == NT_T2_VERSION || m->type == NT_T2_ATEXIT) && m->has_time) {
		key(b, "time");
		utc_time(b, m->time_us);
	}
	if (!brief && m->file != NULL && m->file[0] != '\0') {
		kv_str(b, "file", m->file, strlen(m->file));
		key(b, "line");
		t2_printf(b, "%u", m->line);
	}
	if (m->has_repo) {
		key(b, "repo");
		t2_printf(b, "%" PRId64, m->repo);
	}
	switch (m->type) {
	case NT_T2_VERSION:
		kv_arg_str(b, m, "evt", "evt");
		kv_arg_str(b, m, "exe", "exe");
		break;
	case NT_T2_START:
		kv_t_abs(b, m);
		kv_arg_list(b, m, "argv");
		break;
	case NT_T2_EXIT:
	case NT_T2_ATEXIT:
		kv_t_abs(b, m);
		kv_arg_int(b, m, "code");
		break;
	case NT_T2_SIGNAL:
		kv_t_abs(b, m);
		kv_arg_int(b, m, "signo");
		break;
	case NT_T2_ERROR:
		kv_arg_str(b, m, "msg", "msg");
		kv_arg_str(b, m, "fmt", "fmt");
		break;
	case NT_T2_CMD_PATH:
		kv_arg_str(b, m, "path", "path");
		break;
	case NT_T2_CMD_ANCESTRY:
		kv_arg_list(b, m, "ancestry");
		break;
	case NT_T2_CMD_NAME: {
		uint32_t len;
		kv_arg_str(b, m, "name", "name");
		if (t2_arg_str(m, "hierarchy", &len) != NULL && len > 0)
			kv_arg_str(b, m, "hierarchy", "hierarchy");
		break;
	}
	case NT_T2_CMD_MODE:
		kv_arg_str(b, m, "name", "name");
		break;
	case NT_T2_ALIAS:
		kv_arg_str(b, m, "alias", "alias");
		kv_arg_list(b, m, "argv");
		break;
	case NT_T2_CHILD_START:
		kv_arg_int(b, m, "child_id");
		kv_arg_str(b, m, "child_class", "child_class");
		kv_arg_str(b, m, "hook_name", "hook_name");
		kv_arg_str(b, m, "cd", "cd");
		if (t2_arg(m, "use_shell") != NULL) {
			key(b, "use_shell");
			t2_puts(b, t2_arg_int(m, "use_shell", 0) ? "true" : "false");
		}
		kv_arg_list(b, m, "argv");
		break;
	case NT_T2_CHILD_EXIT:
		kv_arg_int(b, m, "child_id");
		kv_arg_int(b, m, "pid");
		kv_arg_int(b, m, "code");
		kv_t_rel(b, m);
		break;
	case NT_T2_CHILD_READY:
		kv_arg_int(b, m, "child_id");
		kv_arg_int(b, m, "pid");
		kv_arg_str(b, m, "ready", "ready");
		kv_t_rel(b, m);
		break;
	case NT_T2_THREAD_EXIT:
		kv_t_rel(b, m);
		break;
	case NT_T2_EXEC:
		kv_arg_int(b, m, "exec_id");
		kv_arg_str(b, m, "exe", "exe");
		kv_arg_list(b, m, "argv");
		break;
	case NT_T2_EXEC_RESULT:
		kv_arg_int(b, m, "exec_id");
		kv_arg_int(b, m, "code");
		break;
	case NT_T2_DEF_PARAM:
		kv_arg_str(b, m, "scope", "scope");
		kv_arg_str(b, m, "param", "param");
		kv_arg_str(b, m, "value", "value");
		break;
	case NT_T2_DEF_REPO:
		kv_arg_str(b, m, "worktree", "worktree");
		break;
	case NT_T2_REGION_ENTER:
	case NT_T2_REGION_LEAVE: {
		uint32_t len;
		if (m->type == NT_T2_REGION_LEAVE)
			kv_t_rel(b, m);
		key(b, "nesting");
		t2_printf(b, "%u", m->nesting);
		kv_category(b, m);
		kv_label(b, m, "label");
		if (t2_arg_str(m, "msg", &len) != NULL && len > 0)
			kv_arg_str(b, m, "msg", "msg");
		break;
	}
	case NT_T2_DATA:
	case NT_T2_DATA_JSON: {
		kv_t_abs(b, m);
		kv_t_rel(b, m);
		key(b, "nesting");
		t2_printf(b, "%u", m->nesting);
		kv_category(b, m);
		kv_label(b, m, "key");
		uint32_t len;
		char num[24];
		const char *v = m->type == NT_T2_DATA ? t2_value_text(m, num, &len)
						      : t2_arg_str(m, "value", &len);
		if (m->type == NT_T2_DATA) {
			if (v != NULL)
				kv_str(b, "value", v, len);
		} else if (v != NULL) {
			key(b, "value"); /* raw JSON, inserted verbatim (jw_object_sub_jw) */
			t2_put(b, v, len);
		}
		break;
	}
	case NT_T2_PRINTF: {
		uint32_t len;
		kv_t_abs(b, m);
		if (t2_arg_str(m, "msg", &len) != NULL && len > 0)
			kv_arg_str(b, m, "msg", "msg");
		break;
	}
	case NT_T2_TIMER:
	case NT_T2_TH_TIMER:
		kv_category(b, m);
		kv_label(b, m, "name");
		kv_arg_int(b, m, "intervals");
		kv_ns(b, m, "t_total");
		kv_ns(b, m, "t_min");
		kv_ns(b, m, "t_max");
		break;
	case NT_T2_COUNTER:
	case NT_T2_TH_COUNTER:
		kv_category(b, m);
		kv_label(b, m, "name");
		kv_arg_int(b, m, "count");
		break;
	default:
		break;
	}
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
	FILE *out;        /* streaming (one archive), else NULL */
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
		if (m.type == NT_T2_TOO_MANY_FILES)
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
		fwrite(rd->line.p, 1, rd->line.len, rd->out);
		return 0;
	}
	if (m.has_time)
		rd->last_us = m.time_us;
	if (rd->nlines == rd->cap) {
		size_t cap = rd->cap ? rd->cap * 2 : 256;
		t2_line *l = realloc(rd->lines, cap * sizeof(*l));
		if (l == NULL) {
			rd->oom = 1;
			return 1;
		}
		rd->lines = l;
		rd->cap = cap;
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

int nt_render_trace2(nt_reader *const *readers, size_t n, FILE *out,
		     const nt_trace2_options *opt)
{
	if (readers == NULL || n == 0 || out == NULL || opt == NULL)
		return -1;
	t2_render *rd = calloc(n, sizeof(*rd));
	if (rd == NULL)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && rc >= 0; i++) {
		rd[i].opt = opt;
		rd[i].out = n == 1 ? out : NULL;
		rd[i].model = t2_model_new(readers[i]);
		if (rd[i].model == NULL) {
			rc = -1;
			break;
		}
		nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error };
		nt_order order = readers[i]->info.stream_ordered ? NT_ORDER_STREAM : NT_ORDER_TIME;
		int v = nt_reader_visit(readers[i], &cb, &rd[i], order, opt->policy);
		if (rd[i].oom || v < 0)
			rc = -1;
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
				fwrite(rd[best].text.p + l->at, 1, l->len, out);
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
	return rc;
}
