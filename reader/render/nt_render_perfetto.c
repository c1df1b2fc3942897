/*
 * nt_render_perfetto.c - Perfetto's native trace format: a protobuf `Trace` of TracePackets
 * (third_party/perfetto/perfetto_trace.proto), which Perfetto UI and trace_processor load
 * fastest. What each event becomes:
 * - Begin / End, Trace2 region_enter / region_leave: TYPE_SLICE_BEGIN / _END on the
 *   thread's track; an End with no open Begin on its thread is left out and counted, as
 *   the Chrome JSON rendering does (nt_balance);
 * - Complete: a SLICE_BEGIN at its start and a SLICE_END at its end;
 * - Instant and the other Trace2 messages: TYPE_INSTANT on the thread's track;
 * - async spans (issue 26): each span (category, name, id, scope) its own track, under its
 *   process's track or global for a global id, with SLICE_BEGIN / INSTANT / SLICE_END on
 *   it; flows: an INSTANT inside the slice they bind, carrying the flow's id in flow_ids or
 *   terminating_flow_ids (id_event says why); a process-scoped id is made one for the
 *   trace as Chrome JSON makes it (nt_id_trace_wide), so two processes' ids stay apart;
 * - Counter: TYPE_COUNTER on a counter track per thread, counter name and argument
 *   ("<name> <argument>", the categories on its CounterDescriptor), a child of the thread's
 *   track; an argument with no number (a string) is not plotted and is counted;
 * - Trace2 processes as slices: "start" to "atexit" is a slice "process", and each child
 *   process (child_start to child_exit, by child_id) a slice "child" on a track of its own
 *   under the thread (children of one thread may overlap); the messages' keys are the
 *   slices' annotations; a message without its partner stays an instant;
 * - arguments: DebugAnnotations with their types (int, uint, double, bool, pointer, string,
 *   a string list as array_values), names interned; categories and names interned; short
 *   string values interned too, up to a bound per sequence (nt_render_perfetto.h);
 * - a gap: an instant "events lost" (category "nanotrace", annotation "lost") on the thread
 *   where its events were lost, as in the Chrome JSON rendering;
 * - what each process's writer lost (drops by reason, overwrites, wraps, saving stopped) and
 *   what the rendering found (events lost in gaps, damage with its first 100 places, Ends
 *   left out, Begins never ended, async spans and flows that cannot be paired, by the names
 *   of Chrome JSON's otherData): an instant "nanotrace losses" on the process's track at
 *   the end of the trace, each count an annotation, only when one is not zero. It shows on
 *   the timeline and in trace_processor's `slice` and `args` tables; TraceStats is not
 *   used, since its counters describe a tracing service's buffers (chunks, bytes), not
 *   events.
 * Order: trace_processor sorts packets by time, equal times by arrival. A Complete is
 * recorded when it ends, after the events inside it, so its SLICE_BEGIN arrives after
 * theirs: one that starts at the very nanosecond an event inside it starts would nest
 * the other way round (one clock read per event makes that a tie of two reads).
 * Timestamps: a ClockSnapshot first relates CLOCK_MONOTONIC (the events' clock) to
 * CLOCK_REALTIME at the archive's start and makes MONOTONIC the trace's clock, so times
 * equal trace-dump's and line up with other Perfetto data of the machine, whose snapshots
 * relate MONOTONIC to BOOTTIME. Packets stream in the visit's time order: memory is the
 * sequences' tables (nt_render_perfetto_seq.c), the open async spans' tracks (bounded), and
 * an entry per async span or flow for the losses' counts (nt_id_tally, as --stats and
 * Chrome JSON keep), never the events.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nt_render_perfetto.h"
#include "reader/common/nt_grow.h"

static void put_value(pf_ctx *c, pf_seq *s, nt_pb *b, const nt_reader_arg *a)
{
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: nt_pb_varint(b, PF_DA_INT, (uint64_t)a->value.i64); break;
	case NT_ARG_UINT32:
	case NT_ARG_UINT64: nt_pb_varint(b, PF_DA_UINT, a->value.u64); break;
	case NT_ARG_BOOL: nt_pb_varint(b, PF_DA_BOOL, a->value.u64 != 0); break;
	case NT_ARG_POINTER: nt_pb_varint(b, PF_DA_POINTER, a->value.u64); break;
	case NT_ARG_DOUBLE: {
		uint64_t bits;
		memcpy(&bits, &a->value.f64, 8);
		nt_pb_fixed64(b, PF_DA_DOUBLE, bits);
		break;
	}
	case NT_ARG_STRING_LIST: {
		uint32_t pos = 0, len;
		const char *s;
		while (nt_reader_list_next(a, &pos, &s, &len)) {
			size_t at = nt_pb_open(b, PF_DA_ARRAY);
			pf_string(b, PF_DA_STRING, s, len);
			nt_pb_close(b, at);
		}
		break;
	}
	default: {
		uint64_t iid = pf_intern_value(c, s, a->value.str.ptr, a->value.str.len);
		if (iid)
			nt_pb_varint(b, PF_DA_STRING_IID, iid);
		else
			pf_string(b, PF_DA_STRING, a->value.str.ptr, a->value.str.len);
		break;
	}
	}
}

/* An argument of a fixed-size type in one step: its annotation is under 128 bytes, so its
 * length is one byte, written once its content is. 0 for other types. */
