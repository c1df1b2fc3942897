/* nt_render_util.c - helpers shared by the renderers: JSON strings, durations, and which
 * Begins and Ends pair up. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nt_render_util.h"
#include "reader/common/nt_struct_in.h"

void nt_render_options_init(nt_render_options *opt)
{
	if (opt == NULL)
		return;
	memset(opt, 0, sizeof(*opt));
	opt->struct_size = sizeof(*opt);
	opt->order = NT_ORDER_TIME;
	opt->policy = NT_ON_CORRUPT_SKIP;
}

/* The first nt_render_options ended with error_ctx; later fields go after it. */
#define RENDER_OPTIONS_V1_SIZE (offsetof(nt_render_options, error_ctx) + sizeof(void *))

int nt_render_options_in(const nt_render_options *in, nt_render_options *out, const char *who)
{
	nt_render_options_init(out);
	if (in == NULL)
		return 0;
	return nt_struct_copy_in(out, sizeof(*out), in, RENDER_OPTIONS_V1_SIZE, who,
				 "nt_render_options_init");
}

/* The public FILE * form: runs of plain bytes in one fwrite each (nt_out.h's tables). */
void nt_json_write_string(FILE *out, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	char esc[8];
	while (i < n) {
		size_t run = nt_json_plain_prefix(str + i, n - i, 0);
		fwrite(s + i, 1, run, out);
		if ((i += run) == n)
			break;
		if (s[i] < 0x80) { /* a quote, a backslash or a control character */
			fwrite(esc, 1, nt_json_escape_byte(esc, s[i]), out);
			i++;
			continue;
		}
		size_t len = nt_utf8_seq(s + i, n - i);
		if (len == 0) {
			fputs("\\ufffd", out);
			i++;
		} else if (nt_is_utf8_c1(s + i, len)) {
			fwrite(esc, 1, nt_json_escape_c1(esc, s[i + 1]), out);
			i += len;
		} else {
			fwrite(s + i, 1, len, out);
			i += len;
		}
	}
}

/* "%.3f<suffix>" of (double)ns / div (div = unit ns), exactly, in integers: the quotient is
 * rounded to 3 decimals (steps of unit / 1000 ns). Below 2^50 ns the double is within far
 * less than one ns of the exact quotient, so it rounds the same way, except at an exact tie
 * (the remainder half a step), where the double's binary value decides: ties go to
 * snprintf, as do larger values. */
static size_t duration_fixed(char *buf, size_t cap, uint64_t ns, uint64_t unit, double div,
			     const char *suffix)
{
	uint64_t step = unit / 1000, q = ns / step, r = ns % step;
	if (ns >= (1ull << 50) || (step > 1 && r * 2 == step)) {
		int n = snprintf(buf, cap, "%.3f%s", (double)ns / div, suffix);
		return n < 0 ? 0 : (size_t)n;
	}
	q += r * 2 > step;
	size_t n = nt_fmt_fixed(buf, (int64_t)q, 1000, 3);
	size_t sl = strlen(suffix);
	memcpy(buf + n, suffix, sl + 1);
	return n + sl;
}

size_t nt_format_duration(char *buf, size_t cap, uint64_t ns)
{
	if (cap < 32)
		return 0;
	if (ns < 1000) {
		size_t n = nt_fmt_u64(buf, ns);
		memcpy(buf + n, "ns", 3);
		return n + 2;
	}
	if (ns < 1000000)
		return duration_fixed(buf, cap, ns, 1000, 1e3, "us");
	if (ns < 1000000000)
		return duration_fixed(buf, cap, ns, 1000000, 1e6, "ms");
	return duration_fixed(buf, cap, ns, 1000000000, 1e9, "s");
}

size_t nt_format_offset_us(char *buf, size_t cap, int64_t ns)
{
	if (cap < 32)
		return 0;
	return nt_fmt_fixed(buf, ns, 1000, 3);
}

const char *nt_kind_phase(uint8_t kind)
{
	switch (nt_kind_id_base(kind)) {
	case NT_KIND_ASYNC_BEGIN: return "b";
	case NT_KIND_ASYNC_INSTANT: return "n";
	case NT_KIND_ASYNC_END: return "e";
	case NT_KIND_FLOW_BEGIN: return "s";
	case NT_KIND_FLOW_STEP: return "t";
	case NT_KIND_FLOW_END: return "f";
	case NT_KIND_BEGIN: return "B";
	case NT_KIND_END: return "E";
	case NT_KIND_INSTANT: return "i";
	case NT_KIND_COMPLETE: return "X";
	case NT_KIND_COUNTER: return "C";
	case NT_KIND_T2_FIRST + NT_T2E_REGION_ENTER: return "B";
	case NT_KIND_T2_FIRST + NT_T2E_REGION_LEAVE: return "E";
	default: return nt_kind_is_t2(kind) ? "i" : "?";
	}
}

