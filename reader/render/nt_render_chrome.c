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
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "nt_render_util.h"

typedef struct chrome_ctx {
	FILE *out;
	const nt_reader *r;
	int64_t start_ns; /* the session start: "ts" counts from it */
	const nt_render_options *opt;
	nt_balance balance;
	int first;
} chrome_ctx;

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	nt_json_write_string(out, s, strlen(s));
	fputc('"', out);
}

static void json_arg_value(FILE *out, const nt_reader_arg *a)
{
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: fprintf(out, "%" PRId64, a->value.i64); break;
	case NT_ARG_UINT32:
	case NT_ARG_UINT64: fprintf(out, "%" PRIu64, a->value.u64); break;
	case NT_ARG_DOUBLE:
		if (isfinite(a->value.f64))
			fprintf(out, "%.17g", a->value.f64);
		else /* JSON has no NaN or infinity */
			fprintf(out, "\"%s\"", isnan(a->value.f64) ? "NaN" : a->value.f64 > 0 ? "Infinity" : "-Infinity");
		break;
	case NT_ARG_BOOL: fputs(a->value.u64 ? "true" : "false", out); break;
	case NT_ARG_POINTER: fprintf(out, "\"0x%" PRIx64 "\"", a->value.u64); break;
	case NT_ARG_STRING_LIST: nt_json_write_list(out, a); break;
	default:
		fputc('"', out);
		nt_json_write_string(out, a->value.str.ptr, a->value.str.len);
		fputc('"', out);
		break;
	}
}

static void begin_event(chrome_ctx *c)
{
	fputs(c->first ? "\n" : ",\n", c->out);
	c->first = 0;
}

static int on_event(void *ctx, const nt_reader_event *e)
{
	chrome_ctx *c = ctx;
	FILE *out = c->out;
	char ts[40];
	if (!nt_balance_admit(&c->balance, e))
		return 0;
	nt_format_offset_us(ts, sizeof(ts), nt_sat_sub(e->time_ns, c->start_ns));
	begin_event(c);
	fprintf(out, "{\"ph\":\"%s\",\"cat\":", nt_kind_phase(e->kind));
	json_str(out, nt_event_display_category(e));
	fputs(",\"name\":", out);
	json_str(out, nt_event_display_name(e));
	fprintf(out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":%s", e->thread->pid,
		e->thread->tid, ts);
	if (e->kind == NT_KIND_COMPLETE) {
		char dur[40];
		nt_format_offset_us(dur, sizeof(dur), (int64_t)e->duration_ns);
		fprintf(out, ",\"dur\":%s", dur);
	}
	/* A "C" series belongs to the process: pid and name, plus "id" when present (Perfetto
	 * names the track "<name> id: <id> <arg>", chrome://tracing "<name>[<id>]"). Each thread
	 * records its own values, so the thread's tid as "id" keeps two threads' same-named
	 * counters two series instead of one that jumps between them. A string, because
	 * Perfetto reads a numeric counter "id" as none. */
	if (e->kind == NT_KIND_COUNTER)
		fprintf(out, ",\"id\":\"%" PRIu32 "\"", e->thread->tid);
	if (e->kind == NT_KIND_INSTANT || (nt_kind_is_t2(e->kind) && !nt_event_opens(e) &&
					     !nt_event_closes(e)))
		fputs(",\"s\":\"t\"", out);
	if (e->arg_count > 0) {
		fputs(",\"args\":{", out);
		for (uint32_t i = 0; i < e->arg_count; i++) {
			if (i)
				fputc(',', out);
			json_str(out, e->args[i].name);
			fputc(':', out);
			json_arg_value(out, &e->args[i]);
		}
		fputc('}', out);
	}
	fputc('}', out);
	return 0;
}

/* A gap becomes an instant event on the thread that lost events, where they were lost. */
static void on_gap(void *ctx, const nt_reader_gap *g)
{
	chrome_ctx *c = ctx;
	char ts[40];
	nt_format_offset_us(ts, sizeof(ts), nt_sat_sub(g->time_ns, c->start_ns));
	begin_event(c);
	fprintf(c->out, "{\"ph\":\"i\",\"cat\":\"nanotrace\",\"name\":\"events lost\",\"s\":\"t\","
			"\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":%s,\"args\":{\"lost\":%" PRIu64 "}}",
		g->thread->pid, g->thread->tid, ts, g->events);
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	/* JSON has no place for damage: only the caller hears of it. */
	nt_render_forward_error(((chrome_ctx *)ctx)->opt, off, msg);
}

/* After the events: what the archive says it lost, and what the rendering left out. */
static void write_other_data(chrome_ctx *c)
{
	const nt_archive_info *info = nt_reader_info(c->r);
	FILE *out = c->out;
	fputs("\n],\"otherData\":{\"producer\":", out);
	json_str(out, info->producer);
	fputs(",\"archive\":", out);
	json_str(out, nt_reader_name(c->r));
	fprintf(out, ",\"processes\":%" PRIu32, nt_reader_section_count(c->r));
	fprintf(out, ",\"events_dropped\":%" PRIu64 ",\"events_overwritten\":%" PRIu64
		     ",\"wraps\":%" PRIu64 ",\"unmatched_ends\":%" PRIu64
		     ",\"unended_begins\":%" PRIu64 "}}\n",
		info->events_dropped, info->events_overwritten, info->wraps,
		c->balance.unmatched_ends, nt_balance_unended(&c->balance));
}

int nt_render_chrome(nt_reader *r, FILE *out, const nt_render_options *user_opt)
{
	nt_render_options copy;
	const nt_render_options *opt = &copy;
	if (nt_render_options_in(user_opt, &copy, "nt_render_chrome") != 0)
		return -1;
	const nt_archive_info *info = nt_reader_info(r);
	chrome_ctx c = { .out = out, .r = r, .start_ns = (int64_t)info->start_monotonic_ns,
			 .opt = opt, .first = 1 };
	if (!nt_balance_init(&c.balance, r))
		return -1;
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", out);
	for (uint32_t i = 0; i < nt_reader_section_count(r); i++) { /* one per process */
		const nt_reader_section *sec = nt_reader_section_at(r, i);
		if (sec->reader == NULL)
			continue; /* unreadable: no events of its own to name */
		begin_event(&c);
		fprintf(out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32
			     ",\"tid\":0,\"args\":{\"name\":", sec->pid);
		json_str(out, sec->name);
		fputs("}}", out);
	}
	for (uint32_t i = 0; i < nt_reader_thread_count(r); i++) {
		const nt_reader_thread *t = nt_reader_thread_at(r, i);
		begin_event(&c);
		fprintf(out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
			     ",\"args\":{\"name\":",
			t->pid, t->tid);
		json_str(out, t->name);
		fputs("}}", out);
	}
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error, .on_gap = on_gap };
	int rc = nt_reader_visit(r, &cb, &c, opt->order, opt->policy);
	write_other_data(&c);
	nt_balance_free(&c.balance);
	return rc;
}
