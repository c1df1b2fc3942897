/* nt_render_text.c - one aligned line per event, for people. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reader/common/nt_follow_loop.h"
#include "reader/common/nt_grow.h"
#include "nt_render_util.h"

#define MAX_COL 32

typedef struct text_ctx {
	nt_out out;
	int64_t start_ns; /* the session start: times are shown from it */
	const nt_render_options *opt;
	int wpid; /* width of the PID column; 0: none (one process, whose pid is its header's) */
	int wthread, wcat, wname;
	nt_duration_stack *stacks; /* by thread index */
	uint32_t nstacks;
	int oom;
	nt_follower *follow; /* nt_render_text_follow: the header is printed at the first line */
	int header_done;
} text_ctx;

/* "%-<w>.<w>s": at most w bytes of s, controls shown as '?', padded with spaces to w. */
static void put_left(nt_out *o, const char *s, int w)
{
	size_t n = strnlen(s, (size_t)w);
	char *p = nt_out_room(o, (size_t)w + 1); /* + 1: nt_unctrl's NUL */
	memcpy(p, s, n);
	n = nt_unctrl(p, n);
	memset(p + n, ' ', (size_t)w - n);
	nt_out_commit(o, (size_t)w);
}

/* "%<w>s" of n bytes (w <= 64): spaces first, never cut. */
static void put_right(nt_out *o, const char *s, size_t n, size_t w)
{
	if (n < w)
		nt_out_fill(o, ' ', w - n);
	nt_out_bytes(o, s, n);
}

static void print_arg(nt_out *out, const nt_reader_arg *a)
{
	nt_out_char(out, ' ');
	nt_out_name(out, a->name);
	nt_out_char(out, '=');
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: nt_out_i64(out, a->value.i64); break;
	case NT_ARG_UINT32:
	case NT_ARG_UINT64: nt_out_u64(out, a->value.u64); break;
	case NT_ARG_DOUBLE: nt_out_printf(out, "%.17g", a->value.f64); break; /* rare: no fast path */
	case NT_ARG_BOOL: nt_out_str(out, a->value.u64 ? "true" : "false"); break;
	case NT_ARG_POINTER: {
		char *p = nt_out_room(out, 18);
		memcpy(p, "0x", 2);
		nt_out_commit(out, 2 + nt_fmt_hex(p + 2, a->value.u64));
		break;
	}
	case NT_ARG_STRING:
	case NT_ARG_STRING_REF:
	case NT_ARG_JSON: /* the JSON text as a string: it is shown, not interpreted */
		nt_out_json_str(out, a->value.str.ptr, a->value.str.len);
		break;
	case NT_ARG_STRING_LIST: nt_json_write_list(out, a); break;
	default: nt_out_char(out, '?'); break;
	}
}

static nt_duration_stack *stack_of(text_ctx *t, uint32_t thread)
{
	return thread < t->nstacks ? &t->stacks[thread] : NULL;
}

static void free_stacks(text_ctx *t)
{
	for (uint32_t i = 0; t->stacks != NULL && i < t->nstacks; i++)
		nt_duration_stack_free(&t->stacks[i]);
	free(t->stacks);
}

/* The duration column's text: a Complete's own, or an End's from its Begin. */
static size_t duration_of(text_ctx *t, const nt_reader_event *e, char *dur, size_t cap)
{
	nt_duration_stack *s = stack_of(t, e->thread->index);
	uint64_t d;
	if (e->kind == NT_KIND_COMPLETE)
		return nt_format_duration(dur, cap, e->duration_ns);
	if (nt_event_opens(e) && s && !nt_duration_stack_push(s, e->time_ns))
		t->oom = 1;
	else if (nt_event_closes(e) && s && nt_duration_stack_pop(s, e->time_ns, &d))
		return nt_format_duration(dur, cap, d);
	return 0;
}

/* "<name or thread>:<tid>", as much of it as the column shows. */
static void put_thread(nt_out *o, const nt_reader_thread *th, int w)
{
	char label[NT_FMT_U64_MAX + 2 + MAX_COL];
	const char *name = th->name[0] ? th->name : "thread";
	size_t n = strnlen(name, MAX_COL);
	memcpy(label, name, n);
	label[n++] = ':';
	n += nt_fmt_u64(label + n, th->tid);
	label[n] = '\0';
	put_left(o, label, w);
}

