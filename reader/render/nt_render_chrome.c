/*
 * nt_render_chrome.c - Chrome Trace Event JSON, which chrome://tracing and Perfetto UI open.
 *
 * Timestamps are microseconds since the session start, printed exactly to the nanosecond
 * ("ts":12.345). Process and thread names come first as "M" metadata events: one process
 * per section, so a bundle's providers are processes of their own (pid = the process's).
 *
 * Only what the archive proves is shown: an End without a Begin before it on its thread is
 * left out (nt_balance), and counted in "otherData", which follows "traceEvents" because the
 * count is known only once every event is out. A Begin never ended stays open; viewers draw
 * it to the end of the trace ("Did not end" in Perfetto).
 *
 * otherData says what the trace lacks, each key only when it applies: the header's drops
 * by reason, the events lost in gaps, saving stopped, and the damage found (a truncated
 * archive's missing events among it), with its offsets and messages.
 */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "nt_render_ids.h"
#include "nt_render_util.h"

typedef struct chrome_ctx {
	nt_out out;
	const nt_reader *r;
	int64_t start_ns; /* the session start: "ts" counts from it */
	const nt_render_options *opt;
	nt_balance balance;
	nt_id_tally ids; /* async spans and flows, for otherData's unpaired counts */
	int first;
	uint64_t gap_events;   /* events lost between chunks, over every gap */
	uint64_t damaged;      /* damaged places reported */
	char *damage;          /* the first CHROME_DAMAGE_KEPT of them as JSON objects, "," between */
	size_t damage_len;
	int oom;
} chrome_ctx;

/* Damage listed in otherData: enough to say what and where, bounded for a ruined file. */
#define CHROME_DAMAGE_KEPT 100

static void json_str(nt_out *out, const char *s)
{
	nt_out_json_str(out, s, strlen(s));
}

/* A double as JSON: "%.17g" (no fast path: rare in traces), or a string for what JSON has
 * no number for. */
static void json_double(nt_out *out, double v)
{
	if (isfinite(v))
		nt_out_printf(out, "%.17g", v);
	else
		nt_out_str(out, isnan(v) ? "\"NaN\"" : v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
}

static void json_arg_value(nt_out *out, const nt_reader_arg *a)
{
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: nt_out_i64(out, a->value.i64); break;
	case NT_ARG_UINT32:
	case NT_ARG_UINT64: nt_out_u64(out, a->value.u64); break;
	case NT_ARG_DOUBLE: json_double(out, a->value.f64); break;
	case NT_ARG_BOOL: nt_out_str(out, a->value.u64 ? "true" : "false"); break;
	case NT_ARG_POINTER: {
		char *p = nt_out_room(out, 20);
		memcpy(p, "\"0x", 3);
		size_t n = 3 + nt_fmt_hex(p + 3, a->value.u64);
		p[n++] = '"';
		nt_out_commit(out, n);
		break;
	}
	case NT_ARG_STRING_LIST: nt_json_write_list(out, a); break;
	default: nt_out_json_str(out, a->value.str.ptr, a->value.str.len); break;
	}
}

static void begin_event(chrome_ctx *c)
{
	if (c->first)
		nt_out_char(&c->out, '\n');
	else
		nt_out_bytes(&c->out, ",\n", 2);
	c->first = 0;
}

/* `key` (with its punctuation) and microseconds since the start, exactly. */
static void put_us(nt_out *out, const char *key, size_t klen, int64_t ns)
{
	char *p = nt_out_room(out, 64);
	memcpy(p, key, klen);
	nt_out_commit(out, klen + nt_format_offset_us(p + klen, 48, ns));
}

/* ,"pid":<pid>,"tid":<tid> */
static void put_pid_tid(nt_out *out, uint32_t pid, uint32_t tid)
{
	char *p = nt_out_room(out, 64);
	size_t n = 0;
	memcpy(p, ",\"pid\":", 7), n = 7;
	n += nt_fmt_u64(p + n, pid);
	memcpy(p + n, ",\"tid\":", 7), n += 7;
	n += nt_fmt_u64(p + n, tid);
	nt_out_commit(out, n);
}

