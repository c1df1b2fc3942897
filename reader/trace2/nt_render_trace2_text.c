/*
 * nt_render_trace2_text.c - Git's NORMAL and PERF lines, byte for byte
 * (git/git trace2/tr2_tgt_normal.c, tr2_tgt_perf.c and quote.c, v2.39.5; the rules are in
 * shared/reference/trace2-formats.md §2 and §3).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nt_trace2.h"

/* ---- line buffer ------------------------------------------------------------------------ */

static int reserve(t2_buf *b, size_t n)
{
	if (b->oom)
		return 0;
	if (b->len + n + 1 <= b->cap)
		return 1;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (p == NULL) {
		b->oom = 1;
		return 0;
	}
	b->p = p;
	b->cap = cap;
	return 1;
}

void t2_put(t2_buf *b, const char *s, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void t2_puts(t2_buf *b, const char *s)
{
	t2_put(b, s, strlen(s));
}

void t2_printf(t2_buf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		t2_put(b, small, (size_t)n);
		return;
	}
	if (!reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void t2_pad(t2_buf *b, size_t col)
{
	while (b->len < col && !b->oom)
		t2_put(b, " ", 1);
}

/* ---- quoting (git/git quote.c) ---------------------------------------------------------- */

/* Git's isalnum is ASCII-only (sane_ctype), so every byte >= 0x80 forces quoting. */
static int sq_plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("+,-./:=@_^", c) != NULL);
}

void t2_sq_pretty(t2_buf *b, const char *s, size_t n)
{
	if (n == 0) {
		t2_puts(b, "''");
		return;
	}
	size_t i;
	for (i = 0; i < n && sq_plain((unsigned char)s[i]); i++)
		;
	if (i == n) {
		t2_put(b, s, n);
		return;
	}
	/* sq_quote_buf: ' and ! close the quote, are backslashed, and reopen it. */
	t2_put(b, "'", 1);
	for (i = 0; i < n; i++) {
		if (s[i] == '\'' || s[i] == '!') {
			t2_put(b, "'\\", 2);
			t2_put(b, s + i, 1);
			t2_put(b, "'", 1);
		} else {
			t2_put(b, s + i, 1);
		}
	}
	t2_put(b, "'", 1);
}

void t2_sq_argv(t2_buf *b, const nt_reader_arg *list)
{
	uint32_t pos = 0, len;
	const char *s;
	int first = 1;
	while (list != NULL && nt_reader_list_next(list, &pos, &s, &len)) {
		if (!first)
			t2_put(b, " ", 1);
		t2_sq_pretty(b, s, len);
		first = 0;
	}
}

/* ---- shared pieces ---------------------------------------------------------------------- */

long t2_split_time(int64_t us, int local, int32_t offset, struct tm *tm)
{
	time_t secs = (time_t)(us / 1000000);
	long frac = (long)(us % 1000000);
	if (frac < 0) {
		frac += 1000000;
		secs--;
	}
	if (local == 1) {
		localtime_r(&secs, tm);
	} else {
		secs += offset;
		gmtime_r(&secs, tm);
	}
	return frac;
}