static int put_scalar_arg(pf_ctx *c, pf_seq *s, const nt_reader_arg *a)
{
	uint32_t field;
	uint64_t v = a->value.u64;
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: field = PF_DA_INT; break;
	case NT_ARG_UINT32:
	case NT_ARG_UINT64: field = PF_DA_UINT; break;
	case NT_ARG_BOOL: field = PF_DA_BOOL, v = v != 0; break;
	case NT_ARG_POINTER: field = PF_DA_POINTER; break;
	default: return 0;
	}
	uint64_t name = pf_intern(c, s, PF_ANNOTATION, a->name);
	nt_pb *b = &c->pkt;
	uint8_t *p = nt_pb_room(b, 40);
	if (p == NULL)
		return 1;
	p[0] = (PF_TE_DEBUG_ANNOTATIONS << 3) | NT_PF_WIRE_L;
	uint8_t *q = nt_pb_raw_varint(p + 2, PF_DA_NAME_IID, name);
	q = nt_pb_raw_varint(q, field, v);
	p[1] = (uint8_t)(q - p - 2);
	nt_pb_raw_end(b, q);
	return 1;
}

static void put_args(pf_ctx *c, pf_seq *s, const nt_reader_event *e)
{
	nt_pb *b = &c->pkt;
	for (uint32_t i = 0; i < e->arg_count; i++) {
		const nt_reader_arg *a = &e->args[i];
		if (put_scalar_arg(c, s, a))
			continue;
		size_t at = nt_pb_open(b, PF_TE_DEBUG_ANNOTATIONS);
		nt_pb_varint(b, PF_DA_NAME_IID, pf_intern(c, s, PF_ANNOTATION, a->name));
		put_value(c, s, b, a);
		nt_pb_close(b, at);
	}
}

/* One TrackEvent of e's thread at ts: `track` 0 is the thread's own (the sequence's
 * default); name and category NULL when the event needs none (an end); args or not; a flow
 * id in field `flow` (PF_TE_FLOW_IDS or PF_TE_TERMINATING_FLOW_IDS; 0: none). */
static void track_event_flow(pf_ctx *c, const nt_reader_event *e, uint64_t ts, uint32_t type,
			     uint64_t track, const char *name, const char *cat, int args,
			     uint32_t flow, uint64_t flow_id)
{
	pf_seq *s;
	size_t te = pf_packet_begin(c, e->thread, ts, &s);
	nt_pb *b = &c->pkt;
	uint64_t cat_iid = cat ? pf_intern(c, s, PF_CATEGORY, cat) : 0;
	uint64_t name_iid = name ? pf_intern(c, s, PF_NAME, name) : 0;
	uint8_t *p = nt_pb_room(b, 64);
	if (p == NULL)
		return;
	if (cat)
		p = nt_pb_raw_varint(p, PF_TE_CATEGORY_IIDS, cat_iid);
	if (name)
		p = nt_pb_raw_varint(p, PF_TE_NAME_IID, name_iid);
	p = nt_pb_raw_varint(p, PF_TE_TYPE, type);
	if (track)
		p = nt_pb_raw_varint(p, PF_TE_TRACK_UUID, track);
	nt_pb_raw_end(b, p);
	if (args)
		put_args(c, s, e);
	if (flow)
		nt_pb_fixed64(b, flow, flow_id);
	pf_packet_end(c, te);
}

static void track_event(pf_ctx *c, const nt_reader_event *e, uint64_t ts, uint32_t type,
			uint64_t track, const char *name, const char *cat, int args)
{
	track_event_flow(c, e, ts, type, track, name, cat, args, 0, 0);
}