static void put_args(nt_out *out, const nt_reader_event *e)
{
	nt_out_bytes(out, ",\"args\":{", 9);
	for (uint32_t i = 0; i < e->arg_count; i++) {
		if (i)
			nt_out_char(out, ',');
		json_str(out, e->args[i].name);
		nt_out_char(out, ':');
		json_arg_value(out, &e->args[i]);
	}
	nt_out_char(out, '}');
}

/* An async event's "id2" ({"local": ...} is scoped to its pid by the viewers, {"global":
 * ...} is not), a flow's "id" and, for its end, "bp":"e": each binds to the slice that
 * encloses it on its thread (chrome://tracing and Perfetto bind "s" and "t" so already). */
static void put_id(nt_out *out, const nt_reader_event *e)
{
	char *p = nt_out_room(out, 64);
	size_t n;
	/* A process-scoped flow id becomes nt_id_trace_wide: viewers key a Chrome JSON flow by
	 * category, name and "id" across the whole trace (Perfetto's v1 flows have no "id2"). */
	if (nt_kind_id_base(e->kind) <= NT_KIND_ASYNC_END) {
		n = e->id_scope == NT_ID_GLOBAL ? 20 : 19;
		memcpy(p, e->id_scope == NT_ID_GLOBAL ? ",\"id2\":{\"global\":\"0x" : ",\"id2\":{\"local\":\"0x", n);
		n += nt_fmt_hex(p + n, e->id);
		memcpy(p + n, "\"}", 2), n += 2;
	} else {
		memcpy(p, ",\"id\":\"0x", 9), n = 9;
		n += nt_fmt_hex(p + n, nt_id_trace_wide(e));
		p[n++] = '"';
		if (nt_kind_id_base(e->kind) == NT_KIND_FLOW_END)
			memcpy(p + n, ",\"bp\":\"e\"", 9), n += 9;
	}
	nt_out_commit(out, n);
}

static int on_event(void *ctx, const nt_reader_event *e)
{
	chrome_ctx *c = ctx;
	nt_out *out = &c->out;
	if (!nt_balance_admit(&c->balance, e))
		return 0;
	nt_id_tally_admit(&c->ids, e);
	begin_event(c);
	nt_out_bytes(out, "{\"ph\":\"", 7);
	nt_out_str(out, nt_kind_phase(e->kind));
	nt_out_bytes(out, "\",\"cat\":", 8);
	json_str(out, nt_event_display_category(e));
	nt_out_bytes(out, ",\"name\":", 8);
	json_str(out, nt_event_display_name(e));
	put_pid_tid(out, e->thread->pid, e->thread->tid);
	put_us(out, ",\"ts\":", 6, nt_sat_sub(e->time_ns, c->start_ns));
	if (e->kind == NT_KIND_COMPLETE)
		put_us(out, ",\"dur\":", 7, (int64_t)e->duration_ns);
	if (e->id_scope != NT_ID_NONE)
		put_id(out, e);
	/* A "C" series belongs to the process: pid and name, plus "id" when present (Perfetto
	 * names the track "<name> id: <id> <arg>", chrome://tracing "<name>[<id>]"). Each thread
	 * records its own values, so the thread's tid as "id" keeps two threads' same-named
	 * counters two series instead of one that jumps between them. A string, because
	 * Perfetto reads a numeric counter "id" as none. */
	if (e->kind == NT_KIND_COUNTER) {
		nt_out_bytes(out, ",\"id\":\"", 7);
		nt_out_u64(out, e->thread->tid);
		nt_out_char(out, '"');
	}
	if (e->kind == NT_KIND_INSTANT || (nt_kind_is_t2(e->kind) && !nt_event_opens(e) &&
					     !nt_event_closes(e)))
		nt_out_bytes(out, ",\"s\":\"t\"", 8);
	if (e->arg_count > 0)
		put_args(out, e);
	nt_out_char(out, '}');
	return out->failed; /* a dead output stops the visit */
}

