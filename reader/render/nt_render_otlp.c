/*
 * nt_render_otlp.c - events to OpenTelemetry spans, span events, links and gauges (the
 * mapping: nanotrace_reader.h, OPENTELEMETRY, and doc/otlp.md).
 *
 * One visit, in the caller's order (time order by default, so that a flow's earlier
 * point comes before its later ones across processes). Each thread keeps a stack of its
 * open spans (OT_DEPTH_MAX); async spans and Trace2 child processes are open spans in a
 * map by their key (nt_id_key); each flow remembers the span of its latest point. A span
 * is encoded when it ends (nt_render_otlp_batch.c) and its memory reused: memory does not
 * grow with the archive.
 *
 * The protobuf bytes are written by hand with nt_pb.h, as the Perfetto renderer writes
 * its own, rather than by protobuf-c from the vendored .proto files. Why: an open span
 * receives its attributes, events and links one event at a time, and the archive's
 * strings are valid only during the callback; nt_pb appends each as its encoded fields
 * to the span's own buffer (one copy, no allocation once the buffer has grown), and the
 * finished span is one memcpy into the batch. With protobuf-c each attribute is a
 * KeyValue and an AnyValue struct, allocated, with its own copy of the strings, kept
 * until the span ends, then packed in a second pass and freed. Measured with
 * bench/otlp_pbc/run.sh (the same span, 6 attributes and an event with one, both ways, on
 * this project's 2-core machine, gcc -O2): protobuf-c 628-638 ns per span, nt_pb 74-82 ns,
 * 7.8-8.6 times as fast, 253 bytes each way. It also keeps libprotobuf-c out of the reader
 * library's dependencies. The field numbers are the vendored
 * schema's, proven by tests/reader/test_otlp.py.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/common/nt_grow.h"
#include "nt_render_ids.h"
#include "nt_render_otlp.h"

/* A flow's latest point: the span it was in. */
typedef struct ot_flow {
	uint64_t trace_hi, trace_lo, span;
} ot_flow;

/* The event's place in the visit (record offsets are not unique: a compressed chunk's
 * events share its offset), mixed with the archive's salt and what the id is for. */
static uint64_t span_id(const ot_ctx *c, uint64_t what)
{
	uint64_t id = ot_mix(c->salt ^ ot_mix(c->ordinal << 2 | what));
	return id ? id : 1;
}

/* The parent context of a root span of section `sec`, NULL when it has none. */
static const nt_traceparent *tp_of(const ot_ctx *c, uint32_t sec)
{
	return sec < c->nsections && c->tp[sec].has ? &c->tp[sec].tp : NULL;
}

static void trace_of_root(const ot_ctx *c, ot_span *s)
{
	const nt_traceparent *tp = tp_of(c, c->res[s->res].section);
	if (tp) {
		s->trace_hi = tp->trace_hi, s->trace_lo = tp->trace_lo, s->parent = tp->parent;
		return;
	}
	s->trace_hi = ot_mix(s->id ^ 0x6e616e6f74726163ull);
	s->trace_lo = ot_mix(s->id ^ 0x6f746c70ull) | 1;
}

/* A thread's place in c->threads and c->res_of (nthreads: c->stray, a thread the archive
 * never defined). */
static uint32_t place_of(const ot_ctx *c, const nt_reader_thread *t)
{
	return t->index < c->nindices && c->place_of[t->index] ? c->place_of[t->index] - 1
							       : c->nthreads;
}

ot_thread *ot_thread_at(ot_ctx *c, uint32_t place)
{
	return place < c->nthreads ? &c->threads[place] : &c->stray;
}

static ot_thread *thread_of(ot_ctx *c, const nt_reader_event *e)
{
	return ot_thread_at(c, place_of(c, e->thread));
}

/* The Resource of a thread's events: its section's process, or in a Trace2 import of many
 * processes the thread's own. */
