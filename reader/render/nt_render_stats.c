/* nt_render_stats.c - counts per record kind and per thread, losses, bytes per event; per
 * provider for a reader of many processes. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "nt_render_ids.h"
#include "nt_render_lines.h"
#include "nt_render_util.h"
#include "format/nt_record.h"
#include "runtime/nt_fork_path.h"

typedef struct stats_ctx {
	uint64_t by_kind[256];
	uint64_t *by_thread; /* by thread index */
	uint64_t events;
	uint64_t errors;
	int64_t first_ns, last_ns;
	uint64_t gaps, gap_events;
	nt_balance balance;
	nt_id_tally ids;
	uint64_t kept_keys; /* Trace2 keys an import kept without knowing them */
	const nt_render_options *opt;
} stats_ctx;

static void on_gap(void *ctx, const nt_reader_gap *g)
{
	stats_ctx *s = ctx;
	s->gaps++;
	s->gap_events += g->events;
}

static int on_event(void *ctx, const nt_reader_event *e)
{
	stats_ctx *s = ctx;
	if (s->events == 0 || e->time_ns < s->first_ns)
		s->first_ns = e->time_ns;
	if (s->events == 0 || e->time_ns > s->last_ns)
		s->last_ns = e->time_ns;
	s->events++;
	s->by_kind[e->kind]++;
	s->by_thread[e->thread->index]++;
	nt_balance_admit(&s->balance, e);
	nt_id_tally_admit(&s->ids, e);
	/* An unknown event's keys are all kept; count those of known events only. */
	for (uint32_t i = 0; e->kind != NT_KIND_T2_FIRST + NT_T2E_UNKNOWN && i < e->arg_count; i++)
		s->kept_keys += e->args[i].type == NT_ARG_JSON;
	return 0;
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	stats_ctx *s = ctx;
	s->errors++;
	nt_render_forward_error(s->opt, off, msg);
}

/* The Trace2 processes the archive holds: the reader's process table is indexed by process
 * number and has room for more than it holds. */
static uint32_t processes_present(const nt_reader *r)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < nt_reader_process_count(r); i++)
		n += nt_reader_process_at(r, i) != NULL;
	return n;
}

/* Async spans and flows: events by kind, then per category what the trace cannot pair
 * (nt_render_ids.h), one line per category. */
static void print_ids(FILE *out, const nt_id_tally *ids, const uint64_t *by_kind)
{
	uint64_t n[6] = { 0 };
	for (unsigned k = NT_KIND_ASYNC_BEGIN; k <= NT_KIND_FLOW_END; k++)
		n[k - NT_KIND_ASYNC_BEGIN] = by_kind[k] + by_kind[k | NT_KIND_ID_GLOBAL];
	uint64_t spans, flows;
	if (nt_id_tally_keys(ids, &spans, &flows) == 0)
		return;
	fprintf(out, "async: %" PRIu64 " spans (begin %" PRIu64 ", instant %" PRIu64 ", end %"
		     PRIu64 "); flows: %" PRIu64 " (begin %" PRIu64 ", step %" PRIu64 ", end %"
		     PRIu64 ")\n", spans, n[0], n[1], n[2], flows, n[3], n[4], n[5]);
	uint32_t ncat;
	nt_id_counts *c = nt_id_tally_counts(ids, &ncat);
	for (uint32_t i = 0; i < ncat; i++) {
		char cat[NT_HDR_MAX_STRING + 1];
		fprintf(out, "  category %s: %" PRIu64 " async spans never ended, %" PRIu64
			     " async ends never begun, %" PRIu64 " flows never finished, %" PRIu64
			     " flow steps or ends never begun\n",
			nt_unctrl_copy(cat, sizeof(cat), c[i].category), c[i].async_unended,
			c[i].async_unbegun, c[i].flow_unfinished, c[i].flow_unbegun);
	}
	free(c);
}