/* The counter track of (category, name, argument) on e's thread, described on first use. */
static uint64_t counter_track(pf_ctx *c, const nt_reader_event *e, pf_seq *s,
			      const nt_reader_arg *a)
{
	const char *cat = nt_event_display_category(e), *name = nt_event_display_name(e);
	size_t lc = strlen(cat), ln = strlen(name), la = strlen(a->name);
	char *key = malloc(lc + ln + la + 3);
	if (key == NULL) {
		c->oom = 1;
		return 0;
	}
	memcpy(key, cat, lc + 1);
	memcpy(key + lc + 1, name, ln);
	key[lc + 1 + ln] = ' '; /* the track's name: "<name> <argument>" */
	memcpy(key + lc + 2 + ln, a->name, la + 1);
	uint64_t uuid = 0;
	pf_entry *slot;
	int found = pf_table_find(&s->tab, PF_COUNTER_TRACK, key, lc + ln + la + 2, &slot);
	if (found == 1) {
		uuid = slot->val;
	} else if (found == 0) {
		slot->val = uuid = PF_UUID(PF_UUID_COUNTER, ++c->counters);
		size_t td = pf_track_begin(c, PF_SEQ_THREAD_BASE + e->thread->index, uuid,
					   pf_thread_uuid(e->thread), key + lc + 1, ln + la + 1);
		size_t cd = nt_pb_open(&c->aux, PF_TD_COUNTER);
		pf_string(&c->aux, PF_CD_CATEGORIES, cat, lc);
		nt_pb_close(&c->aux, cd);
		pf_track_end(c, td);
	} else if (found < 0) {
		c->oom = 1;
	}
	free(key);
	return uuid;
}

/* Each numeric argument a value on its counter track. */
static void counter_event(pf_ctx *c, const nt_reader_event *e, uint64_t ts)
{
	pf_seq *s = pf_seq_of(c, e->thread, ts);
	for (uint32_t i = 0; i < e->arg_count; i++) {
		const nt_reader_arg *a = &e->args[i];
		int is_double = a->type == NT_ARG_DOUBLE ||
				((a->type == NT_ARG_UINT64 || a->type == NT_ARG_POINTER) &&
				 a->value.u64 > (uint64_t)INT64_MAX);
		int numeric = is_double || a->type == NT_ARG_INT32 || a->type == NT_ARG_INT64 ||
			      a->type == NT_ARG_UINT32 || a->type == NT_ARG_UINT64 ||
			      a->type == NT_ARG_BOOL || a->type == NT_ARG_POINTER;
		if (!numeric) {
			c->non_numeric++;
			continue;
		}
		uint64_t track = counter_track(c, e, s, a);
		size_t te = pf_packet_begin(c, e->thread, ts, &s);
		nt_pb *b = &c->pkt;
		nt_pb_varint(b, PF_TE_TYPE, PF_TYPE_COUNTER);
		nt_pb_varint(b, PF_TE_TRACK_UUID, track);
		if (is_double) {
			double v = a->type == NT_ARG_DOUBLE ? a->value.f64 : (double)a->value.u64;
			uint64_t bits;
			memcpy(&bits, &v, 8);
			nt_pb_fixed64(b, PF_TE_DOUBLE_COUNTER_VALUE, bits);
		} else {
			int64_t v = a->type == NT_ARG_INT32 || a->type == NT_ARG_INT64
					    ? a->value.i64 : (int64_t)a->value.u64;
			nt_pb_varint(b, PF_TE_COUNTER_VALUE, (uint64_t)v);
		}
		pf_packet_end(c, te);
	}
}

/* A Trace2 message's integer key ("child_id"); 0 when it has none. */
static int t2_int_arg(const nt_reader_event *e, const char *key, int64_t *v)
{
	for (uint32_t i = 0; i < e->arg_count; i++)
		if ((e->args[i].type == NT_ARG_INT32 || e->args[i].type == NT_ARG_INT64) &&
		    strcmp(e->args[i].name, key) == 0) {
			*v = e->args[i].value.i64;
			return 1;
		}
	return 0;
}

/* The track of a Trace2 child process: its thread's, by child_id. */
static uint64_t child_uuid(const nt_reader_event *e, int64_t id)
{
	return PF_UUID(PF_UUID_CHILD, (uint64_t)e->thread->index << 32 | (uint32_t)id);
}