static uint32_t res_of(ot_ctx *c, const nt_reader_thread *t)
{
	uint32_t place = place_of(c, t);
	if (c->res_of[place])
		return c->res_of[place] - 1;
	const nt_reader_process *t2 = nt_reader_process_at(c->r, t->process);
	uint32_t r = ot_res_find(c, t->section, t->pid, t2 && t2->defined ? t2 : NULL);
	if (place < c->nthreads && !c->oom)
		c->res_of[place] = r + 1;
	return r;
}

/* A new span of e: its parent `up` (the span open on e's thread), or for a root of a Trace2
 * process the process span, else none; `what` tells apart the spans one event makes. */
static void span_start(ot_ctx *c, ot_span *s, const nt_reader_event *e, const ot_span *up,
		       uint64_t what)
{
	s->id = span_id(c, what);
	s->start = e->wall_ns;
	s->name = nt_event_display_name(e);
	s->cat = nt_event_display_category(e);
	s->body.len = 0;
	s->events = s->links = s->dropped_events = s->dropped_links = 0;
	s->res = res_of(c, e->thread);
	s->pending = 0;
	s->t2_process = 0;
	const ot_proc *p = e->thread->process < c->nprocs ? &c->procs[e->thread->process] : NULL;
	if (up) {
		s->trace_hi = up->trace_hi, s->trace_lo = up->trace_lo, s->parent = up->id;
	} else if (p && p->open) {
		s->trace_hi = p->trace_hi, s->trace_lo = p->trace_lo, s->parent = p->id;
	} else {
		s->parent = 0;
		trace_of_root(c, s);
		s->pending = s->parent == 0; /* its first event may join it to a flow's trace */
	}
	if (e->file && e->file[0]) {
		ot_attr_str(&s->body, OT_SPAN_ATTRS, "code.filepath", e->file, strlen(e->file));
		ot_attr_int(&s->body, OT_SPAN_ATTRS, "code.lineno", e->line);
	}
	ot_attr_int(&s->body, OT_SPAN_ATTRS, "thread.id", e->thread->tid);
	if (e->thread->name[0])
		ot_attr_str(&s->body, OT_SPAN_ATTRS, "thread.name", e->thread->name,
			    strlen(e->thread->name));
}

static void put_args(nt_pb *b, uint32_t field, const nt_reader_event *e)
{
	for (uint32_t i = 0; i < e->arg_count; i++)
		ot_attr_arg(b, field, &e->args[i]);
}

/* The span open on e's thread (past OT_DEPTH_MAX, the deepest one kept), or NULL. */
static ot_span *top(ot_ctx *c, const nt_reader_event *e)
{
	ot_thread *t = thread_of(c, e);
	uint32_t d = t->depth > OT_DEPTH_MAX ? OT_DEPTH_MAX : t->depth;
	return d ? &t->stack[d - 1] : NULL;
}

/* ---- span events, links, zero-length spans ------------------------------------------------ */

/* An instant (or a Trace2 message) as a span event of s. */
static void span_event(ot_span *s, const nt_reader_event *e)
{
	if (s->events >= OT_SPAN_EVENTS_MAX) {
		s->dropped_events++;
		return;
	}
	s->events++;
	nt_pb *b = &s->body;
	size_t at = nt_pb_open(b, OT_SPAN_EVENTS);
	nt_pb_fixed64(b, OT_EV_TIME, (uint64_t)e->wall_ns);
	const char *name = nt_event_display_name(e);
	pf_string(b, OT_EV_NAME, name, strlen(name));
	const char *cat = nt_event_display_category(e);
	if (cat[0])
		ot_attr_str(b, OT_EV_ATTRS, "nanotrace.category", cat, strlen(cat));
	put_args(b, OT_EV_ATTRS, e);
	nt_pb_close(b, at);
}