/* Records of kinds this reader does not know (a newer writer's): skipped, and said so. */
static void print_unknown_kinds(FILE *out, const uint64_t *other)
{
	uint64_t n = 0;
	for (unsigned k = 0; k < 256; k++)
		n += nt_kind_is_known(k) || k == NT_KIND_INVALID ? 0 : other[k];
	if (n == 0)
		return;
	fprintf(out, "unknown kinds: %" PRIu64 " records skipped (kinds a newer writer made:", n);
	for (unsigned k = 0; k < 256; k++)
		if (!nt_kind_is_known(k) && k != NT_KIND_INVALID && other[k] != 0)
			fprintf(out, " %u", k);
	fprintf(out, ")\n");
}

static const char *mode_name(uint8_t m)
{
	return m == NT_MODE_ONESHOT ? "oneshot" : m == NT_MODE_CIRCULAR ? "circular"
		: m == NT_MODE_STREAMING ? "streaming" : "unknown";
}

static const char *end_name(uint8_t e)
{
	switch (e) {
	case NT_END_UNKNOWN: return "unknown (killed, or still running)";
	case NT_END_FINISHED: return "nt_finish";
	case NT_END_EXIT: return "process exit while recording";
	case NT_END_SIGNAL: return "signal";
	default: return "unknown";
	}
}

static const char *final_name(uint8_t f)
{
	switch (f) {
	case NT_FINAL_RECORDING: return "recording (never finished: the process did not call nt_finish)";
	case NT_FINAL_FINISHED: return "finished";
	case NT_FINAL_DURABLE_FULL: return "stopped early: durable region full";
	case NT_FINAL_INDEX_FULL: return "stopped early: string, call-site or thread index space full";
	default: return "unknown";
	}
}

/* What the header says about the archive: where it came from and how it was recorded. */
/* fork(): a child's archive names its parent; a parent's counts its children and says
 * where their archives are (runtime/nt_fork_path.h). */
static void print_fork(const nt_reader *r, FILE *out)
{
	const nt_archive_info *in = nt_reader_info(r);
	if (in->forked_from != 0)
		fprintf(out, "forked from: pid %" PRIu32 " (a fork() child's own archive)\n",
			in->forked_from);
	if (in->children_forked == 0)
		return;
	const char *name = nt_reader_name(r), *slash = strrchr(name, '/');
	char beside[4096], shown[4096];
	if (!nt_fork_child_name(beside, sizeof(beside), slash ? slash + 1 : name, "<pid>"))
		snprintf(beside, sizeof(beside), "%s", "<this archive's name>.<pid>");
	fprintf(out, "children forked: %" PRIu64 " while recording (each records into its own "
		"archive beside this one, named %s)\n", in->children_forked,
		nt_unctrl_copy(shown, sizeof(shown), beside));
}

/* The W3C trace context the process was started with (the OTLP export's parent): a line
 * after `indent`, or NULL when it had none. */
static const char *traceparent_line(const nt_archive_info *in, const char *indent, char *line,
				    size_t cap)
{
	char shown[NT_HDR_MAX_STRING + 1];
	if (in->traceparent[0] == '\0')
		return NULL;
	snprintf(line, cap, "%straceparent: %s (the W3C trace context the process was started "
		 "with)\n", indent, nt_unctrl_copy(shown, sizeof(shown), in->traceparent));
	return line;
}

static void print_traceparent(FILE *out, const char *indent, const nt_archive_info *in)
{
	char line[NT_HDR_MAX_STRING + 128];
	if (traceparent_line(in, indent, line, sizeof(line)) != NULL)
		fputs(line, out);
}