/* child_start opens a slice on the child's own track (its descriptor first). */
static int t2_child_start(pf_ctx *c, const nt_reader_event *e, pf_seq *s, uint64_t ts)
{
	int64_t id;
	if (!t2_int_arg(e, "child_id", &id) ||
	    !nt_grow(&s->children, &s->children_cap, s->nchildren + 1, sizeof(*s->children)))
		return 0;
	s->children[s->nchildren++] = (uint64_t)id;
	uint64_t uuid = child_uuid(e, id);
	char name[40];
	int n = snprintf(name, sizeof(name), "child %" PRId64, id);
	pf_track_end(c, pf_track_begin(c, PF_SEQ_THREAD_BASE + e->thread->index, uuid,
				       pf_thread_uuid(e->thread), name, (size_t)n));
	track_event(c, e, ts, PF_TYPE_SLICE_BEGIN, uuid, "child", "trace2", 1);
	return 1;
}

/* child_exit closes its child's slice, when child_start opened one. */
static int t2_child_exit(pf_ctx *c, const nt_reader_event *e, pf_seq *s, uint64_t ts)
{
	int64_t id;
	if (!t2_int_arg(e, "child_id", &id))
		return 0;
	for (size_t i = s->nchildren; i-- > 0;) {
		if (s->children[i] != (uint64_t)id)
			continue;
		s->children[i] = s->children[--s->nchildren];
		track_event(c, e, ts, PF_TYPE_SLICE_END, child_uuid(e, id), "child", "trace2", 1);
		return 1;
	}
	return 0;
}

/* Trace2 processes and children as slices; 0: the message is an instant. */
static int t2_slice(pf_ctx *c, const nt_reader_event *e, uint64_t ts)
{
	pf_seq *s = pf_seq_of(c, e->thread, ts);
	switch (e->kind - NT_KIND_T2_FIRST) {
	case NT_T2E_START:
		track_event(c, e, ts, PF_TYPE_SLICE_BEGIN, 0, "process", "trace2", 1);
		s->t2_processes++;
		return 1;
	case NT_T2E_ATEXIT:
		if (s->t2_processes == 0)
			return 0;
		s->t2_processes--; /* named: it ends the process's slice, whatever is open */
		track_event(c, e, ts, PF_TYPE_SLICE_END, 0, "process", "trace2", 1);
		return 1;
	case NT_T2E_CHILD_START: return t2_child_start(c, e, s, ts);
	case NT_T2E_CHILD_EXIT: return t2_child_exit(c, e, s, ts);
	default: return 0;
	}
}

/* ---- async spans and flows (issue 26) ---------------------------------------------------- */

static size_t uuid_home(const pf_uuid_set *u, uint64_t v)
{
	return (size_t)((v * 0x9E3779B97F4A7C15ull) >> 20) & (u->cap - 1);
}

/* Where v is, or the free slot where it would go (the set has room: load under 1/2). */
static size_t uuid_find(const pf_uuid_set *u, uint64_t v)
{
	size_t i = uuid_home(u, v);
	while (u->slot[i] != 0 && u->slot[i] != v)
		i = (i + 1) & (u->cap - 1);
	return i;
}

static int uuid_has(const pf_uuid_set *u, uint64_t v)
{
	return u->cap != 0 && u->slot[uuid_find(u, v)] == v;
}

/* Remembers v; when the set is full or memory runs out it does not (v's span then gets its
 * descriptor again at its next event). */
static void uuid_add(pf_uuid_set *u, uint64_t v)
{
	if ((u->n + 1) * 2 > u->cap) {
		if (u->cap >= 2 * PF_ASYNC_OPEN_MAX)
			return;
		pf_uuid_set g = { calloc(u->cap ? u->cap * 2 : 256, sizeof(uint64_t)), 0, 0 };
		if (g.slot == NULL)
			return;
		g.cap = u->cap ? u->cap * 2 : 256;
		for (size_t i = 0; i < u->cap; i++)
			if (u->slot[i] != 0)
				g.slot[uuid_find(&g, u->slot[i])] = u->slot[i], g.n++;
		free(u->slot);
		*u = g;
	}
	size_t i = uuid_find(u, v);
	if (u->slot[i] == 0)
		u->slot[i] = v, u->n++;
}

/* Forgets v: linear probing's deletion, each later entry of the run moved back into the hole
 * when its home is not between the hole and it. */
