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

#include "reader/common/nt_grow.h"
#include "reader/common/nt_out.h"
#include "nt_trace2.h"

/* ---- line buffer ------------------------------------------------------------------------ */

int t2_grow(t2_buf *b, size_t n)
{
	if (b->oom)
		return 0;
	if (n < b->cap - b->len)
		return 1;
	if (n >= SIZE_MAX - b->len || !nt_grow(&b->p, &b->cap, b->len + n + 1, 1)) {
		b->oom = 1;
		return 0;
	}
	return 1;
}

/* Room for n more bytes and the NUL. */
static inline int reserve(t2_buf *b, size_t n)
{
	if (!b->oom && n < b->cap - b->len)
		return 1;
	return t2_grow(b, n);
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
	if (b->len >= col || !reserve(b, col - b->len))
		return;
	memset(b->p + b->len, ' ', col - b->len);
	b->len = col;
	b->p[b->len] = '\0';
}

void t2_put_u64(t2_buf *b, uint64_t v)
{
	char d[NT_FMT_U64_MAX];
	t2_put(b, d, nt_fmt_u64(d, v));
}

void t2_put_i64(t2_buf *b, int64_t v)
{
	char d[NT_FMT_U64_MAX + 1];
	t2_put(b, d, nt_fmt_i64(d, v));
}

void t2_put_secs(t2_buf *b, uint64_t us)
{
	char d[32];
	t2_put(b, d, nt_fmt_us_as_secs(d, us));
}

/* "%<w>.6f" of us / 1e6: right-aligned in w columns. */
static void put_secs_right(t2_buf *b, uint64_t us, size_t w)
{
	char d[32];
	size_t n = nt_fmt_us_as_secs(d, us);
	t2_pad(b, b->len + (n < w ? w - n : 0));
	t2_put(b, d, n);
}

/* "%-<w>s" (never cut) and "%-<w>.<w>s" (cut at w bytes). */
static void put_left(t2_buf *b, const char *s, size_t w)
{
	size_t start = b->len;
	t2_puts(b, s);
	t2_pad(b, start + w);
}

static void put_left_cut(t2_buf *b, const char *s, size_t w)
{
	size_t start = b->len;
	t2_put(b, s, strnlen(s, w));
	t2_pad(b, start + w);
}