static void print_archive(const nt_reader *r, FILE *out)
{
	const nt_archive_info *in = nt_reader_info(r);
	char producer[NT_HDR_MAX_STRING + 1], process[NT_HDR_MAX_STRING + 1];
	char name[4096];
	fprintf(out, "archive: %s\n", nt_unctrl_copy(name, sizeof(name), nt_reader_name(r)));
	fprintf(out, "producer: %s (format %u.%u)\n",
		nt_unctrl_copy(producer, sizeof(producer), in->producer), in->format_major,
		in->format_minor);
	fprintf(out, "process: %s (pid %" PRIu32 ")\n",
		nt_unctrl_copy(process, sizeof(process), in->process_name), in->pid);
	print_fork(r, out);
	print_traceparent(out, "", in);
	fprintf(out, "clock: %s, %" PRIu64 " ticks/s\n", in->clock_source == NT_CLOCK_SOURCE_TSC ? "tsc" : "monotonic",
		in->ticks_per_second);
	/* An imported log was never in an arena: its header leaves the geometry 0, and the
	 * mode field's default would claim oneshot. */
	if (in->arena_size == 0)
		fputs("mode: none (no arena recorded this archive)\n", out);
	else
		fprintf(out, "mode: %s, arena %" PRIu64 " B, durable %" PRIu64 " B, chunks 2 x %"
			     PRIu32 " x %" PRIu32 " B\n", mode_name(in->buffering_mode),
			in->arena_size, in->durable_size, in->chunks_per_half, in->chunk_size);
	fprintf(out, "layout: %s\n", in->layout == NT_LAYOUT_ARENA
		? "arena (a live arena image: the process did not finish the archive)" : "stream");
	fprintf(out, "final state: %s\n", final_name(in->final_state));
	fprintf(out, "ended by: %s", end_name(in->ended_by));
	if (in->ended_by == NT_END_SIGNAL)
		fprintf(out, " %u (%s)", in->end_signal, strsignal(in->end_signal));
	fputc('\n', out);
	if (in->finish_monotonic_ns > in->start_monotonic_ns) {
		char d[32];
		nt_format_duration(d, sizeof(d), in->finish_monotonic_ns - in->start_monotonic_ns);
		fprintf(out, "session: %s\n", d);
	}
}

/* Trace2 messages by type, and the processes that wrote them. */
static void print_trace2(const nt_reader *r, FILE *out, const uint64_t *by_kind)
{
	uint64_t t2 = 0;
	for (unsigned k = NT_KIND_T2_FIRST; k <= NT_KIND_T2_LAST; k++)
		t2 += by_kind[k];
	if (t2 == 0)
		return;
	fprintf(out, "trace2: %" PRIu64 " messages (", t2);
	const char *sep = "";
	for (unsigned k = NT_KIND_T2_FIRST; k <= NT_KIND_T2_LAST; k++) {
		if (by_kind[k] == 0)
			continue;
		fprintf(out, "%s%s %" PRIu64, sep, nt_t2_event_names[k - NT_KIND_T2_FIRST], by_kind[k]);
		sep = ", ";
	}
	fprintf(out, "), processes %" PRIu32 "\n", processes_present(r));
}

/* Streaming writers' waits for the saver (nt_config.blocking_timeout_us), from the header:
 * a line only when blocking was on or a wait happened. */
static const char *blocked_line(const nt_archive_info *in, char *line, size_t cap)
{
	char d[32];
	nt_format_duration(d, sizeof(d), in->blocked_ns);
	snprintf(line, cap, "blocked: %" PRIu64 " waits for the saver, %s in all, %" PRIu64
		 " ended in a drop (timeout %" PRIu64 " us)\n",
		 in->blocked_waits, d, in->blocked_timeouts, in->blocking_timeout_us);
	return line;
}

static void print_blocked(FILE *out, const nt_archive_info *in)
{
	char line[256];
	if (in->blocking_timeout_us != 0 || in->blocked_waits != 0)
		fputs(blocked_line(in, line, sizeof(line)), out);
}

/* A name from the file, as nt_unctrl_copy() into `cap` bytes shows it (controls as '?',
 * cut to cap - 1 bytes). */
static void out_shown(nt_out *o, const char *s, size_t cap)
{
	char shown[1024];
	cap = cap < sizeof(shown) ? cap : sizeof(shown);
	if (strnlen(s, NT_OUT_ROOM_MAX) < (cap < NT_OUT_ROOM_MAX ? cap : NT_OUT_ROOM_MAX)) {
		nt_out_name(o, s); /* not cut: escaped in place, one copy (40,000 names) */
		return;
	}
	nt_out_str(o, nt_unctrl_copy(shown, cap, s));
}

/* Each thread: its name, ids and events, and its waits for the saver (BlockedRecords:
 * nt_reader_count_blocked) when it had any. A line per thread, through nt_out as the
 * providers' are, the later part of a long list on a helper (nt_render_lines.h). */