static int on_event(void *ctx, const nt_reader_event *e)
{
	text_ctx *t = ctx;
	nt_out *o = &t->out;
	char when[48], dur[48];
	size_t nwhen = nt_fmt_fixed(when, nt_sat_sub(e->time_ns, t->start_ns), 1000000000u, 9);
	size_t ndur = duration_of(t, e, dur, sizeof(dur));
	put_right(o, when, nwhen, 16);
	nt_out_bytes(o, "  ", 2);
	if (t->wpid) {
		char pid[NT_FMT_U64_MAX];
		put_right(o, pid, nt_fmt_u64(pid, e->thread->pid), (size_t)t->wpid);
		nt_out_bytes(o, "  ", 2);
	}
	put_thread(o, e->thread, t->wthread);
	nt_out_bytes(o, "  ", 2);
	nt_out_str(o, nt_kind_phase(e->kind));
	nt_out_bytes(o, "   ", 3);
	put_left(o, nt_event_display_category(e), t->wcat);
	nt_out_bytes(o, "  ", 2);
	put_left(o, nt_event_display_name(e), t->wname);
	nt_out_bytes(o, "  ", 2);
	put_right(o, dur, ndur, 10);
	nt_out_char(o, ' ');
	if (e->id_scope != NT_ID_NONE) { /* the async or flow id: " id=0x2a", global " gid=0x2a" */
		const char *label = e->id_scope == NT_ID_GLOBAL ? " gid=0x" : " id=0x";
		size_t n = strlen(label);
		char *p = nt_out_room(o, n + 16);
		memcpy(p, label, n);
		nt_out_commit(o, n + nt_fmt_hex(p + n, e->id));
	}
	for (uint32_t i = 0; i < e->arg_count; i++)
		print_arg(o, &e->args[i]);
	nt_out_char(o, '\n');
	return o->failed; /* a dead output stops the visit */
}

static void on_gap(void *ctx, const nt_reader_gap *g)
{
	text_ctx *t = ctx;
	int64_t rel = nt_sat_sub(g->time_ns, t->start_ns);
	char pid[32] = ""; /* threads of two processes may share a tid: say whose it is */
	if (t->wpid)
		snprintf(pid, sizeof(pid), " (pid %" PRIu32 ")", g->thread->pid);
	nt_out_printf(&t->out, "-- gap: %" PRIu64 " event%s of thread ", g->events,
		      g->events == 1 ? "" : "s");
	nt_out_name(&t->out, g->thread->name);
	nt_out_printf(&t->out, ":%" PRIu32 "%s lost (dropped or overwritten) before %s%.9f s\n",
		      g->thread->tid, pid, rel < 0 ? "-" : "",
		      rel < 0 ? -((double)rel / 1e9) : (double)rel / 1e9);
	/* Durations cannot be matched across lost events: start the nesting afresh. */
	nt_duration_stack *s = stack_of(t, g->thread->index);
	if (s != NULL)
		s->depth = 0;
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	text_ctx *t = ctx;
	nt_out_printf(&t->out, "-- damaged archive at byte %" PRIu64 ": %s\n", off, msg);
	nt_render_forward_error(t->opt, off, msg);
}

static int clamp_col(uint32_t n, int min)
{
	return n > MAX_COL ? MAX_COL : (int)n < min ? min : (int)n;
}

/* The PID column's width: only a many-process reader has one, since there a tid alone no
 * longer names a thread (two processes may reuse it) and the header's pid is 0. The pid
 * shown is the thread's, as Chrome's output shows it. */
static int pid_width(const nt_reader *r)
{
	if (nt_reader_section_count(r) <= 1)
		return 0;
	uint32_t max = 0;
	for (uint32_t i = 0; i < nt_reader_thread_count(r); i++) {
		uint32_t pid = nt_reader_thread_at(r, i)->pid;
		max = pid > max ? pid : max;
	}
	int w = 1;
	for (; max >= 10; max /= 10)
		w++;
	return w < 3 ? 3 : w; /* at least as wide as "PID" */
}

/* The column titles. */
static void print_header(text_ctx *t)
{
	nt_out_printf(&t->out, "%16s  ", "TIME(s)");
	if (t->wpid)
		nt_out_printf(&t->out, "%*s  ", t->wpid, "PID");
	nt_out_printf(&t->out, "%-*s  %s  %-*s  %-*s  %10s  %s\n", t->wthread, "THREAD", "PH",
		      t->wcat, "CATEGORY", t->wname, "NAME", "DURATION", "ARGS");
}

/* After the events: what each process's writer lost where no gap shows it (a full oneshot
 * arena, circular overwrites before the oldest chunk kept), and saving that stopped. */
static void print_losses(text_ctx *t, const nt_reader *r)
{
	char line[256], line2[256];
	uint32_t n = nt_reader_section_count(r);
	for (uint32_t i = 0; i < n; i++) {
		const nt_reader_section *sec = nt_reader_section_peek(r, i);
		if ((sec->header_notes & (NT_HEADER_NOTE_LOSSES | NT_HEADER_NOTE_SAVE_STOPPED)) == 0)
			continue; /* the usual case, once per process of a bundle: no header decoded */
		nt_archive_info hdr;
		const nt_archive_info *in = n == 1 ? nt_reader_info(r)
				: nt_reader_section_header(r, i, &hdr) == 0 ? &hdr : NULL;
		const char *lost = nt_render_losses(in, line, sizeof(line));
		const char *stopped = nt_render_save_stopped(in, line2, sizeof(line2));
		if (lost == NULL && stopped == NULL)
			continue;
		char who[32] = ""; /* one line per process that lost some: whose, by the PID column */
		if (n > 1)
			snprintf(who, sizeof(who), "pid %" PRIu32 ": ", sec->pid);
		if (lost != NULL)
			nt_out_printf(&t->out, "-- %slost: %s\n", who, lost);
		if (stopped != NULL)
			nt_out_printf(&t->out, "-- %s%s\n", who, stopped);
	}
}

