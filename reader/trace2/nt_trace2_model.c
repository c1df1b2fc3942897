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

#include "reader/common/nt_out.h"
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
	int have_start;    /* start_ns below is the process start's ticks, converted once */
	int64_t start_ns;
} t2_process;

struct t2_model {
	nt_reader *r;
	/* A state per thread that sent a message, found by index through a table of 4-byte
	 * places (1 + its place, 0 = none yet): an archive that defines one thread of index
	 * 1,048,575 costs 4 MiB of places, not a 1 KiB state for every index below it (1 GiB).
	 * There are as many states as the reader defines threads: every event's thread is one. */
	uint32_t *place;
	uint32_t nplaces;   /* the reader's nt_reader_thread_index_limit() */
	t2_thread *threads;
	uint32_t nthreads, used;
	t2_process *procs;  /* by process index */
	uint32_t nprocs;
	t2_clock clock_local, clock_utc; /* see t2_split_time */
	const char *depth_sid; /* the last SID whose '/' were counted, and their count */
	uint32_t depth;
};

/* The process start in ns (the ticks converted once per process, not once per message). */
static int64_t process_start_ns(t2_model *m, const nt_reader_process *p)
{
	t2_process *pp = p->index < m->nprocs ? &m->procs[p->index] : NULL;
	if (pp == NULL)
		return nt_reader_ticks_to_ns(m->r, p->start_ticks);
	if (!pp->have_start) {
		pp->start_ns = nt_reader_ticks_to_ns(m->r, p->start_ticks);
		pp->have_start = 1;
	}
	return pp->start_ns;
}

/* Git's SID depth: the '/' in it (counted once per SID string). */
static uint32_t sid_depth(t2_model *m, const char *sid)
{
	if (sid != m->depth_sid) {
		uint32_t d = 0;
		for (const char *s = sid; *s; s++)
			d += *s == '/';
		m->depth_sid = sid;
		m->depth = d;
	}
	return m->depth;
}

t2_model *t2_model_new(nt_reader *r)
{
	t2_model *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->r = r;
	m->nplaces = nt_reader_thread_index_limit(r);
	m->nthreads = nt_reader_thread_count(r);
	m->nprocs = nt_reader_process_count(r);
	m->place = calloc(m->nplaces ? m->nplaces : 1, sizeof(*m->place));
	m->threads = calloc(m->nthreads ? m->nthreads : 1, sizeof(*m->threads));
	m->procs = calloc(m->nprocs ? m->nprocs : 1, sizeof(*m->procs));
	if (m->place == NULL || m->threads == NULL || m->procs == NULL) {
		t2_model_free(m);
		return NULL;
	}
	return m;
}

/* *arr (of *n elements of `elem` bytes) made to hold `want`, the new elements zeroed.
 * Returns 0 when memory runs out (then *arr and *n are unchanged). */
static int grow_zeroed(void *arr, uint32_t *n, uint32_t want, size_t elem)
{
	void **p = arr;
	if (want <= *n)
		return 1;
	char *q = realloc(*p, (size_t)want * elem);
	if (q == NULL)
		return 0;
	memset(q + (size_t)*n * elem, 0, (size_t)(want - *n) * elem);
	*p = q;
	*n = want;
	return 1;
}

int t2_model_rebind(t2_model *m, nt_reader *r)
{
	/* A failure leaves a table larger and zeroed where nothing used it: the model's state
	 * is unchanged. */
	if (!grow_zeroed(&m->place, &m->nplaces, nt_reader_thread_index_limit(r),
			 sizeof(*m->place)) ||
	    !grow_zeroed(&m->threads, &m->nthreads, nt_reader_thread_count(r),
			 sizeof(*m->threads)) ||
	    !grow_zeroed(&m->procs, &m->nprocs, nt_reader_process_count(r), sizeof(*m->procs)))
		return 0;
	m->r = r;
	m->depth_sid = NULL; /* a pointer into the previous reader */
	return 1;
}

void t2_model_free(t2_model *m)
{
	if (m == NULL)
		return;
	free(m->place);
	free(m->threads);
	free(m->procs);
	free(m);
}

/* ---- the field table, as values ------------------------------------------------------- */

