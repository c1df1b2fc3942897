/*
 * nt_trace2_model.c - resolve every field of a Trace2 message, as trace2/tr2_tls.c would.
 *
 * Git keeps, per thread, a stack of start times whose slot 0 is the thread (or process)
 * start: region_enter reports the depth before its push, region_leave the depth after its
 * pop, data the current depth; t_rel is the time since the matching enter (leave) or the
 * innermost open region (data). The writer records regions as bare 8-byte events, so the
 * reader replays that bookkeeping here. An imported EVENT log carries Git's own numbers,
 * which win; its other events then take their PERF indentation from the last nesting seen.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../decode/nt_reader_internal.h"
#include "nt_trace2.h"

#define T2_STACK_MAX 128

typedef struct t2_thread {
	uint32_t nr_open; /* Git's nr_open_regions: 1 + open regions */
	int64_t start_ns[T2_STACK_MAX]; /* [0]: thread start; [i]: region i */
	int known;
} t2_thread;

typedef struct t2_process {
	int have_offset;   /* the start event gave time - t_abs: estimates for other events */
	int64_t offset_us;
} t2_process;

struct t2_model {
	nt_reader *r;
	t2_thread *threads; /* by thread index */
	uint32_t nthreads;
	t2_process *procs;  /* by process index */
	uint32_t nprocs;
};

t2_model *t2_model_new(nt_reader *r)
{
	t2_model *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->r = r;
	m->nthreads = r->nthreads;
	m->nprocs = r->nprocesses;
	m->threads = calloc(m->nthreads ? m->nthreads : 1, sizeof(*m->threads));
	m->procs = calloc(m->nprocs ? m->nprocs : 1, sizeof(*m->procs));
	if (m->threads == NULL || m->procs == NULL) {
		t2_model_free(m);
		return NULL;
	}
	return m;
}

void t2_model_free(t2_model *m)
{
	if (m == NULL)
		return;
	free(m->threads);
	free(m->procs);
	free(m);
}

const nt_reader_arg *t2_arg(const t2_msg *m, const char *name)
{
	for (uint32_t i = 0; i < m->ev->arg_count; i++)
		if (m->ev->args[i].type != NT_ARG_JSON && strcmp(m->ev->args[i].name, name) == 0)
			return &m->ev->args[i];
	return NULL;
}

const char *t2_arg_str(const t2_msg *m, const char *name, uint32_t *len)
{
	const nt_reader_arg *a = t2_arg(m, name);
	if (a == NULL || (a->type != NT_ARG_STRING && a->type != NT_ARG_STRING_REF))
		return NULL;
	*len = a->value.str.len;
	return a->value.str.ptr;
}

const char *t2_value_text(const t2_msg *m, char *buf, uint32_t *len)
{
	const char *s = t2_arg_str(m, "value", len);
	if (s != NULL)
		return s;
	const nt_reader_arg *a = t2_arg(m, "value");
	if (a == NULL)
		return NULL;
	if (a->type == NT_ARG_INT32 || a->type == NT_ARG_INT64)
		*len = (uint32_t)snprintf(buf, 24, "%" PRId64, a->value.i64);
	else if (a->type == NT_ARG_UINT32 || a->type == NT_ARG_UINT64)
		*len = (uint32_t)snprintf(buf, 24, "%" PRIu64, a->value.u64);
	else
		return NULL;
	return buf;
}

int64_t t2_arg_int(const t2_msg *m, const char *name, int64_t dflt)
{
	const nt_reader_arg *a = t2_arg(m, name);
	if (a == NULL)
		return dflt;
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: return a->value.i64;
	case NT_ARG_UINT32:
	case NT_ARG_UINT64:
	case NT_ARG_BOOL: return (int64_t)a->value.u64;
	default: return dflt;
	}
}

static int arg_u64(const t2_msg *m, const char *name, uint64_t *out)
{
	const nt_reader_arg *a = t2_arg(m, name);
	if (a == NULL)
		return 0;
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: *out = a->value.i64 < 0 ? 0 : (uint64_t)a->value.i64; return 1;
	case NT_ARG_UINT32:
	case NT_ARG_UINT64: *out = a->value.u64; return 1;
	default: return 0;
	}
}