typedef struct thread_lines {
	const nt_reader *r;
	const uint64_t *by_thread;
	const nt_reader_blocked *blocked; /* NULL: no thread waited */
	uint32_t nthreads;                /* by_thread's and blocked's entries */
} thread_lines;

static void thread_line(nt_out *o, uint32_t i, const void *ctx)
{
	const thread_lines *tl = ctx;
	const nt_reader_thread *t = nt_reader_thread_at(tl->r, i);
	nt_out_str(o, "  thread ");
	nt_out_u64(o, t->index);
	nt_out_char(o, ' ');
	out_shown(o, t->name, NT_HDR_MAX_STRING + 1);
	nt_out_str(o, " (pid ");
	nt_out_u64(o, t->pid);
	nt_out_str(o, ", tid ");
	nt_out_u64(o, t->tid);
	nt_out_str(o, "): ");
	nt_out_u64(o, tl->by_thread[t->index]);
	nt_out_str(o, " events");
	const nt_reader_blocked *b = tl->blocked && t->index < tl->nthreads
					     ? &tl->blocked[t->index] : NULL;
	if (b != NULL && b->waits != 0) {
		char d[32];
		nt_format_duration(d, sizeof(d), b->ns);
		nt_out_printf(o, ", blocked %" PRIu64 " waits %s, %" PRIu64 " ended in a drop",
			      b->waits, d, b->timeouts);
	}
	nt_out_char(o, '\n');
}

static void print_threads(const nt_reader *r, nt_out *o, const stats_ctx *s, uint32_t nthreads)
{
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	nt_out_str(o, "threads: ");
	nt_out_u64(o, sum.threads);
	nt_out_char(o, '\n');
	/* read only when a header counts some (the table is by thread index, which a hostile
	 * archive can set near 2^20) */
	nt_reader_blocked *blocked = nt_reader_info(r)->blocked_waits != 0 /* every section's */
					     ? calloc(nthreads, sizeof(*blocked)) : NULL;
	if (blocked != NULL && nt_reader_count_blocked(r, blocked, nthreads) == 0) {
		free(blocked);
		blocked = NULL;
	}
	thread_lines tl = { r, s->by_thread, blocked, nthreads };
	nt_render_lines(o, sum.threads, thread_line, &tl);
	free(blocked);
}

static int is_many(const nt_reader *r)
{
	return nt_reader_section_count(r) != 1 || nt_reader_section_peek(r, 0)->reader != r;
}

/* A many-process reader: what it was read from and what it found about its inputs. */
static void print_many(const nt_reader *r, FILE *out)
{
	char shown[4096];
	fprintf(out, "archive: %s\n", nt_unctrl_copy(shown, sizeof(shown), nt_reader_name(r)));
	fprintf(out, "processes: %" PRIu32 " section%s\n", nt_reader_section_count(r),
		nt_reader_section_count(r) == 1 ? "" : "s");
	uint64_t off;
	const char *msg;
	for (uint32_t i = 0; (msg = nt_reader_problem_at(r, i, &off)) != NULL; i++)
		fprintf(out, "problem: %s at byte %" PRIu64 "\n",
			nt_unctrl_copy(shown, sizeof(shown), msg), off);
}

/* A section that lost nothing, saved all, never waited and had no traceparent (header_notes
 * 0) has zeros to print: its header is decoded (a cold read of a closed section's bytes, a
 * tenth of --stats's time on 20,000 sections) only when it says more. */
static int plain_section(const nt_reader_section *sec)
{
	return sec->error[0] == '\0' && sec->header_notes == 0;
}

typedef struct provider_lines {
	const nt_reader *r;
	const uint64_t *decoded; /* by section */
} provider_lines;

/* The rest of a section's line from its header: its losses, then what else it says. */
static void provider_notes(nt_out *o, const nt_archive_info *in)
{
	const struct { const char *label; uint64_t v; } loss[] = {
		{ ", dropped ", in->events_dropped },
		{ " (rolling full ", in->dropped_rolling_full },
		{ ", durable full ", in->dropped_durable_full },
		{ ", stopped ", in->dropped_stopped },
		{ ", not saved ", in->dropped_unsaved },
		{ "), overwritten ", in->events_overwritten },
		{ ", written ", in->events_written },
	};
	for (size_t f = 0; f < sizeof(loss) / sizeof(loss[0]); f++) {
		nt_out_str(o, loss[f].label);
		nt_out_u64(o, loss[f].v);
	}
}