/* A gap becomes an instant event on the thread that lost events, where they were lost. */
static void on_gap(void *ctx, const nt_reader_gap *g)
{
	chrome_ctx *c = ctx;
	begin_event(c);
	nt_out_str(&c->out, "{\"ph\":\"i\",\"cat\":\"nanotrace\",\"name\":\"events lost\","
			    "\"s\":\"t\"");
	put_pid_tid(&c->out, g->thread->pid, g->thread->tid);
	put_us(&c->out, ",\"ts\":", 6, nt_sat_sub(g->time_ns, c->start_ns));
	nt_out_str(&c->out, ",\"args\":{\"lost\":");
	nt_out_u64(&c->out, g->events);
	nt_out_bytes(&c->out, "}}", 2);
	c->gap_events += g->events;
}

/* Damage (a truncated archive's missing events among it) goes to the caller and, after the
 * events, into otherData: the first CHROME_DAMAGE_KEPT places, and how many in all. */
static void on_error(void *ctx, uint64_t off, const char *msg)
{
	chrome_ctx *c = ctx;
	nt_render_forward_error(c->opt, off, msg);
	if (c->damaged++ >= CHROME_DAMAGE_KEPT)
		return;
	char *item = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&item, &len);
	if (f == NULL) {
		c->oom = 1;
		return;
	}
	fprintf(f, "%s{\"offset\":%" PRIu64 ",\"message\":\"", c->damage_len ? "," : "", off);
	nt_json_write_string(f, msg, strlen(msg));
	fputs("\"}", f);
	char *grown = fclose(f) == 0 ? realloc(c->damage, c->damage_len + len + 1) : NULL;
	if (grown == NULL) {
		c->oom = 1;
	} else {
		memcpy(grown + c->damage_len, item, len + 1);
		c->damage = grown;
		c->damage_len += len;
	}
	free(item);
}

/* Async spans and flows the trace cannot pair (--stats's counts, summed over categories),
 * only when there are some. */
static void write_unpaired_ids(chrome_ctx *c)
{
	nt_id_counts sum;
	uint32_t n = nt_id_tally_totals(&c->ids, &sum);
	if (c->ids.oom)
		c->oom = 1;
	if (n != 0)
		nt_out_printf(&c->out, ",\"async_unended\":%" PRIu64 ",\"async_unbegun\":%" PRIu64
				       ",\"flows_unfinished\":%" PRIu64 ",\"flow_points_unbegun\":%"
				       PRIu64, sum.async_unended, sum.async_unbegun,
			      sum.flow_unfinished, sum.flow_unbegun);
}

/* What the archive lost and the damage found, each only when there is some: the metadata of
 * an intact archive stays as it was. */
static void write_losses(chrome_ctx *c, const nt_archive_info *info)
{
	nt_out *out = &c->out;
	if (info->events_dropped)
		nt_out_printf(out, ",\"events_dropped_by_reason\":{\"rolling_full\":%" PRIu64
				   ",\"durable_full\":%" PRIu64 ",\"stopped\":%" PRIu64
				   ",\"not_saved\":%" PRIu64 "}",
			      info->dropped_rolling_full, info->dropped_durable_full,
			      info->dropped_stopped, info->dropped_unsaved);
	if (c->gap_events)
		nt_out_printf(out, ",\"events_lost_in_gaps\":%" PRIu64, c->gap_events);
	if (info->blocked_waits) /* streaming writers waited for the saver (nt_render_stats) */
		nt_out_printf(out, ",\"blocked\":{\"waits\":%" PRIu64 ",\"ended_in_drop\":%" PRIu64
				   ",\"ns\":%" PRIu64 ",\"timeout_us\":%" PRIu64 "}",
			      info->blocked_waits, info->blocked_timeouts, info->blocked_ns,
			      info->blocking_timeout_us);
	write_unpaired_ids(c);
	if (c->damaged) {
		nt_out_printf(out, ",\"damaged_places\":%" PRIu64 ",\"damage\":[", c->damaged);
		if (c->damage)
			nt_out_bytes(out, c->damage, c->damage_len);
		nt_out_char(out, ']');
	}
}