/* A recorded nesting as an open-region count Git could have had: 1 .. T2_STACK_MAX - 2
 * (the archive is untrusted: 0 or 2^63 must not reach the indentation). */
static uint32_t open_count(uint64_t nesting)
{
	return nesting < 1 ? 1 : nesting > T2_STACK_MAX - 2 ? T2_STACK_MAX - 2 : (uint32_t)nesting;
}

static uint64_t us_between(int64_t from_ns, int64_t to_ns)
{
	return to_ns > from_ns ? ((uint64_t)to_ns - (uint64_t)from_ns) / 1000u : 0;
}

/* t_rel as recorded: Git's microseconds (imported logs, earlier archives), or the writer's
 * run time in ticks, converted like the event's own ticks so that it is as exact as the
 * archive's clock pairs, whatever rate the writer calibrated at start-up. */
static int recorded_t_rel(nt_reader *r, t2_msg *o)
{
	uint64_t ticks;
	if (arg_u64(o, "t_rel", &o->t_rel_us))
		return 1;
	if (!arg_u64(o, NT_T2_ARG_T_REL_TICKS, &ticks))
		return 0;
	uint64_t end = o->ev->ticks, start = ticks < end ? end - ticks : 0;
	o->t_rel_us = us_between(nt_reader_ticks_to_ns(r, start), nt_reader_ticks_to_ns(r, end));
	return 1;
}

/* Does this message type name its category and label in the call site? */
static int has_label(nt_t2_event t)
{
	switch (t) {
	case NT_T2_REGION_ENTER:
	case NT_T2_REGION_LEAVE:
	case NT_T2_DATA:
	case NT_T2_DATA_JSON:
	case NT_T2_TIMER:
	case NT_T2_TH_TIMER:
	case NT_T2_COUNTER:
	case NT_T2_TH_COUNTER: return 1;
	default: return 0;
	}
}