int nt_render_text(nt_reader *r, FILE *out, const nt_render_options *user_opt)
{
	nt_render_options copy;
	if (nt_render_options_in(user_opt, &copy, "nt_render_text") != 0)
		return -1;
	text_ctx *t = calloc(1, sizeof(*t)); /* the output block is 64 KiB: not on the stack */
	if (t == NULL)
		return -1;
	nt_out_init(&t->out, out);
	t->opt = &copy;
	t->start_ns = (int64_t)nt_reader_info(r)->start_monotonic_ns;
	t->wpid = pid_width(r);
	t->wthread = clamp_col(nt_reader_max_name_len(r) + 8, 6);
	t->wcat = clamp_col(nt_reader_max_category_len(r), 8);
	t->wname = clamp_col(nt_reader_max_event_name_len(r), 4);
	t->nstacks = nt_reader_thread_index_limit(r);
	t->stacks = calloc(t->nstacks ? t->nstacks : 1, sizeof(*t->stacks));
	int rc = -1;
	if (t->stacks != NULL) {
		print_header(t);
		nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error,
					   .on_gap = on_gap };
		rc = nt_reader_visit(r, &cb, t, copy.order, copy.policy);
		if (rc >= 0)
			print_losses(t, r);
		free_stacks(t);
	}
	if (nt_out_flush(&t->out) != 0 || t->oom)
		rc = -1;
	int saved = errno;
	free(t);
	errno = saved;
	return rc;
}

/* ---- live follow --------------------------------------------------------------------- */

/* Before a followed line: the column titles once (the session start comes from the first
 * poll's copy), and a duration stack for threads the archive defined since. The columns are
 * as wide as trace-dump's widest (MAX_COL): names defined later must fit them too. */
static int follow_ready(text_ctx *t, uint32_t thread)
{
	if (!t->header_done) {
		const nt_reader *r = nt_follow_reader(t->follow);
		t->start_ns = r ? (int64_t)nt_reader_info(r)->start_monotonic_ns : 0;
		print_header(t);
		t->header_done = 1;
	}
	if (thread >= t->nstacks) {
		size_t n = t->nstacks;
		if (!nt_grow(&t->stacks, &n, (size_t)thread + 1, sizeof(*t->stacks))) {
			t->oom = 1;
			return 0;
		}
		t->nstacks = (uint32_t)n;
	}
	return 1;
}

static int follow_event(void *ctx, const nt_reader_event *e)
{
	text_ctx *t = ctx;
	return follow_ready(t, e->thread->index) ? on_event(ctx, e) : 1;
}

static void follow_gap(void *ctx, const nt_reader_gap *g)
{
	text_ctx *t = ctx;
	if (follow_ready(t, g->thread->index))
		on_gap(ctx, g);
}

/* The end of one poll's output (nt_follow_loop): the titles even when nothing was
 * recorded yet, the writer's losses once the archive is done, then the lines out. */
static int text_after_poll(void *ctx, int status)
{
	text_ctx *t = ctx;
	const nt_reader *r = nt_follow_reader(t->follow);
	if (status != NT_FOLLOW_FAILED && r != NULL)
		follow_ready(t, 0);
	if ((status == NT_FOLLOW_FINISHED || status == NT_FOLLOW_ENDED) && r != NULL)
		print_losses(t, r); /* the header's final counts: the archive is done */
	return nt_out_flush(&t->out) != 0 || t->oom;
}

int nt_render_text_follow(nt_follower *f, FILE *out, const nt_render_options *user_opt,
			  unsigned interval_ms, int (*keep_going)(void *arg), void *arg)
{
	nt_render_options copy;
	if (f == NULL || out == NULL ||
	    nt_render_options_in(user_opt, &copy, "nt_render_text_follow") != 0)
		return NT_FOLLOW_FAILED;
	text_ctx *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NT_FOLLOW_FAILED;
	nt_out_init(&t->out, out);
	t->opt = &copy;
	t->follow = f;
	t->wthread = t->wcat = t->wname = MAX_COL;
	nt_reader_callbacks cb = { .on_event = follow_event, .on_gap = follow_gap };
	int st = nt_follow_loop(f, &cb, t, text_after_poll, interval_ms, keep_going, arg);
	free_stacks(t);
	int saved = errno;
	free(t);
	errno = saved;
	return st;
}