/* "%02d" of 0..99. */
static void put_2digits(char *p, int v)
{
	memcpy(p, nt_digit_pairs + (v < 0 || v > 99 ? 0 : v) * 2, 2);
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

long t2_split_time(int64_t us, int local, int32_t offset, struct tm *tm, t2_clock *cache)
{
	time_t secs = (time_t)(us / 1000000);
	long frac = (long)(us % 1000000);
	if (frac < 0) {
		frac += 1000000;
		secs--;
	}
	if (cache != NULL && cache->valid && cache->secs == (int64_t)secs &&
	    cache->local == (local == 1) && (local == 1 || cache->offset == offset)) {
		*tm = cache->tm;
		return frac;
	}
	time_t shifted = secs;
	if (local == 1) {
		localtime_r(&secs, tm);
	} else {
		shifted += offset;
		gmtime_r(&shifted, tm);
	}
	if (cache != NULL)
		*cache = (t2_clock){ 1, local == 1, offset, (int64_t)secs, *tm };
	return frac;
}

static void local_clock(t2_buf *b, const t2_msg *m)
{
	struct tm tm;
	/* Git prints the traced process's local time; without its offset, the reader's TZ. */
	long frac = t2_split_time(m->time_us, !m->utc_known, m->utc_offset, &tm, m->clock_local);
	char hms[16]; /* "%02d:%02d:%02d.%06ld" */
	put_2digits(hms, tm.tm_hour);
	hms[2] = ':';
	put_2digits(hms + 3, tm.tm_min);
	hms[5] = ':';
	put_2digits(hms + 6, tm.tm_sec);
	hms[8] = '.';
	nt_fmt_u64_zero_padded(hms + 9, (uint64_t)frac, 6);
	t2_put(b, hms, 15);
}

/* `sep` and a string argument, when recorded. */
static void sep_str(t2_buf *b, const char *sep, const nt_reader_arg *a)
{
	uint32_t len;
	const char *s = t2_str(a, &len);
	if (s != NULL) {
		t2_puts(b, sep);
		t2_put(b, s, len);
	}
}

static void put_str(t2_buf *b, const nt_reader_arg *a)
{
	sep_str(b, "", a);
}

/* def_repo's worktree, shell-quoted, after `keyword`. */
static void worktree(t2_buf *b, const t2_msg *m, const char *keyword)
{
	uint32_t len;
	const char *s = T2_STR(m, DEF_REPO, worktree, &len);
	t2_puts(b, keyword);
	if (s != NULL)
		t2_sq_pretty(b, s, len);
}

/* exec_result's code, and strerror of a positive one (the reader's libc and locale). */
static void exec_code(t2_buf *b, const t2_msg *m)
{
	int code = (int)T2_INT(m, EXEC_RESULT, code);
	t2_puts(b, "code:");
	t2_put_i64(b, code);
	if (code > 0)
		t2_printf(b, " err:%s", strerror(code));
}

/* cmd_name's "name (hierarchy)"; no parentheses for an empty hierarchy. */
static void name_and_hierarchy(t2_buf *b, const t2_msg *m)
{
	uint32_t len;
	put_str(b, T2_ARG(m, CMD_NAME, name));
	if (T2_STR(m, CMD_NAME, hierarchy, &len) != NULL && len > 0) {
		sep_str(b, " (", T2_ARG(m, CMD_NAME, hierarchy));
		t2_puts(b, ")");
	}
}

/* error's message: Git writes it only for a non-empty format. */
static void error_msg(t2_buf *b, const t2_msg *m, const char *sep)
{
	uint32_t len;
	if (T2_STR(m, ERROR, fmt, &len) != NULL && len > 0) {
		t2_puts(b, sep);
		put_str(b, T2_ARG(m, ERROR, msg));
	}
}

static double secs(uint64_t us)
{
	return (double)us / 1000000.0;
}

/* Timer totals: nanoseconds, printed as seconds. */
static double ns_secs(const nt_reader_arg *a)
{
	return (double)t2_int(a, 0) / 1.0e9;
}

/* "intervals:%u total:%8.6f min:%8.6f max:%8.6f" of timer and th_timer (same fields). */
static void timer_totals(t2_buf *b, const t2_msg *m)
{
	t2_printf(b, "intervals:%" PRIu64 " total:%8.6f min:%8.6f max:%8.6f",
		  (uint64_t)T2_INT(m, TIMER, intervals), ns_secs(T2_ARG(m, TIMER, t_total)),
		  ns_secs(T2_ARG(m, TIMER, t_min)), ns_secs(T2_ARG(m, TIMER, t_max)));
}

static void local_prefix(t2_buf *b, const t2_msg *m)
{
	local_clock(b, m);
	t2_put(b, " ", 1);
}

/* ---- NORMAL ----------------------------------------------------------------------------- */

#define NORMAL_FL_WIDTH 50

/* cmd_ancestry's names, raw, joined by " <- ". */
static void ancestry(t2_buf *b, const t2_msg *m)
{
	uint32_t pos = 0, len;
	const char *s;
	const nt_reader_arg *a = T2_ARG(m, CMD_ANCESTRY, ancestry);
	for (int first = 1; a != NULL && nt_reader_list_next(a, &pos, &s, &len); first = 0) {
		t2_puts(b, first ? " " : " <- ");
		t2_put(b, s, len);
	}
}

/* The process-level messages; 0 for other types. */
static int normal_process(t2_buf *b, const t2_msg *m)
{
	switch (m->type) {
	case NT_T2E_VERSION:
		t2_puts(b, "version ");
		put_str(b, T2_ARG(m, VERSION, exe));
		return 1;
	case NT_T2E_START:
		t2_puts(b, "start ");
		t2_sq_argv(b, T2_ARG(m, START, argv));
		return 1;
	case NT_T2E_EXIT:
	case NT_T2E_ATEXIT:
	case NT_T2E_SIGNAL:
		t2_printf(b, "%s elapsed:%.6f code:%d", nt_t2_event_names[m->type],
			  secs(m->t_abs_us), (int)(m->type == NT_T2E_SIGNAL ? T2_INT(m, SIGNAL, signo)
									   : T2_INT(m, EXIT, code)));
		return 1;
	case NT_T2E_ERROR:
		t2_puts(b, "error");
		error_msg(b, m, " ");
		return 1;
	case NT_T2E_CMD_PATH:
		t2_puts(b, "cmd_path ");
		put_str(b, T2_ARG(m, CMD_PATH, path));
		return 1;
	case NT_T2E_CMD_ANCESTRY:
		t2_puts(b, "cmd_ancestry");
		ancestry(b, m);
		return 1;
	case NT_T2E_CMD_NAME:
		t2_puts(b, "cmd_name ");
		name_and_hierarchy(b, m);
		return 1;
	case NT_T2E_CMD_MODE:
		t2_puts(b, "cmd_mode ");
		put_str(b, T2_ARG(m, CMD_MODE, name));
		return 1;
	case NT_T2E_ALIAS:
		t2_puts(b, "alias ");
		put_str(b, T2_ARG(m, ALIAS, alias));
		t2_puts(b, " -> ");
		t2_sq_argv(b, T2_ARG(m, ALIAS, argv));
		return 1;
	case NT_T2E_DEF_PARAM:
		t2_puts(b, "def_param scope:");
		put_str(b, T2_ARG(m, DEF_PARAM, scope));
		t2_put(b, " ", 1);
		put_str(b, T2_ARG(m, DEF_PARAM, param));
		sep_str(b, "=", T2_ARG(m, DEF_PARAM, value));
		return 1;
	case NT_T2E_DEF_REPO:
		worktree(b, m, "worktree ");
		return 1;
	default:
		return 0;
	}
}

/* Children, exec, printf, timers and counters. */
static void normal_other(t2_buf *b, const t2_msg *m)
{
	uint32_t len;
	const char *s;
	switch (m->type) {
	case NT_T2E_CHILD_START:
		t2_printf(b, "child_start[%d]", (int)T2_INT(m, CHILD_START, child_id));
		if ((s = T2_STR(m, CHILD_START, cd, &len)) != NULL) {
			t2_puts(b, " cd ");
			t2_sq_pretty(b, s, len);
			t2_puts(b, ";");
		}
		t2_put(b, " ", 1);
		t2_sq_argv(b, T2_ARG(m, CHILD_START, argv));
		break;
	case NT_T2E_CHILD_EXIT:
		t2_printf(b, "child_exit[%d] pid:%d code:%d elapsed:%.6f",
			  (int)T2_INT(m, CHILD_EXIT, child_id), (int)T2_INT(m, CHILD_EXIT, pid),
			  (int)T2_INT(m, CHILD_EXIT, code), secs(m->t_rel_us));
		break;
	case NT_T2E_CHILD_READY:
		t2_printf(b, "child_ready[%d] pid:%d ready:", (int)T2_INT(m, CHILD_READY, child_id),
			  (int)T2_INT(m, CHILD_READY, pid));
		put_str(b, T2_ARG(m, CHILD_READY, ready));
		t2_printf(b, " elapsed:%.6f", secs(m->t_rel_us));
		break;
	case NT_T2E_EXEC:
		t2_printf(b, "exec[%d] ", (int)T2_INT(m, EXEC, exec_id));
		if ((s = T2_STR(m, EXEC, exe, &len)) != NULL) {
			t2_put(b, s, len);
			t2_put(b, " ", 1);
		}
		t2_sq_argv(b, T2_ARG(m, EXEC, argv));
		break;
	case NT_T2E_EXEC_RESULT:
		t2_printf(b, "exec_result[%d] ", (int)T2_INT(m, EXEC_RESULT, exec_id));
		exec_code(b, m);
		break;
	case NT_T2E_PRINTF:
		put_str(b, T2_ARG(m, PRINTF, msg));
		break;
	case NT_T2E_TIMER:
	case NT_T2E_TH_TIMER:
		t2_printf(b, "%s %s/%s ", nt_t2_event_names[m->type], m->category ? m->category : "",
			  m->label ? m->label : "");
		timer_totals(b, m);
		break;
	case NT_T2E_COUNTER:
	case NT_T2E_TH_COUNTER:
		t2_printf(b, "%s %s/%s value:%" PRIu64, nt_t2_event_names[m->type],
			  m->category ? m->category : "", m->label ? m->label : "",
			  (uint64_t)T2_INT(m, COUNTER, count));
		break;
	default:
		break;
	}
}

void t2_format_normal(t2_buf *b, const t2_msg *m, int brief)
{
	if (!brief) {
		local_prefix(b, m);
		if (m->file != NULL && m->file[0] != '\0') {
			t2_puts(b, m->file);
			t2_put(b, ":", 1);
			t2_put_u64(b, m->line);
			t2_put(b, " ", 1);
		}
		t2_pad(b, NORMAL_FL_WIDTH);
	}
	if (!normal_process(b, m))
		normal_other(b, m);
}

int t2_normal_writes(nt_t2_event t)
{
	switch (t) {
	case NT_T2E_THREAD_START:
	case NT_T2E_THREAD_EXIT:
	case NT_T2E_REGION_ENTER:
	case NT_T2E_REGION_LEAVE:
	case NT_T2E_DATA:
	case NT_T2E_DATA_JSON:
	case NT_T2E_TOO_MANY_FILES:
	case NT_T2E_UNKNOWN: return 0;
	default: return 1;
	}
}

int t2_perf_writes(nt_t2_event t)
{
	return t != NT_T2E_TOO_MANY_FILES && t != NT_T2E_UNKNOWN;
}

/* ---- PERF ------------------------------------------------------------------------------- */

#define PERF_FL_WIDTH 28
#define PERF_THREAD_WIDTH 24
#define PERF_EVENT_WIDTH 12
#define PERF_REPO_WIDTH 3
#define PERF_CATEGORY_WIDTH 12

/* Which messages fill PERF's t_abs column: the ones timed from the process start. */
static int perf_has_t_abs(nt_t2_event t)
{
	switch (t) {
	case NT_T2E_START:
	case NT_T2E_EXIT:
	case NT_T2E_SIGNAL:
	case NT_T2E_ATEXIT:
	case NT_T2E_CHILD_START:
	case NT_T2E_CHILD_EXIT:
	case NT_T2E_CHILD_READY:
	case NT_T2E_THREAD_START:
	case NT_T2E_THREAD_EXIT:
	case NT_T2E_EXEC:
	case NT_T2E_EXEC_RESULT:
	case NT_T2E_REGION_ENTER:
	case NT_T2E_REGION_LEAVE:
	case NT_T2E_DATA:
	case NT_T2E_DATA_JSON:
	case NT_T2E_PRINTF: return 1;
	default: return 0;
	}
}

/* PERF's t_rel column: the messages that have a t_rel key (they end something). */
static int perf_has_t_rel(nt_t2_event t)
{
	return t2_field_stored(t, NT_T2_STORE_T_REL) != NULL ||
	       t2_field_stored(t, NT_T2_STORE_RUNTIME) != NULL;
}

/* "<time> <file:line padded to 28> | ": file:line longer than 28 becomes "..." and its
 * last 25 characters. */
static void perf_prefix(t2_buf *b, const t2_msg *m)
{
	local_prefix(b, m);
	size_t end = b->len + PERF_FL_WIDTH;
	if (m->file != NULL && m->file[0] != '\0') {
		char fl[NT_FMT_U64_MAX + 2];
		size_t n = 1 + nt_fmt_u64(fl + 1, m->line);
		fl[0] = ':';
		fl[n] = '\0';
		size_t flen = strlen(m->file) + n;
		if (flen <= PERF_FL_WIDTH) {
			t2_puts(b, m->file);
			t2_puts(b, fl);
		} else {
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

/* "d<depth> | thread | event | repo | t_abs | t_rel | category | " and the dots. */
static void perf_columns(t2_buf *b, const t2_msg *m)
{
	/* "d%u | %-24s | %-12s | " */
	t2_put(b, "d", 1);
	t2_put_u64(b, m->depth);
	t2_put(b, " | ", 3);
	put_left(b, m->thread, PERF_THREAD_WIDTH);
	t2_put(b, " | ", 3);
	put_left(b, nt_t2_event_names[m->type], PERF_EVENT_WIDTH);
	t2_put(b, " | ", 3);
	size_t col = b->len + PERF_REPO_WIDTH;
	if (m->has_repo) { /* "r%d " */
		t2_put(b, "r", 1);
		t2_put_i64(b, (int)m->repo);
		t2_put(b, " ", 1);
	}
	t2_pad(b, col);
	t2_puts(b, " | ");
	/* "%9.6f | " of t_abs and t_rel, or blanks */
	if (perf_has_t_abs(m->type) && m->has_t_abs)
		put_secs_right(b, m->t_abs_us, 9);
	else
		t2_pad(b, b->len + 9);
	t2_put(b, " | ", 3);
	if (perf_has_t_rel(m->type) && m->has_t_rel)
		put_secs_right(b, m->t_rel_us, 9);
	else
		t2_pad(b, b->len + 9);
	t2_put(b, " | ", 3);
	char scope[64] = "";
	const char *cat = m->category ? m->category : "";
	if (m->type == NT_T2E_DEF_PARAM) {
		uint32_t len;
		const char *s = T2_STR(m, DEF_PARAM, scope, &len);
		snprintf(scope, sizeof(scope), "scope:%.*s", s ? (int)(len < 40 ? len : 40) : 0,
			 s ? s : "");
		cat = scope;
	}
	put_left_cut(b, cat, PERF_CATEGORY_WIDTH);
	t2_put(b, " | ", 3);
	if (m->dots > 0 && reserve(b, m->dots)) {
		memset(b->p + b->len, '.', m->dots);
		b->len += m->dots;
		b->p[b->len] = '\0';
	}
}

/* The process-level messages' PERF text; 0 for other types. */
static int perf_process(t2_buf *b, const t2_msg *m)
{
	switch (m->type) {
	case NT_T2E_VERSION: put_str(b, T2_ARG(m, VERSION, exe)); return 1;
	case NT_T2E_START: t2_sq_argv(b, T2_ARG(m, START, argv)); return 1;
	case NT_T2E_EXIT:
	case NT_T2E_ATEXIT: t2_printf(b, "code:%d", (int)T2_INT(m, EXIT, code)); return 1;
	case NT_T2E_SIGNAL: t2_printf(b, "signo:%d", (int)T2_INT(m, SIGNAL, signo)); return 1;
	case NT_T2E_ERROR: error_msg(b, m, ""); return 1;
	case NT_T2E_CMD_PATH: put_str(b, T2_ARG(m, CMD_PATH, path)); return 1;
	case NT_T2E_CMD_ANCESTRY:
		t2_puts(b, "ancestry:[");
		t2_sq_argv(b, T2_ARG(m, CMD_ANCESTRY, ancestry));
		t2_puts(b, "]");
		return 1;
	case NT_T2E_CMD_NAME: name_and_hierarchy(b, m); return 1;
	case NT_T2E_CMD_MODE: put_str(b, T2_ARG(m, CMD_MODE, name)); return 1;
	case NT_T2E_ALIAS:
		t2_puts(b, "alias:");
		put_str(b, T2_ARG(m, ALIAS, alias));
		t2_puts(b, " argv:[");
		t2_sq_argv(b, T2_ARG(m, ALIAS, argv));
		t2_puts(b, "]");
		return 1;
	case NT_T2E_DEF_PARAM:
		put_str(b, T2_ARG(m, DEF_PARAM, param));
		sep_str(b, ":", T2_ARG(m, DEF_PARAM, value));
		return 1;
	case NT_T2E_DEF_REPO: worktree(b, m, "worktree:"); return 1;
	default: return 0;
	}
}

/* child_start's "[ch<id>] class:<cls> hook:<name> cd:<dir> argv:[...]". */
static void perf_child_start(t2_buf *b, const t2_msg *m)
{
	uint32_t len;
	const char *s;
	t2_printf(b, "[ch%d] class:", (int)T2_INT(m, CHILD_START, child_id));
	put_str(b, T2_ARG(m, CHILD_START, child_class));
	sep_str(b, " hook:", T2_ARG(m, CHILD_START, hook_name));
	if ((s = T2_STR(m, CHILD_START, cd, &len)) != NULL) {
		t2_puts(b, " cd:");
		t2_sq_pretty(b, s, len);
	}
	t2_puts(b, " argv:[");
	t2_sq_argv(b, T2_ARG(m, CHILD_START, argv));
	t2_puts(b, "]");
}

/* exec's "id:<id> argv:[<exe> <argv>]". */
static void perf_exec(t2_buf *b, const t2_msg *m)
{
	uint32_t len;
	const char *s;
	t2_printf(b, "id:%d argv:[", (int)T2_INT(m, EXEC, exec_id));
	const nt_reader_arg *argv = T2_ARG(m, EXEC, argv);
	if ((s = T2_STR(m, EXEC, exe, &len)) != NULL) {
		t2_put(b, s, len);
		if (argv != NULL && argv->type == NT_ARG_STRING_LIST && argv->value.list.count)
			t2_put(b, " ", 1);
	}
	t2_sq_argv(b, argv);
	t2_puts(b, "]");
}

/* region_*'s "label:<l>" and " <msg>": Git adds the space for any non-empty format, so a
 * message that expanded to "" (recorded, empty) still has it. */
static void perf_region(t2_buf *b, const t2_msg *m)
{
	if (m->label != NULL)
		t2_puts(b, "label:"), t2_puts(b, m->label);
	sep_str(b, " ", m->type == NT_T2E_REGION_LEAVE ? T2_ARG(m, REGION_LEAVE, msg)
						      : T2_ARG(m, REGION_ENTER, msg));
}

/* Children, threads, exec, regions, data, printf, timers and counters. */
static void perf_other(t2_buf *b, const t2_msg *m)
{
	uint32_t len;
	const char *s;
	char num[24];
	switch (m->type) {
	case NT_T2E_CHILD_START: perf_child_start(b, m); break;
	case NT_T2E_CHILD_EXIT:
		t2_printf(b, "[ch%d] pid:%d code:%d", (int)T2_INT(m, CHILD_EXIT, child_id),
			  (int)T2_INT(m, CHILD_EXIT, pid), (int)T2_INT(m, CHILD_EXIT, code));
		break;
	case NT_T2E_CHILD_READY:
		t2_printf(b, "[ch%d] pid:%d ready:", (int)T2_INT(m, CHILD_READY, child_id),
			  (int)T2_INT(m, CHILD_READY, pid));
		put_str(b, T2_ARG(m, CHILD_READY, ready));
		break;
	case NT_T2E_EXEC: perf_exec(b, m); break;
	case NT_T2E_EXEC_RESULT:
		t2_printf(b, "id:%d ", (int)T2_INT(m, EXEC_RESULT, exec_id));
		exec_code(b, m);
		break;
	case NT_T2E_REGION_ENTER:
	case NT_T2E_REGION_LEAVE: perf_region(b, m); break;
	case NT_T2E_DATA:
	case NT_T2E_DATA_JSON:
		t2_puts(b, m->label ? m->label : "");
		t2_put(b, ":", 1);
		if ((s = t2_value_text(T2_ARG(m, DATA, value), num, &len)) != NULL)
			t2_put(b, s, len);
		break;
	case NT_T2E_PRINTF: put_str(b, T2_ARG(m, PRINTF, msg)); break;
	case NT_T2E_TIMER:
	case NT_T2E_TH_TIMER:
		t2_printf(b, "name:%s ", m->label ? m->label : "");
		timer_totals(b, m);
		break;
	case NT_T2E_COUNTER:
	case NT_T2E_TH_COUNTER:
		t2_printf(b, "name:%s value:%" PRIu64, m->label ? m->label : "",
			  (uint64_t)T2_INT(m, COUNTER, count));
		break;
	default: break;
	}
}

void t2_format_perf(t2_buf *b, const t2_msg *m, int brief)
{
	if (!brief)
		perf_prefix(b, m);
	perf_columns(b, m);
	if (!perf_process(b, m))
		perf_other(b, m);
}

/* data and data_json share their PERF text: the table gives both the value at one place. */
NT_STATIC_ASSERT((int)NT_T2_F_DATA_value == (int)NT_T2_F_DATA_JSON_value,
		 "data and data_json differ");