static void span_link(ot_span *s, const ot_flow *to, const nt_reader_event *e)
{
	if (s->links >= OT_SPAN_LINKS_MAX) {
		s->dropped_links++;
		return;
	}
	s->links++;
	nt_pb *b = &s->body;
	size_t at = nt_pb_open(b, OT_SPAN_LINKS);
	ot_put_id(b, OT_LINK_TRACE_ID, to->trace_hi, to->trace_lo, 16);
	ot_put_id(b, OT_LINK_SPAN_ID, 0, to->span, 8);
	ot_attr_str(b, OT_LINK_ATTRS, "nanotrace.flow", e->name, strlen(e->name));
	ot_attr_int(b, OT_LINK_ATTRS, "nanotrace.flow_id", (int64_t)e->id);
	put_args(b, OT_LINK_ATTRS, e);
	nt_pb_close(b, at);
}

/* An instant, a flow point, a Trace2 message on the span open on its thread (attach). */
static void attach(ot_ctx *c, const nt_reader_event *e);

/* ---- flows ---------------------------------------------------------------------------- */

static void flow_point(ot_ctx *c, const nt_reader_event *e, ot_span *s)
{
	unsigned base = nt_kind_id_base(e->kind);
	uint64_t key = nt_id_key(e);
	ot_flow *f = ot_map_get(&c->flows, key);
	if (base != NT_KIND_FLOW_BEGIN) {
		if (f)
			span_link(s, f, e);
		else
			c->flows_unbegun++;
	}
	if (base == NT_KIND_FLOW_END) {
		free(ot_map_del(&c->flows, key));
		return;
	}
	if (f == NULL) {
		f = malloc(sizeof(*f));
		if (f == NULL || !ot_map_put(&c->flows, key, f)) {
			free(f);
			c->ids_not_kept++;
			return;
		}
	}
	*f = (ot_flow){ s->trace_hi, s->trace_lo, s->id };
}

/* A root span waiting for its first event: a flow step or end with a known earlier point
 * puts it in the flow's trace; anything else leaves it its own. */
static void settle_root(ot_ctx *c, const nt_reader_event *e)
{
	ot_thread *t = thread_of(c, e);
	if (t->depth == 0 || !t->stack[0].pending)
		return;
	ot_span *root = &t->stack[0];
	root->pending = 0;
	unsigned base = nt_kind_id_base(e->kind);
	if (t->depth != 1 || (base != NT_KIND_FLOW_STEP && base != NT_KIND_FLOW_END))
		return;
	const ot_flow *f = ot_map_get(&c->flows, nt_id_key(e));
	if (f)
		root->trace_hi = f->trace_hi, root->trace_lo = f->trace_lo;
}

/* ---- async spans and Trace2 child processes: open spans by key ------------------------ */

static void id_open(ot_ctx *c, const nt_reader_event *e, uint64_t key, const char *name)
{
	ot_span *s = calloc(1, sizeof(*s));
	if (s == NULL || ot_map_get(&c->open_ids, key) || !ot_map_put(&c->open_ids, key, s)) {
		free(s);
		c->ids_not_kept++; /* memory bound, or the same id begun twice */
		return;
	}
	span_start(c, s, e, top(c, e), 2);
	if (name)
		s->name = name;
	s->pending = 0;
	if (s->parent == 0 && e->id_scope == NT_ID_GLOBAL) {
		/* every process's spans of this global id share one trace: of the id alone, so
		 * processes exported apart (shipped live as each ends) agree */
		s->trace_hi = ot_mix(e->id ^ 0x676c6f62616cull);
		s->trace_lo = ot_mix(e->id) | 1;
	}
	if (nt_kind_has_id(e->kind)) {
		const char *scope = e->id_scope == NT_ID_GLOBAL ? "global" : "process";
		ot_attr_int(&s->body, OT_SPAN_ATTRS, "nanotrace.async_id", (int64_t)e->id);
		ot_attr_str(&s->body, OT_SPAN_ATTRS, "nanotrace.async_scope", scope, strlen(scope));
	}
	put_args(&s->body, OT_SPAN_ATTRS, e);
}

static void id_close(ot_ctx *c, const nt_reader_event *e, uint64_t key)
{
	ot_span *s = ot_map_del(&c->open_ids, key);
	if (s == NULL) {
		c->async_unbegun++;
		return;
	}
	put_args(&s->body, OT_SPAN_ATTRS, e);
	ot_span_emit(c, s, e->wall_ns);
	ot_span_free(s);
}