static void provider_sublines(nt_out *o, const nt_archive_info *in)
{
	char line[NT_HDR_MAX_STRING + 128];
	if (traceparent_line(in, "    ", line, sizeof(line)) != NULL)
		nt_out_str(o, line);
	char stopped[256];
	if (nt_render_save_stopped(in, stopped, sizeof(stopped)) != NULL)
		nt_out_printf(o, "    %s\n", stopped);
	if (in->blocking_timeout_us != 0 || in->blocked_waits != 0) {
		nt_out_str(o, "    ");
		nt_out_str(o, blocked_line(in, line, sizeof(line)));
	}
}

/* Section i: who, how it ended, its events decoded (by this visit), dropped by reason and
 * overwritten (by its header), written, its bytes; then what else its header says. */
static void provider_line(nt_out *o, uint32_t i, const void *ctx)
{
	const provider_lines *pl = ctx;
	const nt_reader_section *sec = nt_reader_section_peek(pl->r, i);
	nt_out_str(o, "  section ");
	nt_out_u64(o, i);
	nt_out_str(o, ": pid ");
	nt_out_u64(o, sec->pid);
	nt_out_char(o, ' ');
	out_shown(o, sec->name, NT_HDR_MAX_STRING + 1);
	if (sec->provider_id) {
		nt_out_str(o, " (provider ");
		nt_out_u64(o, sec->provider_id);
		nt_out_char(o, ')');
	}
	nt_out_str(o, ": ");
	nt_out_str(o, sec->end_text[0] ? sec->end_text : "archive");
	nt_out_str(o, ", ");
	nt_out_str(o, mode_name(sec->mode));
	if (sec->message[0]) {
		nt_out_str(o, ", message: ");
		out_shown(o, sec->message, NT_HDR_MAX_STRING + 1);
	}
	nt_archive_info hdr;
	int plain = plain_section(sec);
	if (!plain && nt_reader_section_header(pl->r, i, &hdr) != 0) {
		nt_out_str(o, "; not readable: ");
		out_shown(o, sec->error, 1024);
		nt_out_char(o, '\n');
		return;
	}
	nt_out_str(o, "; events decoded ");
	nt_out_u64(o, pl->decoded[i]);
	if (plain) { /* most sections: the labels and zeros as one string */
		nt_out_str(o, ", dropped 0 (rolling full 0, durable full 0, stopped 0, "
			      "not saved 0), overwritten 0, written ");
		nt_out_u64(o, sec->events_written);
	} else {
		provider_notes(o, &hdr);
	}
	nt_out_str(o, ", bytes ");
	nt_out_u64(o, sec->size);
	nt_out_char(o, '\n');
	if (!plain)
		provider_sublines(o, &hdr);
}

/* Per provider a line (or a few), then the totals: a line per section, so through nt_out
 * (fprintf's ten conversions a line were a tenth of --stats's time on 20,000 sections), the
 * later part of a long list on a helper (nt_render_lines.h). The bytes are what the printf
 * formats wrote. */