static void uuid_del(pf_uuid_set *u, uint64_t v)
{
	size_t m = u->cap - 1, i = uuid_find(u, v);
	if (u->slot[i] != v)
		return;
	u->slot[i] = 0;
	u->n--;
	for (size_t j = (i + 1) & m; u->slot[j] != 0; j = (j + 1) & m) {
		size_t h = uuid_home(u, u->slot[j]);
		if (((j - h) & m) >= ((j - i) & m)) {
			u->slot[i] = u->slot[j];
			u->slot[j] = 0;
			i = j;
		}
	}
}

/* An async span's own track, "<name> 0x<id>": a child of its process's track for a
 * process-scoped id, a global track (no parent) for a global one, whichever process's
 * event describes it (every one describes it alike). */
static void async_track(pf_ctx *c, const nt_reader_event *e, uint64_t uuid)
{
	char name[300];
	int n = snprintf(name, sizeof(name), "%s 0x%" PRIx64, nt_event_display_name(e), e->id);
	if (n < 0)
		n = 0;
	else if ((size_t)n >= sizeof(name))
		n = sizeof(name) - 1;
	uint64_t parent = e->id_scope == NT_ID_GLOBAL ? 0
			  : PF_UUID(PF_UUID_PROCESS, e->thread->section);
	pf_track_end(c, pf_track_begin(c, PF_SEQ_THREAD_BASE + e->thread->index, uuid, parent,
				       name, (size_t)n));
}

/* An async event: SLICE_BEGIN, INSTANT or SLICE_END on its span's track, so spans of one
 * name with different ids overlap freely and an end never closes another span's slice (an
 * end with no begin in the trace ends nothing: trace_processor drops it, the losses count
 * it). A flow event: an INSTANT on its thread's track, which trace_processor nests under the
 * slice open there (slice.parent_id): the slice the flow binds, as Chrome binds "s", "t" and
 * "f" with "bp":"e". It carries the flow's nt_id_key in flow_ids (begin, step) or
 * terminating_flow_ids (end); trace_processor joins a flow's points in time order, only
 * points of one key (a step whose begin was lost starts the flow there, where Chrome's
 * viewers draw no arrow; an end of no open flow joins nothing). The
 * bound slice's own packets cannot carry it: its begin is written before the flow is seen,
 * and its end would order the arrows by the slices' ends. */
static void id_event(pf_ctx *c, const nt_reader_event *e, uint64_t ts)
{
	unsigned base = nt_kind_id_base(e->kind);
	uint64_t key = nt_id_key(e);
	const char *name = nt_event_display_name(e), *cat = nt_event_display_category(e);
	nt_id_tally_admit(&c->ids, e);
	if (base >= NT_KIND_FLOW_BEGIN) {
		track_event_flow(c, e, ts, PF_TYPE_INSTANT, 0, name, cat, 1,
				 base == NT_KIND_FLOW_END ? PF_TE_TERMINATING_FLOW_IDS
				 : PF_TE_FLOW_IDS, key);
		return;
	}
	uint64_t uuid = PF_UUID(PF_UUID_ASYNC, key >> 3);
	int described = uuid_has(&c->async_open, uuid);
	if (!described)
		async_track(c, e, uuid);
	if (base == NT_KIND_ASYNC_BEGIN)
		uuid_add(&c->async_open, uuid);
	else if (base == NT_KIND_ASYNC_END && described)
		uuid_del(&c->async_open, uuid);
	track_event(c, e, ts, base == NT_KIND_ASYNC_BEGIN ? PF_TYPE_SLICE_BEGIN
			      : base == NT_KIND_ASYNC_END ? PF_TYPE_SLICE_END : PF_TYPE_INSTANT,
		    uuid, name, cat, 1);
}