void ot_span_free(ot_span *s)
{
	free(s->body.p);
	free(s->own);
	free(s);
}

static void async_event(ot_ctx *c, const nt_reader_event *e)
{
	uint64_t key = nt_id_key(e);
	switch (nt_kind_id_base(e->kind)) {
	case NT_KIND_ASYNC_BEGIN: id_open(c, e, key, NULL); return;
	case NT_KIND_ASYNC_END: id_close(c, e, key); return;
	case NT_KIND_ASYNC_INSTANT: {
		ot_span *s = ot_map_get(&c->open_ids, key);
		if (s) {
			span_event(s, e);
			return;
		}
		c->async_unbegun++;
		break;
	}
	default: break;
	}
	attach(c, e);
}

/* ---- the thread's stack ----------------------------------------------------------------- */

static void push(ot_ctx *c, const nt_reader_event *e)
{
	ot_thread *t = thread_of(c, e);
	if (t->depth >= OT_DEPTH_MAX) {
		t->depth++;
		c->too_deep++;
		return;
	}
	if (!nt_grow(&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack))) {
		c->oom = 1;
		return;
	}
	ot_span *s = &t->stack[t->depth];
	span_start(c, s, e, t->depth ? &t->stack[t->depth - 1] : NULL, 0);
	t->depth++;
	if (nt_kind_is_t2(e->kind)) /* trace2receiver's span types */
		ot_attr_str(&s->body, OT_SPAN_ATTRS, "trace2.span.type",
			    e->kind == NT_KIND_T2_FIRST + NT_T2E_START ? "process" : "region",
			    e->kind == NT_KIND_T2_FIRST + NT_T2E_START ? 7 : 6);
	put_args(&s->body, OT_SPAN_ATTRS, e);
}

/* Ends t's innermost open span at e (its arguments added; unended: marked so, at e's time),
 * or counts an End with none. */
static ot_span *pop_of(ot_ctx *c, ot_thread *t, const nt_reader_event *e, int unended)
{
	if (t->depth == 0) {
		c->unmatched_ends++;
		return NULL;
	}
	if (t->depth-- > OT_DEPTH_MAX)
		return NULL;
	ot_span *s = &t->stack[t->depth];
	if (unended)
		ot_attr_bool(&s->body, OT_SPAN_ATTRS, "nanotrace.unended", 1);
	else
		put_args(&s->body, OT_SPAN_ATTRS, e);
	ot_span_emit(c, s, e->wall_ns);
	return s;
}

static ot_span *pop(ot_ctx *c, const nt_reader_event *e, int unended)
{
	return pop_of(c, thread_of(c, e), e, unended);
}

static void complete(ot_ctx *c, const nt_reader_event *e)
{
	ot_span s = { 0 };
	span_start(c, &s, e, top(c, e), 0);
	s.pending = 0;
	put_args(&s.body, OT_SPAN_ATTRS, e);
	uint64_t d = e->duration_ns > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : e->duration_ns;
	ot_span_emit(c, &s, (int64_t)((uint64_t)e->wall_ns + d));
	free(s.body.p);
}

/* ---- counters ------------------------------------------------------------------------- */