static int print_providers(const nt_reader *r, nt_out *o, const uint64_t *by_thread)
{
	uint64_t tdec = 0, tdrop = 0, tover = 0, tbytes = 0;
	const uint32_t nsections = nt_reader_section_count(r);
	/* Each section's decoded events, in one pass over the threads: a pass per section made
	 * --stats of a 20,000-process bundle quadratic. */
	uint64_t *decoded = calloc(nsections ? nsections : 1, sizeof(uint64_t));
	if (decoded == NULL) {
		nt_out_printf(o, "providers: %" PRIu32 " (no memory to list them)\n", nsections);
		return nt_out_flush(o);
	}
	for (uint32_t t = 0; t < nt_reader_thread_count(r); t++) {
		const nt_reader_thread *th = nt_reader_thread_at(r, t);
		if (th->section < nsections)
			decoded[th->section] += by_thread[th->index];
	}
	nt_out_str(o, "providers: ");
	nt_out_u64(o, nsections);
	nt_out_char(o, '\n');
	provider_lines pl = { r, decoded };
	nt_render_lines(o, nsections, provider_line, &pl);
	for (uint32_t i = 0; i < nsections; i++) {
		const nt_reader_section *sec = nt_reader_section_peek(r, i);
		nt_archive_info hdr;
		if (!plain_section(sec)) {
			if (nt_reader_section_header(r, i, &hdr) != 0)
				continue; /* not readable: not in the totals */
			tdrop += hdr.events_dropped;
			tover += hdr.events_overwritten;
		}
		tdec += decoded[i];
		tbytes += sec->size;
	}
	free(decoded);
	nt_out_printf(o, "providers total: events decoded %" PRIu64 ", dropped %" PRIu64
		      ", overwritten %" PRIu64 ", bytes %" PRIu64 "\n", tdec, tdrop, tover, tbytes);
	return nt_out_flush(o);
}

/* The counts by kind: events, then the records that are not events, then Trace2's. */
static void print_counts(const nt_reader *r, FILE *out, const stats_ctx *s, const uint64_t *other)
{
	fprintf(out, "events: %" PRIu64 "\n", s->events);
	fprintf(out, "records: begin %" PRIu64 ", end %" PRIu64 ", instant %" PRIu64
		     ", complete %" PRIu64 ", counter %" PRIu64 ", timestamp %" PRIu64
		     ", chunk %" PRIu64 ", string %" PRIu64 ", thread %" PRIu64 ", callsite %" PRIu64 "\n",
		s->by_kind[NT_KIND_BEGIN], s->by_kind[NT_KIND_END], s->by_kind[NT_KIND_INSTANT],
		s->by_kind[NT_KIND_COMPLETE], s->by_kind[NT_KIND_COUNTER], other[NT_KIND_TIMESTAMP],
		other[NT_KIND_CHUNK], other[NT_KIND_STRING], other[NT_KIND_THREAD], other[NT_KIND_CALLSITE]);
	print_trace2(r, out, s->by_kind);
	uint64_t unknown = s->by_kind[NT_KIND_T2_FIRST + NT_T2E_UNKNOWN];
	if (unknown != 0 || s->kept_keys != 0)
		fprintf(out, "trace2 unknown: %" PRIu64 " events, %" PRIu64 " keys (kept as a newer "
			     "Git wrote them)\n", unknown, s->kept_keys);
}

/* Every loss the header and the visit know of, each on its own line even when zero: a
 * script greps for the line, not for its absence. */
static void print_losses(FILE *out, const nt_archive_info *in, const stats_ctx *s,
			 const uint64_t *other)
{
	/* A live arena's count is of another thing than a saved archive's (schema: events_written). */
	const char *counted = in->layout != NT_LAYOUT_ARENA ? "header count"
			      : in->buffering_mode == NT_MODE_STREAMING
				      ? "header count: the saved stream's"
				      : "header count: the chunks closed so far";
	fprintf(out, "written: %" PRIu64 " events (%s)\n", in->events_written, counted);
	fprintf(out, "dropped: %" PRIu64 " events (rolling full %" PRIu64 ", durable full %" PRIu64
		     ", stopped %" PRIu64 ", not saved %" PRIu64 ")\n",
		in->events_dropped, in->dropped_rolling_full, in->dropped_durable_full,
		in->dropped_stopped, in->dropped_unsaved);
	char stopped[256];
	if (nt_render_save_stopped(in, stopped, sizeof(stopped)) != NULL)
		fprintf(out, "%s\n", stopped);
	print_blocked(out, in); /* a bundle's: every section's waits */
	fprintf(out, "overwritten: %" PRIu64 " events\n", in->events_overwritten);
	fprintf(out, "wraps: %" PRIu64 "\n", in->wraps);
	if (in->buffering_mode == NT_MODE_STREAMING)
		fprintf(out, "halves saved: %" PRIu64 "\n", in->buffers_saved);
	fprintf(out, "gaps: %" PRIu64 " (%" PRIu64 " events lost between chunks)\n", s->gaps,
		s->gap_events);
	fprintf(out, "unmatched: %" PRIu64 " ends without a begin (left out of chrome output), %"
		     PRIu64 " begins without an end\n", s->balance.unmatched_ends,
		nt_balance_unended(&s->balance));
	print_ids(out, &s->ids, s->by_kind);
	print_unknown_kinds(out, other);
	fprintf(out, "durable dropped: %" PRIu64 " records\n", in->durable_dropped);
	fprintf(out, "values truncated: %" PRIu64 " events (a string or list argument cut to fit "
		     "one record)\n", in->values_truncated);
}