int nt_duration_stack_push(nt_duration_stack *s, int64_t ns)
{
	int ok = 1;
	if (s->depth < NT_DURATION_STACK_MAX && s->depth >= s->cap) {
		uint32_t cap = s->cap ? 2 * s->cap : 8;
		int64_t *p = realloc(s->begin_ns, sizeof(*p) * (cap < NT_DURATION_STACK_MAX
								 ? cap : NT_DURATION_STACK_MAX));
		if (p != NULL) {
			s->begin_ns = p;
			s->cap = cap < NT_DURATION_STACK_MAX ? cap : NT_DURATION_STACK_MAX;
		}
		ok = p != NULL;
	}
	if (s->depth < s->cap)
		s->begin_ns[s->depth] = ns;
	s->depth++;
	return ok;
}

void nt_duration_stack_free(nt_duration_stack *s)
{
	free(s->begin_ns);
	*s = (nt_duration_stack){ 0 };
}

int nt_duration_stack_pop(nt_duration_stack *s, int64_t end_ns, uint64_t *dur)
{
	if (s->depth == 0)
		return 0;
	s->depth--;
	if (s->depth >= s->cap) /* deeper than the room it had when that Begin came */
		return 0;
	*dur = end_ns > s->begin_ns[s->depth] ? (uint64_t)end_ns - (uint64_t)s->begin_ns[s->depth] : 0;
	return 1;
}

const char *nt_event_display_name(const nt_reader_event *e)
{
	if (nt_kind_is_t2(e->kind) && e->name[0] == '\0')
		return nt_t2_event_names[e->kind - NT_KIND_T2_FIRST];
	return e->name;
}

const char *nt_event_display_category(const nt_reader_event *e)
{
	if (nt_kind_is_t2(e->kind) && e->category[0] == '\0')
		return "trace2";
	return e->category;
}

int nt_event_opens(const nt_reader_event *e)
{
	return e->kind == NT_KIND_BEGIN || e->kind == NT_KIND_T2_FIRST + NT_T2E_REGION_ENTER;
}

int nt_event_closes(const nt_reader_event *e)
{
	return e->kind == NT_KIND_END || e->kind == NT_KIND_T2_FIRST + NT_T2E_REGION_LEAVE;
}

int nt_balance_init(nt_balance *b, const nt_reader *r)
{
	*b = (nt_balance){ .nthreads = nt_reader_thread_index_limit(r) };
	b->open = calloc(b->nthreads ? b->nthreads : 1, sizeof(*b->open));
	return b->open != NULL;
}

int nt_balance_admit(nt_balance *b, const nt_reader_event *e)
{
	uint32_t t = e->thread->index;
	if (t >= b->nthreads)
		return 1;
	if (nt_event_opens(e)) {
		b->open[t]++;
		b->unended++;
	} else if (nt_event_closes(e)) {
		if (b->open[t] == 0) {
			b->unmatched_ends++;
			return 0;
		}
		b->open[t]--;
		b->unended--;
	}
	return 1;
}

uint64_t nt_balance_unended(const nt_balance *b)
{
	return b->unended;
}

void nt_balance_free(nt_balance *b)
{
	free(b->open);
	b->open = NULL;
}

void nt_json_write_list(nt_out *out, const nt_reader_arg *a)
{
	uint32_t pos = 0, len;
	const char *s;
	int first = 1;
	nt_out_char(out, '[');
	while (nt_reader_list_next(a, &pos, &s, &len)) {
		if (!first)
			nt_out_char(out, ',');
		nt_out_json_str(out, s, len);
		first = 0;
	}
	nt_out_char(out, ']');
}

const char *nt_render_save_stopped(const nt_archive_info *info, char *buf, size_t cap)
{
	if (info == NULL || buf == NULL || cap == 0 || info->save_errno == 0)
		return NULL;
	snprintf(buf, cap, "saving stopped: %s; %" PRIu64 " events not saved",
		 strerror((int)info->save_errno), info->dropped_unsaved);
	return buf;
}

const char *nt_render_losses(const nt_archive_info *info, char *buf, size_t cap)
{
	if (info == NULL || buf == NULL || cap == 0 ||
	    (info->events_dropped == 0 && info->events_overwritten == 0))
		return NULL;
	snprintf(buf, cap, "%" PRIu64 " events dropped (rolling full %" PRIu64 ", durable full %"
		 PRIu64 ", stopped %" PRIu64 ", not saved %" PRIu64 "), %" PRIu64 " overwritten",
		 info->events_dropped, info->dropped_rolling_full, info->dropped_durable_full,
		 info->dropped_stopped, info->dropped_unsaved, info->events_overwritten);
	return buf;
}