static void counter(ot_ctx *c, const nt_reader_event *e)
{
	ot_scope *sc = ot_scope_of(c, res_of(c, e->thread), nt_event_display_category(e));
	if (sc == NULL)
		return;
	nt_pb *b = &sc->metrics;
	size_t before = b->len;
	const char *name = nt_event_display_name(e);
	for (uint32_t i = 0; i < e->arg_count; i++) {
		const nt_reader_arg *a = &e->args[i];
		int dbl = a->type == NT_ARG_DOUBLE;
		if (!dbl && a->type != NT_ARG_INT32 && a->type != NT_ARG_INT64 &&
		    a->type != NT_ARG_UINT32 && a->type != NT_ARG_UINT64) {
			c->counter_args_not_numeric++;
			continue;
		}
		size_t m = nt_pb_open(b, OT_SM_METRICS);
		size_t ln = strlen(name), la = strlen(a->name);
		char *full = malloc(ln + la + 2);
		if (full == NULL) {
			c->oom = 1;
			return;
		}
		memcpy(full, name, ln);
		full[ln] = '.';
		memcpy(full + ln + 1, a->name, la + 1);
		pf_string(b, OT_METRIC_NAME, full, ln + la + 1);
		free(full);
		size_t g = nt_pb_open(b, OT_METRIC_GAUGE);
		size_t dp = nt_pb_open(b, OT_GAUGE_POINTS);
		nt_pb_fixed64(b, OT_NP_TIME, (uint64_t)e->wall_ns);
		uint64_t bits = a->value.u64;
		if (dbl)
			memcpy(&bits, &a->value.f64, 8);
		nt_pb_fixed64(b, dbl ? OT_NP_DOUBLE : OT_NP_INT, bits);
		ot_attr_int(b, OT_NP_ATTRS, "thread.id", e->thread->tid);
		nt_pb_close(b, dp);
		nt_pb_close(b, g);
		nt_pb_close(b, m);
	}
	if (b->oom)
		c->oom = 1;
	c->batch_metrics += b->len - before;
	ot_batch_maybe_flush(c);
}

/* ---- Trace2 --------------------------------------------------------------------------- */

static int t2_int(const nt_reader_event *e, const char *key, int64_t *v)
{
	for (uint32_t i = 0; i < e->arg_count; i++)
		if ((e->args[i].type == NT_ARG_INT32 || e->args[i].type == NT_ARG_INT64) &&
		    strcmp(e->args[i].name, key) == 0) {
			*v = e->args[i].value.i64;
			return 1;
		}
	return 0;
}

static const nt_reader_arg *t2_arg(const nt_reader_event *e, const char *key)
{
	for (uint32_t i = 0; i < e->arg_count; i++)
		if (strcmp(e->args[i].name, key) == 0)
			return &e->args[i];
	return NULL;
}

static uint64_t child_key(const nt_reader_event *e, int64_t id)
{
	return ot_mix(((uint64_t)e->thread->index << 32 | (uint32_t)id) ^ 0x6368696c64ull) | 1;
}

/* start .. atexit: the process span, a root the process's other threads' roots go under;
 * its messages (cmd_name, def_param, ...) are its span events, as trace2receiver keeps them on
 * a git process's span. */
static void t2_process(ot_ctx *c, const nt_reader_event *e, unsigned t2)
{
	ot_thread *t = thread_of(c, e);
	ot_proc *p = e->thread->process < c->nprocs ? &c->procs[e->thread->process] : NULL;
	if (t2 == NT_T2E_START) {
		push(c, e);
		ot_span *s = t->depth <= OT_DEPTH_MAX ? top(c, e) : NULL; /* none when too deep */
		if (s) {
			s->t2_process = 1;
			s->name = "process";
			s->pending = 0;
			if (p)
				*p = (ot_proc){ s->trace_hi, s->trace_lo, s->id, 1 };
		}
		return;
	}
	uint32_t at = t->depth > OT_DEPTH_MAX ? OT_DEPTH_MAX : t->depth;
	while (at > 0 && !t->stack[at - 1].t2_process)
		at--;
	if (at == 0) { /* no process span open: a message like any other */
		attach(c, e);
		return;
	}
	while (t->depth > at) /* what atexit leaves open ends with the process */
		pop(c, e, 1);
	pop(c, e, 0);
	if (p)
		p->open = 0;
}

/* data and data_json: a span event, and "<category>.<key>" = value an attribute of the
 * enclosing span, as trace2receiver makes a region's data its span's attributes. */