int t2_model_decode(t2_model *m, const nt_reader_event *e, t2_msg *o)
{
	if (!nt_kind_is_t2(e->kind))
		return 0;
	nt_reader *r = m->r;
	memset(o, 0, sizeof(*o));
	o->type = (nt_t2_event)(e->kind - NT_KIND_T2_FIRST);
	o->ev = e;
	o->thread = e->thread->name;
	const nt_reader_process *p = nt_reader_process_at(r, e->thread->process);
	o->sid = p ? p->sid : "";
	for (const char *s = o->sid; *s; s++)
		o->depth += *s == '/';
	o->brief_capture = p && (p->flags & NT_PROCESS_BRIEF);
	o->utc_known = p && (p->flags & NT_PROCESS_UTC_OFFSET_KNOWN);
	o->utc_offset = p ? p->utc_offset : 0;
	o->file = e->file[0] || e->line ? e->file : NULL;
	o->line = e->line;
	if (o->brief_capture && e->file[0] == '\0')
		o->file = NULL;
	o->has_time = !o->brief_capture || o->type == NT_T2_VERSION || o->type == NT_T2_ATEXIT;
	o->time_us = e->wall_ns >= 0 ? e->wall_ns / 1000 : -((-e->wall_ns + 999) / 1000);
	if (has_label(o->type)) {
		o->category = e->category[0] ? e->category : NULL;
		o->label = e->name[0] ? e->name : NULL;
	}
	uint32_t len;
	const char *s;
	if ((s = t2_arg_str(o, "category", &len)) != NULL && len == 0)
		o->category = "";
	if ((s = t2_arg_str(o, "label", &len)) != NULL && len == 0)
		o->label = "";
	uint64_t v;
	if (arg_u64(o, "repo", &v)) {
		o->has_repo = 1;
		o->repo = (int64_t)v;
	} else if (e->callsite_repo != 0) {
		o->has_repo = 1;
		o->repo = (int64_t)e->callsite_repo - 1;
	}

	/* t_abs: recorded, else from the clock (the writer's archives), else an estimate. */
	t2_process *pp = p && p->index < m->nprocs ? &m->procs[p->index] : NULL;
	int64_t proc_start_ns = p ? nt_reader_ticks_to_ns(r, p->start_ticks) : 0;
	if (arg_u64(o, "t_abs", &o->t_abs_us)) {
		o->has_t_abs = o->t_abs_exact = 1;
		if (o->type == NT_T2_START && pp != NULL && o->has_time) {
			pp->have_offset = 1;
			pp->offset_us = o->time_us - (int64_t)o->t_abs_us;
		}
	} else if (p != NULL && !r->info.stream_ordered) {
		o->has_t_abs = o->t_abs_exact = 1;
		o->t_abs_us = us_between(proc_start_ns, e->time_ns);
	} else if (pp != NULL && pp->have_offset && o->has_time) {
		o->has_t_abs = 1;
		int64_t d = o->time_us - pp->offset_us;
		o->t_abs_us = d > 0 ? (uint64_t)d : 0;
	}
	o->has_t_rel = recorded_t_rel(r, o);

	/* Nesting and indentation. */
	t2_thread *t = e->thread->index < m->nthreads ? &m->threads[e->thread->index] : NULL;
	t2_thread dummy = { 0 };
	if (t == NULL)
		t = &dummy;
	if (!t->known) {
		t->known = 1;
		t->nr_open = 1;
		t->start_ns[0] = strcmp(e->thread->name, "main") == 0 || o->type != NT_T2_THREAD_START
					 ? proc_start_ns : e->time_ns;
	}
	uint64_t nest;
	int explicit_nesting = arg_u64(o, "nesting", &nest);
	switch (o->type) {
	case NT_T2_THREAD_START:
		t->nr_open = 1;
		t->start_ns[0] = e->time_ns;
		break;
	case NT_T2_REGION_ENTER:
		if (explicit_nesting)
			t->nr_open = open_count(nest);
		o->nesting = explicit_nesting ? (uint32_t)nest : t->nr_open;
		o->dots = (t->nr_open - 1) * 2;
		if (t->nr_open < T2_STACK_MAX)
			t->start_ns[t->nr_open] = e->time_ns;
		t->nr_open++;
		break;
	case NT_T2_REGION_LEAVE:
		if (explicit_nesting)
			t->nr_open = open_count(nest) + 1;
		if (t->nr_open > 1) {
			t->nr_open--;
			if (!o->has_t_rel && t->nr_open < T2_STACK_MAX) {
				o->has_t_rel = 1;
				o->t_rel_us = us_between(t->start_ns[t->nr_open], e->time_ns);
			}
		}
		o->nesting = explicit_nesting ? (uint32_t)nest : t->nr_open;
		o->dots = (t->nr_open - 1) * 2;
		break;
	case NT_T2_DATA:
	case NT_T2_DATA_JSON:
		if (explicit_nesting)
			t->nr_open = open_count(nest);
		o->nesting = explicit_nesting ? (uint32_t)nest : t->nr_open;
		o->dots = (t->nr_open - 1) * 2;
		if (!o->has_t_rel) {
			uint32_t top = t->nr_open - 1 < T2_STACK_MAX ? t->nr_open - 1 : T2_STACK_MAX - 1;
			o->has_t_rel = 1;
			o->t_rel_us = us_between(t->start_ns[top], e->time_ns);
		}
		break;
	case NT_T2_ATEXIT:
	case NT_T2_THREAD_EXIT:
		/* Git unwinds the thread's open regions before atexit and thread_exit. */
		t->nr_open = 1;
		o->dots = 0;
		break;
	case NT_T2_TIMER:
	case NT_T2_TH_TIMER:
	case NT_T2_COUNTER:
	case NT_T2_TH_COUNTER:
		o->dots = 0;
		break;
	default:
		o->dots = (t->nr_open - 1) * 2;
		break;
	}
	return 1;
}