/* What the archive holds and its bytes: tables, regions, compression, bytes per event. */
static void print_sizes(nt_reader *r, FILE *out, const nt_archive_info *in, uint64_t events)
{
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	fprintf(out, "strings: %" PRIu32 ", call sites: %" PRIu32 ", chunks: %" PRIu64 "\n",
		sum.strings, sum.callsites, sum.chunks);
	fprintf(out, "bytes: file %" PRIu64 ", header %" PRIu64 ", durable %" PRIu64 ", chunks %" PRIu64 "\n",
		sum.file_bytes, sum.header_bytes, sum.durable_bytes, sum.chunk_bytes);
	uint64_t zchunks, plain_bytes;
	nt_reader_get_compression(r, &zchunks, &plain_bytes);
	fprintf(out, "compression: %" PRIu64 " of %" PRIu64 " chunks compressed (%s); chunks %"
		     PRIu64 " bytes in the file, %" PRIu64 " uncompressed (ratio %.2f)\n",
		zchunks, sum.chunks, nt_codec_name(in->compression), sum.chunk_bytes, plain_bytes,
		sum.chunk_bytes ? (double)plain_bytes / (double)sum.chunk_bytes : 1.0);
	if (events) {
		fprintf(out, "bytes per event: %.2f in chunks, %.2f overall\n",
			(double)sum.chunk_bytes / (double)events, (double)sum.file_bytes / (double)events);
	}
}

static void stats_free(stats_ctx *s)
{
	free(s->by_thread);
	nt_balance_free(&s->balance);
	nt_id_tally_free(&s->ids);
}

int nt_render_stats(nt_reader *r, FILE *out, const nt_render_options *user_opt)
{
	nt_render_options copy;
	const nt_render_options *opt = &copy;
	if (nt_render_options_in(user_opt, &copy, "nt_render_stats") != 0)
		return -1;
	stats_ctx s;
	memset(&s, 0, sizeof(s));
	s.opt = opt;
	uint32_t nthreads = nt_reader_thread_index_limit(r);
	s.by_thread = calloc(nthreads ? nthreads : 1, sizeof(uint64_t));
	if (s.by_thread == NULL || !nt_balance_init(&s.balance, r)) {
		free(s.by_thread);
		return -1;
	}
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error, .on_gap = on_gap };
	int rc = nt_reader_visit(r, &cb, &s, NT_ORDER_STREAM, opt->policy);
	/* Timestamp escapes, padding and the durable records are not events. */
	uint64_t other[256];
	nt_reader_count_records(r, other);
	/* The lists of threads and providers, a line per thread and per section, go through
	 * one nt_out; stdio before and after it, flushed in between. */
	nt_out *o = malloc(sizeof(*o));
	if (o == NULL) {
		stats_free(&s);
		return -1;
	}
	const nt_archive_info *in = nt_reader_info(r);
	if (is_many(r))
		print_many(r, out);
	else
		print_archive(r, out);
	print_counts(r, out, &s, other);
	nt_out_init(o, out);
	print_threads(r, o, &s, nthreads);
	int out_rc = nt_out_flush(o);
	print_losses(out, in, &s, other);
	print_sizes(r, out, in, s.events);
	if (is_many(r) && out_rc == 0) {
		nt_out_init(o, out);
		out_rc = print_providers(r, o, s.by_thread);
	}
	free(o);
	if (s.errors)
		fprintf(out, "damaged places: %" PRIu64 "\n", s.errors);
	if (s.ids.oom && rc == 0)
		rc = -1;
	stats_free(&s);
	return out_rc != 0 ? -1 : rc;
}