static void t2_data(ot_ctx *c, const nt_reader_event *e, ot_span *s)
{
	const nt_reader_arg *v = t2_arg(e, "value");
	span_event(s, e);
	if (v == NULL)
		return;
	const char *cat = nt_event_display_category(e), *key = nt_event_display_name(e);
	size_t lc = strlen(cat), lk = strlen(key);
	char *name = malloc(lc + lk + 2);
	if (name == NULL) {
		c->oom = 1;
		return;
	}
	memcpy(name, cat, lc);
	name[lc] = '.';
	memcpy(name + lc + 1, key, lk + 1);
	nt_reader_arg named = *v;
	named.name = name;
	ot_attr_arg(&s->body, OT_SPAN_ATTRS, &named);
	free(name);
}

static void t2_message(ot_ctx *c, const nt_reader_event *e)
{
	unsigned t2 = e->kind - NT_KIND_T2_FIRST;
	int64_t id;
	switch (t2) {
	case NT_T2E_START:
	case NT_T2E_ATEXIT: t2_process(c, e, t2); return;
	case NT_T2E_CHILD_START:
		if (t2_int(e, "child_id", &id)) {
			id_open(c, e, child_key(e, id), "child");
			ot_span *s = ot_map_get(&c->open_ids, child_key(e, id));
			if (s)
				ot_attr_str(&s->body, OT_SPAN_ATTRS, "trace2.span.type", "child", 5);
			return;
		}
		break;
	case NT_T2E_CHILD_EXIT:
		if (t2_int(e, "child_id", &id) && ot_map_get(&c->open_ids, child_key(e, id))) {
			id_close(c, e, child_key(e, id));
			return;
		}
		break;
	default: break;
	}
	attach(c, e);
}

/* e on the span open on its thread, or on a zero-length span of its own (nanotrace.instant)
 * when none is: a flow point's link, Trace2 data's attribute, else a span event. */
static void attach(ot_ctx *c, const nt_reader_event *e)
{
	ot_span scratch = { 0 }, *s = top(c, e);
	if (s == NULL) {
		span_start(c, &scratch, e, NULL, 1);
		ot_attr_bool(&scratch.body, OT_SPAN_ATTRS, "nanotrace.instant", 1);
		s = &scratch;
	}
	unsigned t2 = nt_kind_is_t2(e->kind) ? e->kind - NT_KIND_T2_FIRST : NT_T2_EVENT_COUNT;
	if (nt_kind_has_id(e->kind) && nt_kind_id_base(e->kind) >= NT_KIND_FLOW_BEGIN)
		flow_point(c, e, s);
	else if (t2 == NT_T2E_DATA || t2 == NT_T2E_DATA_JSON)
		t2_data(c, e, s);
	else
		span_event(s, e);
	if (s == &scratch)
		ot_span_emit(c, s, e->wall_ns);
	free(scratch.body.p);
}

/* ---- the visit ------------------------------------------------------------------------ */

static int on_event(void *ctx, const nt_reader_event *e)
{
	ot_ctx *c = ctx;
	uint32_t sec = e->thread->section < c->nsections ? e->thread->section : c->nsections;
	c->salt = c->sec_salt[sec];
	c->ordinal = ++c->sec_ordinal[sec];
	if (e->thread->section < c->nsections && e->wall_ns > c->last_wall[e->thread->section])
		c->last_wall[e->thread->section] = e->wall_ns;
	ot_thread *t = thread_of(c, e);
	t->ordinal++;
	t->part = c->part;
	settle_root(c, e);
	if (nt_event_opens(e))
		push(c, e);
	else if (nt_event_closes(e))
		pop(c, e, 0);
	else if (nt_kind_has_id(e->kind))
		async_event(c, e);
	else if (nt_kind_is_t2(e->kind))
		t2_message(c, e);
	else if (e->kind == NT_KIND_COMPLETE)
		complete(c, e);
	else if (e->kind == NT_KIND_COUNTER)
		counter(c, e);
	else
		attach(c, e);
	return c->oom || c->stopped;
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	ot_ctx *c = ctx;
	if (c->damaged < sizeof(c->damage) / sizeof(c->damage[0]) &&
	    asprintf(&c->damage[c->damaged], "offset %llu: %s", (unsigned long long)off, msg) < 0)
		c->damage[c->damaged] = NULL;
	c->damaged++;
	nt_render_forward_error(c->opt, off, msg);
}

