/* nt_render_text.c - one aligned line per event, for people. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "nt_render_util.h"

#define MAX_COL 32

typedef struct text_ctx {
	FILE *out;
	int64_t start_ns; /* the session start: times are shown from it */
	const nt_render_options *opt;
	int wpid; /* width of the PID column; 0: none (one process, whose pid is its header's) */
	int wthread, wcat, wname;
	nt_duration_stack **stacks; /* by thread index, allocated on first use */
	uint32_t nstacks;
	int oom;
} text_ctx;

static void print_arg(FILE *out, const nt_reader_arg *a)
{
	fprintf(out, " %s=", a->name);
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: fprintf(out, "%" PRId64, a->value.i64); break;
	case NT_ARG_UINT32:
	case NT_ARG_UINT64: fprintf(out, "%" PRIu64, a->value.u64); break;
	case NT_ARG_DOUBLE: fprintf(out, "%.17g", a->value.f64); break;
	case NT_ARG_BOOL: fputs(a->value.u64 ? "true" : "false", out); break;
	case NT_ARG_POINTER: fprintf(out, "0x%" PRIx64, a->value.u64); break;
	case NT_ARG_STRING:
	case NT_ARG_STRING_REF:
	case NT_ARG_JSON: /* the JSON text as a string: it is shown, not interpreted */
		fputc('"', out);
		nt_json_write_string(out, a->value.str.ptr, a->value.str.len);
		fputc('"', out);
		break;
	case NT_ARG_STRING_LIST: nt_json_write_list(out, a); break;
	default: fputs("?", out); break;
	}
}

static nt_duration_stack *stack_of(text_ctx *t, uint32_t thread)
{
	if (thread >= t->nstacks)
		return NULL;
	if (t->stacks[thread] == NULL) {
		t->stacks[thread] = calloc(1, sizeof(nt_duration_stack));
		if (t->stacks[thread] == NULL)
			t->oom = 1;
	}
	return t->stacks[thread];
}

static int on_event(void *ctx, const nt_reader_event *e)
{
	text_ctx *t = ctx;
	int64_t rel = nt_sat_sub(e->time_ns, t->start_ns);
	uint64_t a = rel < 0 ? (uint64_t)(-(rel + 1)) + 1 : (uint64_t)rel;
	char thread[64], dur[32] = "", when[32];
	snprintf(when, sizeof(when), "%s%" PRIu64 ".%09" PRIu64, rel < 0 ? "-" : "", a / 1000000000u,
		 a % 1000000000u);
	snprintf(thread, sizeof(thread), "%s:%" PRIu32, e->thread->name[0] ? e->thread->name : "thread",
		 e->thread->tid);
	nt_duration_stack *s = stack_of(t, e->thread->index);
	uint64_t d;
	if (e->kind == NT_KIND_COMPLETE)
		nt_format_duration(dur, sizeof(dur), e->duration_ns);
	else if (nt_event_opens(e) && s)
		nt_duration_stack_push(s, e->time_ns);
	else if (nt_event_closes(e) && s && nt_duration_stack_pop(s, e->time_ns, &d))
		nt_format_duration(dur, sizeof(dur), d);
	fprintf(t->out, "%16s  ", when);
	if (t->wpid)
		fprintf(t->out, "%*" PRIu32 "  ", t->wpid, e->thread->pid);
	fprintf(t->out, "%-*.*s  %s   %-*.*s  %-*.*s  %10s ", t->wthread, t->wthread, thread,
		nt_kind_phase(e->kind), t->wcat, t->wcat, nt_event_display_category(e), t->wname,
		t->wname, nt_event_display_name(e), dur);
	for (uint32_t i = 0; i < e->arg_count; i++)
		print_arg(t->out, &e->args[i]);
	fputc('\n', t->out);
	return 0;
}

static void on_gap(void *ctx, const nt_reader_gap *g)
{
	text_ctx *t = ctx;
	int64_t rel = nt_sat_sub(g->time_ns, t->start_ns);
	char pid[32] = ""; /* threads of two processes may share a tid: say whose it is */
	if (t->wpid)
		snprintf(pid, sizeof(pid), " (pid %" PRIu32 ")", g->thread->pid);
	fprintf(t->out, "-- gap: %" PRIu64 " events of thread %s:%" PRIu32
			"%s lost (dropped or overwritten) before %s%.9f s\n",
		g->events, g->thread->name, g->thread->tid, pid, rel < 0 ? "-" : "",
		rel < 0 ? -((double)rel / 1e9) : (double)rel / 1e9);
	/* Durations cannot be matched across lost events: start the nesting afresh. */
	nt_duration_stack *s = stack_of(t, g->thread->index);
	if (s != NULL)
		s->depth = 0;
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	text_ctx *t = ctx;
	fprintf(t->out, "-- damaged archive at byte %" PRIu64 ": %s\n", off, msg);
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

int nt_render_text(nt_reader *r, FILE *out, const nt_render_options *user_opt)
{
	nt_render_options copy;
	const nt_render_options *opt = &copy;
	if (nt_render_options_in(user_opt, &copy, "nt_render_text") != 0)
		return -1;
	text_ctx t = { .out = out, .opt = opt,
		       .start_ns = (int64_t)nt_reader_info(r)->start_monotonic_ns };
	t.wpid = pid_width(r);
	t.wthread = clamp_col(nt_reader_max_name_len(r) + 8, 6);
	t.wcat = clamp_col(nt_reader_max_category_len(r), 8);
	t.wname = clamp_col(nt_reader_max_event_name_len(r), 4);
	t.nstacks = nt_reader_thread_index_limit(r);
	t.stacks = calloc(t.nstacks ? t.nstacks : 1, sizeof(*t.stacks));
	if (t.stacks == NULL)
		return -1;
	fprintf(out, "%16s  ", "TIME(s)");
	if (t.wpid)
		fprintf(out, "%*s  ", t.wpid, "PID");
	fprintf(out, "%-*s  %s  %-*s  %-*s  %10s  %s\n", t.wthread, "THREAD", "PH", t.wcat,
		"CATEGORY", t.wname, "NAME", "DURATION", "ARGS");
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error, .on_gap = on_gap };
	int rc = nt_reader_visit(r, &cb, &t, opt->order, opt->policy);
	for (uint32_t i = 0; i < t.nstacks; i++)
		free(t.stacks[i]);
	free(t.stacks);
	return t.oom ? -1 : rc;
}