static int on_event(void *ctx, const nt_reader_event *e)
{
	pf_ctx *c = ctx;
	if (!nt_balance_admit(&c->balance, e))
		return 0;
	uint64_t ts = pf_ts(c, e->time_ns);
	switch (e->kind) { /* the common kinds first, without the Trace2 lookups */
	case NT_KIND_BEGIN:
		track_event(c, e, ts, PF_TYPE_SLICE_BEGIN, 0, e->name, e->category, 1);
		break;
	case NT_KIND_END: track_event(c, e, ts, PF_TYPE_SLICE_END, 0, NULL, NULL, 1); break;
	case NT_KIND_INSTANT:
		track_event(c, e, ts, PF_TYPE_INSTANT, 0, e->name, e->category, 1);
		break;
	case NT_KIND_COUNTER: counter_event(c, e, ts); break;
	case NT_KIND_COMPLETE: {
		track_event(c, e, ts, PF_TYPE_SLICE_BEGIN, 0, e->name, e->category, 1);
		int64_t end;
		if (__builtin_add_overflow(e->time_ns, (int64_t)(e->duration_ns & INT64_MAX), &end))
			end = INT64_MAX;
		track_event(c, e, pf_ts(c, end), PF_TYPE_SLICE_END, 0, NULL, NULL, 0);
		break;
	}
	default: /* async and flow events; Trace2 messages, and kinds a later format adds */
		if (nt_kind_has_id(e->kind)) {
			id_event(c, e, ts);
			break;
		}
		if (nt_kind_is_t2(e->kind) && t2_slice(c, e, ts))
			break;
		track_event(c, e, ts, nt_event_opens(e) ? PF_TYPE_SLICE_BEGIN
				      : nt_event_closes(e) ? PF_TYPE_SLICE_END : PF_TYPE_INSTANT, 0,
			    nt_event_closes(e) ? NULL : nt_event_display_name(e),
			    nt_event_closes(e) ? NULL : nt_event_display_category(e), 1);
		break;
	}
	return c->out.failed || c->oom;
}

/* A gap: an instant "events lost" on the thread, annotation "lost". */
static void on_gap(void *ctx, const nt_reader_gap *g)
{
	pf_ctx *c = ctx;
	pf_seq *s;
	size_t te = pf_packet_begin(c, g->thread, pf_ts(c, g->time_ns), &s);
	nt_pb *b = &c->pkt;
	nt_pb_varint(b, PF_TE_CATEGORY_IIDS, pf_intern(c, s, PF_CATEGORY, "nanotrace"));
	nt_pb_varint(b, PF_TE_NAME_IID, pf_intern(c, s, PF_NAME, "events lost"));
	nt_pb_varint(b, PF_TE_TYPE, PF_TYPE_INSTANT);
	size_t at = nt_pb_open(b, PF_TE_DEBUG_ANNOTATIONS);
	nt_pb_varint(b, PF_DA_NAME_IID, pf_intern(c, s, PF_ANNOTATION, "lost"));
	nt_pb_varint(b, PF_DA_UINT, g->events);
	nt_pb_close(b, at);
	pf_packet_end(c, te);
	c->gap_events += g->events;
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	pf_ctx *c = ctx;
	nt_render_forward_error(c->opt, off, msg);
	if (c->damaged < sizeof(c->damage) / sizeof(c->damage[0])) {
		char *item = NULL;
		if (asprintf(&item, "offset %" PRIu64 ": %s", off, msg) < 0)
			c->oom = 1;
		else
			c->damage[c->damaged] = item;
	}
	c->damaged++;
}

/* ---- the global sequence: clock, processes, threads, losses ------------------------------ */

static void write_clock(pf_ctx *c)
{
	const nt_archive_info *info = nt_reader_info(c->r);
	nt_pb *b = &c->aux;
	b->len = 0;
	nt_pb_varint(b, PF_PKT_SEQUENCE_ID, PF_SEQ_GLOBAL);
	nt_pb_varint(b, PF_PKT_FIRST_ON_SEQUENCE, 1);
	size_t cs = nt_pb_open(b, PF_PKT_CLOCK_SNAPSHOT);
	size_t k = nt_pb_open(b, PF_CS_CLOCKS);
	nt_pb_varint(b, PF_CLK_ID, PF_CLOCK_MONOTONIC);
	nt_pb_varint(b, PF_CLK_TIMESTAMP, info->start_monotonic_ns);
	nt_pb_close(b, k);
	k = nt_pb_open(b, PF_CS_CLOCKS);
	nt_pb_varint(b, PF_CLK_ID, PF_CLOCK_REALTIME);
	nt_pb_varint(b, PF_CLK_TIMESTAMP, info->start_realtime_ns);
	nt_pb_close(b, k);
	nt_pb_varint(b, PF_CS_PRIMARY, PF_CLOCK_MONOTONIC);
	nt_pb_close(b, cs);
	pf_emit(c, b);
}