/* A gap before a thread's first chunk of a later part counts from the events the earlier
 * parts had of it. */
static void on_gap(void *ctx, const nt_reader_gap *g)
{
	ot_ctx *c = ctx;
	ot_thread *t = ot_thread_at(c, place_of(c, g->thread));
	uint64_t lost = g->events;
	if (t->part != c->part)
		lost = lost > t->ordinal ? lost - t->ordinal : 0;
	t->part = c->part;
	t->ordinal += lost;
	if (g->thread->section < c->nsections)
		c->gap_events[g->thread->section] += lost;
}

/* ---- the end: what stayed open, the losses ------------------------------------------------ */

/* Each defined thread's open spans end at its section's last event; no reader is needed
 * (the parts may be gone): a thread's state knows its section. */
static void end_open(ot_ctx *c)
{
	for (uint32_t i = 0; i < c->nthreads; i++) {
		ot_thread *t = ot_thread_at(c, i);
		nt_reader_event e = { .kind = NT_KIND_END };
		e.wall_ns = t->section < c->nsections ? c->last_wall[t->section] : 0;
		while (t->depth)
			pop_of(c, t, &e, 1);
	}
	for (size_t i = 0; i < c->open_ids.cap; i++) {
		ot_span *s = c->open_ids.vals[i];
		if (s == NULL)
			continue;
		ot_attr_bool(&s->body, OT_SPAN_ATTRS, "nanotrace.unended", 1);
		uint32_t sec = c->res[s->res].section;
		ot_span_emit(c, s, sec < c->nsections ? c->last_wall[sec] : s->start);
		ot_span_free(s);
	}
	ot_map_free(&c->open_ids);
	for (size_t i = 0; i < c->flows.cap; i++)
		free(c->flows.vals[i]);
	ot_map_free(&c->flows);
}

static void count(ot_span *s, const char *key, uint64_t n)
{
	if (n)
		ot_attr_int(&s->body, OT_SPAN_ATTRS, key, (int64_t)n);
}

/* A span "nanotrace losses" per section that lost something in the rendering (the first
 * section also carries the counts of the whole rendering). */
static void losses(ot_ctx *c)
{
	for (uint32_t i = 0; i < c->nsections; i++) {
		ot_span s = { .cat = "nanotrace", .name = "nanotrace losses" };
		s.res = ot_res_find(c, i, c->sec_pid[i], NULL);
		s.id = ot_mix(c->sec_salt[i] ^ ot_mix((c->sec_ordinal[i] + 1) << 2 | 3)) | 1;
		s.start = c->last_wall[i];
		trace_of_root(c, &s);
		count(&s, "nanotrace.events_lost_in_gaps", c->gap_events[i]);
		if (i == 0) {
			count(&s, "nanotrace.unmatched_ends", c->unmatched_ends);
			count(&s, "nanotrace.spans_too_deep", c->too_deep);
			count(&s, "nanotrace.ids_not_kept", c->ids_not_kept);
			count(&s, "nanotrace.async_unbegun", c->async_unbegun);
			count(&s, "nanotrace.flows_unbegun", c->flows_unbegun);
			count(&s, "nanotrace.counter_args_not_numeric", c->counter_args_not_numeric);
			count(&s, "nanotrace.damaged_places", c->damaged);
			for (size_t k = 0; k < c->damaged && k < 16; k++)
				if (c->damage[k])
					ot_attr_str(&s.body, OT_SPAN_ATTRS, "nanotrace.damage",
						    c->damage[k], strlen(c->damage[k]));
		}
		if (s.body.len)
			ot_span_emit(c, &s, s.start);
		free(s.body.p);
	}
}

int ot_visit(ot_ctx *c)
{
	nt_reader_callbacks cb = { on_event, on_error, on_gap };
	return nt_reader_visit(c->r, &cb, c, c->opt->order, c->opt->policy);
}

void ot_end(ot_ctx *c)
{
	end_open(c);
	losses(c);
	ot_flush(c);
}