static void local_clock(t2_buf *b, const t2_msg *m)
{
	struct tm tm;
	/* Git prints the traced process's local time; without its offset, the reader's TZ. */
	long frac = t2_split_time(m->time_us, !m->utc_known, m->utc_offset, &tm);
	t2_printf(b, "%02d:%02d:%02d.%06ld", tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

/* `sep` and the string argument `name`, when recorded. */
static void sep_arg(t2_buf *b, const t2_msg *m, const char *sep, const char *name)
{
	uint32_t len;
	const char *s = t2_arg_str(m, name, &len);
	if (s != NULL) {
		t2_puts(b, sep);
		t2_put(b, s, len);
	}
}

/* def_repo's worktree, shell-quoted, after `keyword`. */
static void worktree(t2_buf *b, const t2_msg *m, const char *keyword)
{
	uint32_t len;
	const char *s = t2_arg_str(m, "worktree", &len);
	t2_puts(b, keyword);
	if (s != NULL)
		t2_sq_pretty(b, s, len);
}

/* exec_result's code, and strerror of a positive one (the reader's libc and locale). */
static void exec_code(t2_buf *b, const t2_msg *m)
{
	int code = (int)t2_arg_int(m, "code", 0);
	t2_printf(b, "code:%d", code);
	if (code > 0)
		t2_printf(b, " err:%s", strerror(code));
}

static void str_arg(t2_buf *b, const t2_msg *m, const char *name)
{
	uint32_t len;
	const char *s = t2_arg_str(m, name, &len);
	if (s != NULL)
		t2_put(b, s, len);
}

/* cmd_name's "name (hierarchy)"; no parentheses for an empty hierarchy. */
static void name_and_hierarchy(t2_buf *b, const t2_msg *m)
{
	uint32_t len;
	str_arg(b, m, "name");
	if (t2_arg_str(m, "hierarchy", &len) != NULL && len > 0) {
		sep_arg(b, m, " (", "hierarchy");
		t2_puts(b, ")");
	}
}

static int fmt_nonempty(const t2_msg *m)
{
	uint32_t len;
	return t2_arg_str(m, "fmt", &len) != NULL && len > 0;
}

static double secs(uint64_t us)
{
	return (double)us / 1000000.0;
}

static double ns_secs(const t2_msg *m, const char *name)
{
	return (double)t2_arg_int(m, name, 0) / 1.0e9;
}

/* ---- NORMAL ----------------------------------------------------------------------------- */

#define NORMAL_FL_WIDTH 50

void t2_format_normal(t2_buf *b, const t2_msg *m, int brief)
{
	uint32_t len;
	const char *s;
	if (!brief) {
		local_clock(b, m);
		t2_put(b, " ", 1);
		if (m->file != NULL && m->file[0] != '\0')
			t2_printf(b, "%s:%u ", m->file, m->line);
		t2_pad(b, NORMAL_FL_WIDTH);
	}
	switch (m->type) {
	case NT_T2_VERSION:
		t2_puts(b, "version ");
		str_arg(b, m, "exe");
		break;
	case NT_T2_START:
		t2_puts(b, "start ");
		t2_sq_argv(b, t2_arg(m, "argv"));
		break;
	case NT_T2_EXIT:
	case NT_T2_ATEXIT:
	case NT_T2_SIGNAL:
		t2_printf(b, "%s elapsed:%.6f code:%d",
			  m->type == NT_T2_EXIT ? "exit" : m->type == NT_T2_ATEXIT ? "atexit" : "signal",
			  secs(m->t_abs_us),
			  (int)t2_arg_int(m, m->type == NT_T2_SIGNAL ? "signo" : "code", 0));
		break;
	case NT_T2_ERROR:
		t2_puts(b, "error");
		if (fmt_nonempty(m)) {
			t2_put(b, " ", 1);
			str_arg(b, m, "msg");
		}
		break;
	case NT_T2_CMD_PATH:
		t2_puts(b, "cmd_path ");
		str_arg(b, m, "path");
		break;
	case NT_T2_CMD_ANCESTRY: {
		t2_puts(b, "cmd_ancestry");
		const nt_reader_arg *a = t2_arg(m, "ancestry");
		uint32_t pos = 0;
		int first = 1;
		while (a != NULL && nt_reader_list_next(a, &pos, &s, &len)) {
			t2_puts(b, first ? " " : " <- ");
			t2_put(b, s, len);
			first = 0;
		}
		break;
	}
	case NT_T2_CMD_NAME:
		t2_puts(b, "cmd_name ");
		name_and_hierarchy(b, m);
		break;
	case NT_T2_CMD_MODE:
		t2_puts(b, "cmd_mode ");
		str_arg(b, m, "name");
		break;
	case NT_T2_ALIAS:
		t2_puts(b, "alias ");
		str_arg(b, m, "alias");
		t2_puts(b, " -> ");
		t2_sq_argv(b, t2_arg(m, "argv"));
		break;
	case NT_T2_CHILD_START:
		t2_printf(b, "child_start[%d]", (int)t2_arg_int(m, "child_id", 0));
		if ((s = t2_arg_str(m, "cd", &len)) != NULL) {
			t2_puts(b, " cd ");
			t2_sq_pretty(b, s, len);
			t2_puts(b, ";");
		}
		t2_put(b, " ", 1);
		t2_sq_argv(b, t2_arg(m, "argv"));
		break;
	case NT_T2_CHILD_EXIT:
		t2_printf(b, "child_exit[%d] pid:%d code:%d elapsed:%.6f",
			  (int)t2_arg_int(m, "child_id", 0), (int)t2_arg_int(m, "pid", 0),
			  (int)t2_arg_int(m, "code", 0), secs(m->t_rel_us));
		break;
	case NT_T2_CHILD_READY:
		t2_printf(b, "child_ready[%d] pid:%d ready:", (int)t2_arg_int(m, "child_id", 0),
			  (int)t2_arg_int(m, "pid", 0));
		str_arg(b, m, "ready");
		t2_printf(b, " elapsed:%.6f", secs(m->t_rel_us));
		break;
	case NT_T2_EXEC:
		t2_printf(b, "exec[%d] ", (int)t2_arg_int(m, "exec_id", 0));
		if ((s = t2_arg_str(m, "exe", &len)) != NULL) {
			t2_put(b, s, len);
			t2_put(b, " ", 1);
		}
		t2_sq_argv(b, t2_arg(m, "argv"));
		break;
	case NT_T2_EXEC_RESULT:
		t2_printf(b, "exec_result[%d] ", (int)t2_arg_int(m, "exec_id", 0));
		exec_code(b, m);
		break;
	case NT_T2_DEF_PARAM:
		t2_puts(b, "def_param scope:");
		str_arg(b, m, "scope");
		t2_put(b, " ", 1);
		str_arg(b, m, "param");
		sep_arg(b, m, "=", "value");
		break;
	case NT_T2_DEF_REPO:
		worktree(b, m, "worktree ");
		break;
	case NT_T2_PRINTF:
		str_arg(b, m, "msg");
		break;
	case NT_T2_TIMER:
	case NT_T2_TH_TIMER:
		t2_printf(b, "%s %s/%s intervals:%" PRIu64 " total:%8.6f min:%8.6f max:%8.6f",
			  m->type == NT_T2_TIMER ? "timer" : "th_timer",
			  m->category ? m->category : "", m->label ? m->label : "",
			  (uint64_t)t2_arg_int(m, "intervals", 0), ns_secs(m, "t_total"),
			  ns_secs(m, "t_min"), ns_secs(m, "t_max"));
		break;
	case NT_T2_COUNTER:
	case NT_T2_TH_COUNTER:
		t2_printf(b, "%s %s/%s value:%" PRIu64,
			  m->type == NT_T2_COUNTER ? "counter" : "th_counter",
			  m->category ? m->category : "", m->label ? m->label : "",
			  (uint64_t)t2_arg_int(m, "count", 0));
		break;
	default:
		break;
	}
}

int t2_normal_writes(nt_t2_event t)
{
	switch (t) {
	case NT_T2_THREAD_START:
	case NT_T2_THREAD_EXIT:
	case NT_T2_REGION_ENTER:
	case NT_T2_REGION_LEAVE:
	case NT_T2_DATA:
	case NT_T2_DATA_JSON:
	case NT_T2_TOO_MANY_FILES:
	case NT_T2_UNKNOWN: return 0;
	default: return 1;
	}
}

int t2_perf_writes(nt_t2_event t)
{
	return t != NT_T2_TOO_MANY_FILES && t != NT_T2_UNKNOWN;
}

/* ---- PERF ------------------------------------------------------------------------------- */

#define PERF_FL_WIDTH 28
#define PERF_THREAD_WIDTH 24
#define PERF_EVENT_WIDTH 12
#define PERF_REPO_WIDTH 3
#define PERF_CATEGORY_WIDTH 12

/* Which columns Git fills: t_abs for events timed from the process start, t_rel for the
 * ones that end something. */
static int perf_has_t_abs(nt_t2_event t)
{
	switch (t) {
	case NT_T2_START:
	case NT_T2_EXIT:
	case NT_T2_SIGNAL:
	case NT_T2_ATEXIT:
	case NT_T2_CHILD_START:
	case NT_T2_CHILD_EXIT:
	case NT_T2_CHILD_READY:
	case NT_T2_THREAD_START:
	case NT_T2_THREAD_EXIT:
	case NT_T2_EXEC:
	case NT_T2_EXEC_RESULT:
	case NT_T2_REGION_ENTER:
	case NT_T2_REGION_LEAVE:
	case NT_T2_DATA:
	case NT_T2_DATA_JSON:
	case NT_T2_PRINTF: return 1;
	default: return 0;
	}
}

static int perf_has_t_rel(nt_t2_event t)
{
	switch (t) {
	case NT_T2_CHILD_EXIT:
	case NT_T2_CHILD_READY:
	case NT_T2_THREAD_EXIT:
	case NT_T2_REGION_LEAVE:
	case NT_T2_DATA:
	case NT_T2_DATA_JSON: return 1;
	default: return 0;
	}
}

static void perf_region_payload(t2_buf *b, const t2_msg *m)
{
	uint32_t len;
	const char *s;
	if (m->label != NULL)
		t2_printf(b, "label:%s", m->label);
	/* Git adds the space for any non-empty format, so a message that expanded to ""
	 * (recorded, empty) still has it. */
	if ((s = t2_arg_str(m, "msg", &len)) != NULL) {
		t2_put(b, " ", 1);
		t2_put(b, s, len);
	}
}

void t2_format_perf(t2_buf *b, const t2_msg *m, int brief)
{
	uint32_t len;
	const char *s;
	if (!brief) {
		local_clock(b, m);
		t2_put(b, " ", 1);
		size_t end = b->len + PERF_FL_WIDTH;
		if (m->file != NULL && m->file[0] != '\0') {
			char fl[64];
			int n = snprintf(fl, sizeof(fl), ":%u", m->line);
			size_t flen = strlen(m->file) + (size_t)n;
			if (flen <= PERF_FL_WIDTH) {
				t2_puts(b, m->file);
				t2_puts(b, fl);
			} else {
				/* "..." and the last 25 characters of "file:line". */
				size_t keep = PERF_FL_WIDTH - 3, from = flen - keep, flen0 = strlen(m->file);
				t2_puts(b, "...");
				if (from < flen0)
					t2_puts(b, m->file + from);
				t2_puts(b, fl + (from > flen0 ? from - flen0 : 0));
			}
		}
		t2_pad(b, end);
		t2_puts(b, " | ");
	}
	const char *ev = nt_t2_event_names[m->type];
	t2_printf(b, "d%u | %-*s | %-*s | ", m->depth, PERF_THREAD_WIDTH, m->thread,
		  PERF_EVENT_WIDTH, ev);
	size_t col = b->len + PERF_REPO_WIDTH;
	if (m->has_repo)
		t2_printf(b, "r%d ", (int)m->repo);
	t2_pad(b, col);
	t2_puts(b, " | ");
	if (perf_has_t_abs(m->type) && m->has_t_abs)
		t2_printf(b, "%9.6f | ", secs(m->t_abs_us));
	else
		t2_printf(b, "%9s | ", " ");
	if (perf_has_t_rel(m->type) && m->has_t_rel)
		t2_printf(b, "%9.6f | ", secs(m->t_rel_us));
	else
		t2_printf(b, "%9s | ", " ");
	char scope[64] = "";
	const char *cat = m->category ? m->category : "";
	if (m->type == NT_T2_DEF_PARAM) {
		s = t2_arg_str(m, "scope", &len);
		snprintf(scope, sizeof(scope), "scope:%.*s", s ? (int)(len < 40 ? len : 40) : 0,
			 s ? s : "");
		cat = scope;
	}
	t2_printf(b, "%-*.*s | ", PERF_CATEGORY_WIDTH, PERF_CATEGORY_WIDTH, cat);
	for (uint32_t i = 0; i < m->dots; i++)
		t2_put(b, ".", 1);

	switch (m->type) {
	case NT_T2_VERSION:
		str_arg(b, m, "exe");
		break;
	case NT_T2_START:
		t2_sq_argv(b, t2_arg(m, "argv"));
		break;
	case NT_T2_EXIT:
	case NT_T2_ATEXIT:
		t2_printf(b, "code:%d", (int)t2_arg_int(m, "code", 0));
		break;
	case NT_T2_SIGNAL:
		t2_printf(b, "signo:%d", (int)t2_arg_int(m, "signo", 0));
		break;
	case NT_T2_ERROR:
		if (fmt_nonempty(m))
			str_arg(b, m, "msg");
		break;
	case NT_T2_CMD_PATH:
		str_arg(b, m, "path");
		break;
	case NT_T2_CMD_ANCESTRY:
		t2_puts(b, "ancestry:[");
		t2_sq_argv(b, t2_arg(m, "ancestry"));
		t2_puts(b, "]");
		break;
	case NT_T2_CMD_NAME:
		name_and_hierarchy(b, m);
		break;
	case NT_T2_CMD_MODE:
		str_arg(b, m, "name");
		break;
	case NT_T2_ALIAS:
		t2_puts(b, "alias:");
		str_arg(b, m, "alias");
		t2_puts(b, " argv:[");
		t2_sq_argv(b, t2_arg(m, "argv"));
		t2_puts(b, "]");
		break;
	case NT_T2_CHILD_START:
		t2_printf(b, "[ch%d] class:", (int)t2_arg_int(m, "child_id", 0));
		if ((s = t2_arg_str(m, "child_class", &len)) != NULL)
			t2_put(b, s, len);
		if ((s = t2_arg_str(m, "hook_name", &len)) != NULL) {
			t2_puts(b, " hook:");
			t2_put(b, s, len);
		}
		if ((s = t2_arg_str(m, "cd", &len)) != NULL) {
			t2_puts(b, " cd:");
			t2_sq_pretty(b, s, len);
		}
		t2_puts(b, " argv:[");
		t2_sq_argv(b, t2_arg(m, "argv"));
		t2_puts(b, "]");
		break;
	case NT_T2_CHILD_EXIT:
		t2_printf(b, "[ch%d] pid:%d code:%d", (int)t2_arg_int(m, "child_id", 0),
			  (int)t2_arg_int(m, "pid", 0), (int)t2_arg_int(m, "code", 0));
		break;
	case NT_T2_CHILD_READY:
		t2_printf(b, "[ch%d] pid:%d ready:", (int)t2_arg_int(m, "child_id", 0),
			  (int)t2_arg_int(m, "pid", 0));
		str_arg(b, m, "ready");
		break;
	case NT_T2_EXEC: {
		t2_printf(b, "id:%d argv:[", (int)t2_arg_int(m, "exec_id", 0));
		const nt_reader_arg *argv = t2_arg(m, "argv");
		if ((s = t2_arg_str(m, "exe", &len)) != NULL) {
			t2_put(b, s, len);
			if (argv != NULL && argv->type == NT_ARG_STRING_LIST && argv->value.list.count)
				t2_put(b, " ", 1);
		}
		t2_sq_argv(b, argv);
		t2_puts(b, "]");
		break;
	}
	case NT_T2_EXEC_RESULT:
		t2_printf(b, "id:%d ", (int)t2_arg_int(m, "exec_id", 0));
		exec_code(b, m);
		break;
	case NT_T2_DEF_PARAM:
		str_arg(b, m, "param");
		sep_arg(b, m, ":", "value");
		break;
	case NT_T2_DEF_REPO:
		worktree(b, m, "worktree:");
		break;
	case NT_T2_REGION_ENTER:
	case NT_T2_REGION_LEAVE:
		perf_region_payload(b, m);
		break;
	case NT_T2_DATA:
	case NT_T2_DATA_JSON:
		t2_printf(b, "%s:", m->label ? m->label : "");
		char num[24];
		if ((s = t2_value_text(m, num, &len)) != NULL)
			t2_put(b, s, len);
		break;
	case NT_T2_PRINTF:
		str_arg(b, m, "msg");
		break;
	case NT_T2_TIMER:
	case NT_T2_TH_TIMER:
		t2_printf(b, "name:%s intervals:%" PRIu64 " total:%8.6f min:%8.6f max:%8.6f",
			  m->label ? m->label : "", (uint64_t)t2_arg_int(m, "intervals", 0),
			  ns_secs(m, "t_total"), ns_secs(m, "t_min"), ns_secs(m, "t_max"));
		break;
	case NT_T2_COUNTER:
	case NT_T2_TH_COUNTER:
		t2_printf(b, "name:%s value:%" PRIu64, m->label ? m->label : "",
			  (uint64_t)t2_arg_int(m, "count", 0));
		break;
	default:
		break;
	}
}