/* A process track per section, a thread track per thread. */
static void write_tracks(pf_ctx *c)
{
	for (uint32_t i = 0; i < nt_reader_section_count(c->r); i++) {
		const nt_reader_section *sec = nt_reader_section_peek(c->r, i);
		if (sec->error[0] != '\0')
			continue; /* unreadable: no events of its own (its damage is reported) */
		size_t td = pf_track_begin(c, PF_SEQ_GLOBAL, PF_UUID(PF_UUID_PROCESS, i), 0, NULL, 0);
		size_t pd = nt_pb_open(&c->aux, PF_TD_PROCESS);
		nt_pb_varint(&c->aux, PF_PD_PID, sec->pid);
		pf_string(&c->aux, PF_PD_NAME, sec->name, strlen(sec->name));
		nt_pb_close(&c->aux, pd);
		pf_track_end(c, td);
	}
	for (uint32_t i = 0; i < nt_reader_thread_count(c->r); i++) {
		const nt_reader_thread *t = nt_reader_thread_at(c->r, i);
		size_t td = pf_track_begin(c, PF_SEQ_GLOBAL, pf_thread_uuid(t), 0, NULL, 0);
		size_t th = nt_pb_open(&c->aux, PF_TD_THREAD);
		nt_pb_varint(&c->aux, PF_THD_PID, t->pid);
		nt_pb_varint(&c->aux, PF_THD_TID, t->tid);
		pf_string(&c->aux, PF_THD_NAME, t->name, strlen(t->name));
		nt_pb_close(&c->aux, th);
		pf_track_end(c, td);
	}
}

/* One annotation with an inline name (the global sequence interns nothing). */
static void loss_count(nt_pb *b, const char *name, uint64_t v, int *any)
{
	if (v == 0)
		return;
	size_t at = nt_pb_open(b, PF_TE_DEBUG_ANNOTATIONS);
	nt_pb_bytes(b, PF_DA_NAME, name, strlen(name));
	nt_pb_varint(b, PF_DA_UINT, v);
	nt_pb_close(b, at);
	*any = 1;
}

/* What the whole rendering found: section 0's instant carries it. */
static void render_losses(pf_ctx *c, nt_pb *b, int *any)
{
	loss_count(b, "events_lost_in_gaps", c->gap_events, any);
	loss_count(b, "unmatched_ends", c->balance.unmatched_ends, any);
	loss_count(b, "unended_begins", nt_balance_unended(&c->balance), any);
	loss_count(b, "counter_args_not_numeric", c->non_numeric, any);
	loss_count(b, "timestamps_clamped", c->clamped, any);
	nt_id_counts ids; /* the names of Chrome JSON's otherData */
	nt_id_tally_totals(&c->ids, &ids);
	if (c->ids.oom)
		c->oom = 1;
	loss_count(b, "async_unended", ids.async_unended, any);
	loss_count(b, "async_unbegun", ids.async_unbegun, any);
	loss_count(b, "flows_unfinished", ids.flow_unfinished, any);
	loss_count(b, "flow_points_unbegun", ids.flow_unbegun, any);
	loss_count(b, "damaged_places", c->damaged, any);
	if (c->damaged == 0)
		return;
	size_t at = nt_pb_open(b, PF_TE_DEBUG_ANNOTATIONS);
	nt_pb_bytes(b, PF_DA_NAME, "damage", 6);
	for (uint64_t i = 0; i < c->damaged && i < sizeof(c->damage) / sizeof(c->damage[0]); i++) {
		size_t item = nt_pb_open(b, PF_DA_ARRAY);
		if (c->damage[i])
			pf_string(b, PF_DA_STRING, c->damage[i], strlen(c->damage[i]));
		nt_pb_close(b, item);
	}
	nt_pb_close(b, at);
}