#define ROW_(m, key, type, store, when)                                                         \
	{ #key, NT_T2_TYPE_##type, NT_T2_STORE_##store, NT_T2_WHEN_##when },
/* One array per message; the sentinel keeps a message without keys a valid array. */
#define MSG_ROWS_(id, name)                                                                     \
	static const t2_field rows_##id[] = { NT_T2_FIELDS_##id(ROW_, id){ 0 } };
NT_T2_EVENTS(MSG_ROWS_)
#define MSG_LIST_(id, name) [NT_T2E_##id] = { rows_##id, NT_T2_NFIELDS_##id },
const t2_field_list t2_fields[NT_T2_EVENT_COUNT] = { NT_T2_EVENTS(MSG_LIST_) };

const t2_field *t2_field_stored(nt_t2_event t, nt_t2_store store)
{
	for (uint32_t i = 0; i < t2_fields[t].n; i++)
		if (t2_fields[t].row[i].store == store)
			return &t2_fields[t].row[i];
	return NULL;
}

/* The argument names of T2_X_*. */
static const char *const x_names[T2_NX] = {
	[T2_X_REPO] = NT_T2_ARG_REPO,
	[T2_X_CATEGORY] = NT_T2_ARG_CATEGORY,
	[T2_X_LABEL] = NT_T2_ARG_LABEL,
	[T2_X_EVENT] = NT_T2_ARG_EVENT,
	[T2_X_T_ABS] = NT_T2_NAME(START, t_abs),
	[T2_X_T_REL] = NT_T2_NAME(REGION_LEAVE, t_rel),
	[T2_X_T_REL_TICKS] = NT_T2_ARG_T_REL_TICKS,
	[T2_X_NESTING] = NT_T2_NAME(REGION_ENTER, nesting),
};

/* Files each argument under its row (ARG rows) or its T2_X_* name; the first of a name
 * wins. */
static void collect_args(t2_msg *o)
{
	const t2_field_list *fl = &t2_fields[o->type];
	for (uint32_t i = 0; i < o->ev->arg_count; i++) {
		const nt_reader_arg *a = &o->ev->args[i];
		if (a->type == NT_ARG_JSON)
			continue;
		const nt_reader_arg **slot = NULL;
		for (uint32_t k = 0; k < fl->n && slot == NULL; k++)
			if (fl->row[k].store == NT_T2_STORE_ARG &&
			    strcmp(fl->row[k].key, a->name) == 0)
				slot = &o->arg[k];
		for (uint32_t k = 0; k < T2_NX && slot == NULL; k++)
			if (strcmp(x_names[k], a->name) == 0)
				slot = &o->x[k];
		if (slot != NULL && *slot == NULL)
			*slot = a;
	}
}

const char *t2_str(const nt_reader_arg *a, uint32_t *len)
{
	if (a == NULL || (a->type != NT_ARG_STRING && a->type != NT_ARG_STRING_REF))
		return NULL;
	*len = a->value.str.len;
	return a->value.str.ptr;
}

const char *t2_value_text(const nt_reader_arg *a, char *buf, uint32_t *len)
{
	const char *s = t2_str(a, len);
	if (s != NULL || a == NULL)
		return s;
	if (a->type == NT_ARG_INT32 || a->type == NT_ARG_INT64)
		*len = (uint32_t)nt_fmt_i64(buf, a->value.i64);
	else if (a->type == NT_ARG_UINT32 || a->type == NT_ARG_UINT64)
		*len = (uint32_t)nt_fmt_u64(buf, a->value.u64);
	else
		return NULL;
	return buf;
}

int64_t t2_int(const nt_reader_arg *a, int64_t dflt)
{
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

static int arg_u64(const nt_reader_arg *a, uint64_t *out)
{
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
	if (arg_u64(o->x[T2_X_T_REL], &o->t_rel_us))
		return 1;
	if (!arg_u64(o->x[T2_X_T_REL_TICKS], &ticks))
		return 0;
	uint64_t end = o->ev->ticks, start = ticks < end ? end - ticks : 0;
	o->t_rel_us = us_between(nt_reader_ticks_to_ns(r, start), nt_reader_ticks_to_ns(r, end));
	return 1;
}

/* What the process record and the event itself say: SID, thread, file:line, time. */
static void decode_common(const nt_reader_event *e, const nt_reader_process *p, t2_msg *o)
{
	o->type = (nt_t2_event)(e->kind - NT_KIND_T2_FIRST);
	o->ev = e;
	o->thread = e->thread->name;
	o->sid = p ? p->sid : "";
	o->brief_capture = p && (p->flags & NT_PROCESS_BRIEF);
	o->utc_known = p && (p->flags & NT_PROCESS_UTC_OFFSET_KNOWN);
	o->utc_offset = p ? p->utc_offset : 0;
	o->file = e->file[0] || e->line ? e->file : NULL;
	o->line = e->line;
	if (o->brief_capture && e->file[0] == '\0')
		o->file = NULL;
	o->has_time = !o->brief_capture || NT_T2_TIMED_WHEN_BRIEF(o->type);
	/* Rounded down, also before 1970; wall_ns comes from the file and may be INT64_MIN,
	 * whose negation is undefined (found by fuzzing: tests/fuzz/corpus/render_trace2). */
	o->time_us = e->wall_ns / 1000 - (e->wall_ns % 1000 < 0);
}

/* Category, label and repository: the call site's, unless an argument says otherwise. */
static void decode_site(const nt_reader_event *e, t2_msg *o)
{
	if (t2_field_stored(o->type, NT_T2_STORE_CATEGORY) != NULL)
		o->category = e->category[0] ? e->category : NULL;
	if (t2_field_stored(o->type, NT_T2_STORE_LABEL) != NULL)
		o->label = e->name[0] ? e->name : NULL;
	uint32_t len;
	if (t2_str(o->x[T2_X_CATEGORY], &len) != NULL && len == 0)
		o->category = "";
	if (t2_str(o->x[T2_X_LABEL], &len) != NULL && len == 0)
		o->label = "";
	uint64_t v;
	if (arg_u64(o->x[T2_X_REPO], &v)) {
		o->has_repo = 1;
		o->repo = (int64_t)v;
	} else if (e->callsite_repo != 0) {
		o->has_repo = 1;
		o->repo = (int64_t)e->callsite_repo - 1;
	}
}

/* t_abs: recorded, else from the clock (the writer's archives), else an estimate from the
 * start event's time; t_rel: recorded (regions and data: see decode_nesting). */
static void decode_times(t2_model *m, const nt_reader_process *p, t2_msg *o)
{
	nt_reader *r = m->r;
	t2_process *pp = p && p->index < m->nprocs ? &m->procs[p->index] : NULL;
	if (arg_u64(o->x[T2_X_T_ABS], &o->t_abs_us)) {
		o->has_t_abs = o->t_abs_exact = 1;
		if (o->type == NT_T2E_START && pp != NULL && o->has_time) {
			/* Both come from the file: an offset that does not fit is no offset. */
			pp->have_offset = o->t_abs_us <= INT64_MAX &&
					  !__builtin_sub_overflow(o->time_us, (int64_t)o->t_abs_us,
								  &pp->offset_us);
		}
	} else if (p != NULL && !nt_reader_info(r)->stream_ordered) {
		o->has_t_abs = o->t_abs_exact = 1;
		o->t_abs_us = us_between(process_start_ns(m, p), o->ev->time_ns);
	} else if (pp != NULL && pp->have_offset && o->has_time) {
		o->has_t_abs = 1;
		int64_t d;
		if (__builtin_sub_overflow(o->time_us, pp->offset_us, &d))
			d = o->time_us > 0 ? INT64_MAX : 0;
		o->t_abs_us = d > 0 ? (uint64_t)d : 0;
	}
	o->has_t_rel = recorded_t_rel(r, o);
}

/* The thread's state, started on its first message: slot 0 is the process start, or the
 * thread's own start for a thread_start. */
static t2_thread *thread_of(t2_model *m, const nt_reader_event *e, const nt_reader_process *p,
			    t2_msg *o, t2_thread *dummy)
{
	t2_thread *t = dummy;
	uint32_t *place = e->thread->index < m->nplaces ? &m->place[e->thread->index] : NULL;
	if (place != NULL && *place == 0 && m->used < m->nthreads)
		*place = ++m->used;
	if (place != NULL && *place != 0)
		t = &m->threads[*place - 1];
	else
		memset(dummy, 0, sizeof(*dummy));
	if (!t->known) {
		t->known = 1;
		t->nr_open = 1;
		t->start_ns[0] = strcmp(e->thread->name, "main") == 0 || o->type != NT_T2E_THREAD_START
					 ? (p ? process_start_ns(m, p) : 0)
					 : e->time_ns;
	}
	return t;
}

/* Git's region bookkeeping: nesting, PERF's dots, and t_rel of region_leave and data. */
static void decode_nesting(t2_thread *t, const nt_reader_event *e, t2_msg *o)
{
	uint64_t nest;
	int explicit_nesting = arg_u64(o->x[T2_X_NESTING], &nest);
	switch (o->type) {
	case NT_T2E_THREAD_START:
		t->nr_open = 1;
		t->start_ns[0] = e->time_ns;
		break;
	case NT_T2E_REGION_ENTER:
		if (explicit_nesting)
			t->nr_open = open_count(nest);
		o->nesting = explicit_nesting ? (uint32_t)nest : t->nr_open;
		o->dots = (t->nr_open - 1) * 2;
		if (t->nr_open < T2_STACK_MAX)
			t->start_ns[t->nr_open] = e->time_ns;
		t->nr_open++;
		break;
	case NT_T2E_REGION_LEAVE:
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
	case NT_T2E_DATA:
	case NT_T2E_DATA_JSON:
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
	case NT_T2E_ATEXIT:
	case NT_T2E_THREAD_EXIT:
		/* Git unwinds the thread's open regions before atexit and thread_exit. */
		t->nr_open = 1;
		o->dots = 0;
		break;
	case NT_T2E_TIMER:
	case NT_T2E_TH_TIMER:
	case NT_T2E_COUNTER:
	case NT_T2E_TH_COUNTER:
		o->dots = 0;
		break;
	default:
		o->dots = (t->nr_open - 1) * 2;
		break;
	}
}

int t2_model_decode(t2_model *m, const nt_reader_event *e, t2_msg *o)
{
	if (!nt_kind_is_t2(e->kind))
		return 0;
	memset(o, 0, sizeof(*o));
	const nt_reader_process *p = nt_reader_process_at(m->r, e->thread->process);
	decode_common(e, p, o);
	o->depth = sid_depth(m, o->sid);
	o->clock_local = &m->clock_local;
	o->clock_utc = &m->clock_utc;
	collect_args(o);
	decode_site(e, o);
	decode_times(m, p, o);
	t2_thread dummy;
	decode_nesting(thread_of(m, e, p, o, &dummy), e, o);
	return 1;
}