/* After the events: what the archive says it lost, and what the rendering left out. */
static void write_other_data(chrome_ctx *c)
{
	const nt_archive_info *info = nt_reader_info(c->r);
	nt_out *out = &c->out;
	nt_out_str(out, "\n],\"otherData\":{\"producer\":");
	json_str(out, info->producer);
	nt_out_str(out, ",\"archive\":");
	json_str(out, nt_reader_name(c->r));
	nt_out_printf(out, ",\"processes\":%" PRIu32, nt_reader_section_count(c->r));
	char stopped[256];
	if (nt_render_save_stopped(info, stopped, sizeof(stopped)) != NULL) {
		/* Only when saving stopped: other archives' metadata stays as it was. */
		nt_out_printf(out, ",\"dropped_unsaved\":%" PRIu64 ",\"saving_stopped\":",
			      info->dropped_unsaved);
		json_str(out, stopped);
	}
	write_losses(c, info);
	nt_out_printf(out, ",\"events_dropped\":%" PRIu64 ",\"events_overwritten\":%" PRIu64
			   ",\"wraps\":%" PRIu64 ",\"unmatched_ends\":%" PRIu64
			   ",\"unended_begins\":%" PRIu64 "}}\n",
		      info->events_dropped, info->events_overwritten, info->wraps,
		      c->balance.unmatched_ends, nt_balance_unended(&c->balance));
}

/* Process and thread names, as "M" events before all others. */
static void write_metadata(chrome_ctx *c, nt_reader *r)
{
	nt_out *out = &c->out;
	for (uint32_t i = 0; i < nt_reader_section_count(r); i++) { /* one per process */
		const nt_reader_section *sec = nt_reader_section_peek(r, i);
		if (sec->error[0] != '\0')
			continue; /* unreadable: no events of its own to name */
		begin_event(c);
		nt_out_printf(out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32
				   ",\"tid\":0,\"args\":{\"name\":", sec->pid);
		json_str(out, sec->name);
		nt_out_str(out, "}}");
	}
	for (uint32_t i = 0; i < nt_reader_thread_count(r); i++) {
		const nt_reader_thread *t = nt_reader_thread_at(r, i);
		begin_event(c);
		nt_out_printf(out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32
				   ",\"tid\":%" PRIu32 ",\"args\":{\"name\":",
			      t->pid, t->tid);
		json_str(out, t->name);
		nt_out_str(out, "}}");
	}
}

int nt_render_chrome(nt_reader *r, FILE *out, const nt_render_options *user_opt)
{
	nt_render_options copy;
	if (nt_render_options_in(user_opt, &copy, "nt_render_chrome") != 0)
		return -1;
	chrome_ctx *c = calloc(1, sizeof(*c)); /* the output block is 64 KiB: not on the stack */
	if (c == NULL)
		return -1;
	nt_out_init(&c->out, out);
	c->r = r;
	c->start_ns = (int64_t)nt_reader_info(r)->start_monotonic_ns;
	c->opt = &copy;
	c->first = 1;
	if (!nt_balance_init(&c->balance, r)) {
		free(c);
		return -1;
	}
	nt_out_str(&c->out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	write_metadata(c, r);
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error, .on_gap = on_gap };
	int rc = nt_reader_visit(r, &cb, c, copy.order, copy.policy);
	write_other_data(c);
	nt_balance_free(&c->balance);
	nt_id_tally_free(&c->ids);
	free(c->damage);
	if (nt_out_flush(&c->out) != 0 || c->oom)
		rc = -1;
	int saved = errno;
	free(c);
	errno = saved;
	return rc;
}