/* Each process's losses, an instant on its track at the end of the trace. */
static void write_losses(pf_ctx *c)
{
	uint32_t n = nt_reader_section_count(c->r);
	for (uint32_t i = 0; i < n; i++) {
		const nt_reader_section *sec = nt_reader_section_peek(c->r, i);
		nt_archive_info hdr;
		const nt_archive_info *info = n == 1 ? nt_reader_info(c->r)
				: nt_reader_section_header(c->r, i, &hdr) == 0 ? &hdr : NULL;
		if (sec->error[0] != '\0' || info == NULL)
			continue;
		nt_pb *b = &c->pkt;
		b->len = 0;
		nt_pb_varint(b, PF_PKT_TIMESTAMP, c->last_ns < 0 ? 0 : (uint64_t)c->last_ns);
		nt_pb_varint(b, PF_PKT_TIMESTAMP_CLOCK_ID, PF_CLOCK_MONOTONIC);
		nt_pb_varint(b, PF_PKT_SEQUENCE_ID, PF_SEQ_GLOBAL);
		size_t te = nt_pb_open(b, PF_PKT_TRACK_EVENT);
		nt_pb_bytes(b, PF_TE_CATEGORIES, "nanotrace", 9);
		nt_pb_bytes(b, PF_TE_NAME, "nanotrace losses", 16);
		nt_pb_varint(b, PF_TE_TYPE, PF_TYPE_INSTANT);
		nt_pb_varint(b, PF_TE_TRACK_UUID, PF_UUID(PF_UUID_PROCESS, i));
		int any = 0;
		loss_count(b, "events_dropped", info->events_dropped, &any);
		loss_count(b, "dropped_rolling_full", info->dropped_rolling_full, &any);
		loss_count(b, "dropped_durable_full", info->dropped_durable_full, &any);
		loss_count(b, "dropped_stopped", info->dropped_stopped, &any);
		loss_count(b, "dropped_unsaved", info->dropped_unsaved, &any);
		loss_count(b, "events_overwritten", info->events_overwritten, &any);
		loss_count(b, "wraps", info->wraps, &any);
		/* Not losses, but what avoided them: streaming writers' waits for the saver. */
		loss_count(b, "blocked_waits", info->blocked_waits, &any);
		loss_count(b, "blocked_timeouts", info->blocked_timeouts, &any);
		loss_count(b, "blocked_ns", info->blocked_ns, &any);
		char stopped[256];
		if (nt_render_save_stopped(info, stopped, sizeof(stopped)) != NULL) {
			size_t at = nt_pb_open(b, PF_TE_DEBUG_ANNOTATIONS);
			nt_pb_bytes(b, PF_DA_NAME, "saving_stopped", 14);
			pf_string(b, PF_DA_STRING, stopped, strlen(stopped));
			nt_pb_close(b, at);
			any = 1;
		}
		if (i == 0)
			render_losses(c, b, &any);
		nt_pb_close(b, te);
		if (any)
			pf_emit(c, b);
	}
}

static void pf_free(pf_ctx *c)
{
	for (uint32_t i = 0; c->seq != NULL && i < c->nthreads; i++) {
		pf_table_free(&c->seq[i].tab);
		free(c->seq[i].children);
	}
	free(c->seq);
	free(c->seq_of);
	for (size_t i = 0; i < sizeof(c->damage) / sizeof(c->damage[0]); i++)
		free(c->damage[i]);
	free(c->pkt.p);
	free(c->interned.p);
	free(c->aux.p);
	nt_balance_free(&c->balance);
	nt_id_tally_free(&c->ids);
	free(c->async_open.slot);
}

int nt_render_perfetto(nt_reader *r, FILE *out, const nt_render_options *user_opt)
{
	nt_render_options copy;
	if (nt_render_options_in(user_opt, &copy, "nt_render_perfetto") != 0)
		return -1;
	if (r == NULL || out == NULL) {
		errno = EINVAL;
		return -1;
	}
	pf_ctx *c = calloc(1, sizeof(*c)); /* the output block is 64 KiB: not on the stack */
	if (c == NULL)
		return -1;
	nt_out_init(&c->out, out);
	c->r = r;
	c->opt = &copy;
	c->last_ns = (int64_t)nt_reader_info(r)->start_monotonic_ns;
	c->nthreads = nt_reader_thread_count(r);
	c->nindices = nt_reader_thread_index_limit(r);
	c->seq = calloc(c->nthreads ? c->nthreads : 1, sizeof(*c->seq));
	c->seq_of = calloc(c->nindices ? c->nindices : 1, sizeof(*c->seq_of));
	for (uint32_t i = 0; c->seq_of != NULL && i < c->nthreads; i++) {
		const nt_reader_thread *t = nt_reader_thread_at(r, i);
		if (t != NULL && t->index < c->nindices)
			c->seq_of[t->index] = i + 1;
	}
	int rc = -1;
	if (c->seq != NULL && c->seq_of != NULL && nt_balance_init(&c->balance, r)) {
		write_clock(c);
		write_tracks(c);
		nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error,
					   .on_gap = on_gap };
		rc = nt_reader_visit(r, &cb, c, copy.order, copy.policy);
		write_losses(c);
	}
	if (nt_out_flush(&c->out) != 0 || c->oom || c->seq == NULL || c->seq_of == NULL)
		rc = -1;
	int saved = errno;
	pf_free(c);
	free(c);
	errno = saved;
	return rc;
}
