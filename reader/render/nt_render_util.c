/* nt_render_util.c - helpers shared by the renderers: JSON strings, durations, and which
 * Begins and Ends pair up. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nt_render_util.h"
#include "../common/nt_struct_in.h"

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

/* Length of the valid UTF-8 sequence at s (of n bytes), or 0 if it is not valid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	unsigned cp = c & (0x7F >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

void nt_json_write_string(FILE *out, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc((int)c, out);
			i++;
		} else if (c < 0x20) {
			switch (c) {
			case '\n': fputs("\\n", out); break;
			case '\t': fputs("\\t", out); break;
			case '\r': fputs("\\r", out); break;
			case '\b': fputs("\\b", out); break;
			case '\f': fputs("\\f", out); break;
			default: fprintf(out, "\\u%04x", c); break;
			}
			i++;
		} else {
			size_t len = utf8_seq(s + i, n - i);
			if (len == 0) {
				fputs("\\ufffd", out);
				i++;
			} else {
				fwrite(s + i, 1, len, out);
				i += len;
			}
		}
	}
}

void nt_format_duration(char *buf, size_t cap, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, cap, "%" PRIu64 "ns", ns);
	else if (ns < 1000000)
		snprintf(buf, cap, "%.3fus", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, cap, "%.3fms", (double)ns / 1e6);
	else
		snprintf(buf, cap, "%.3fs", (double)ns / 1e9);
}

void nt_format_offset_us(char *buf, size_t cap, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)(-(ns + 1)) + 1 : (uint64_t)ns;
	snprintf(buf, cap, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
}

const char *nt_kind_phase(uint8_t kind)
{
	switch (kind) {
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

void nt_duration_stack_push(nt_duration_stack *s, int64_t ns)
{
	if (s->depth < NT_DURATION_STACK_MAX)
		s->begin_ns[s->depth] = ns;
	s->depth++;
}

int nt_duration_stack_pop(nt_duration_stack *s, int64_t end_ns, uint64_t *dur)
{
	if (s->depth == 0)
		return 0;
	s->depth--;
	if (s->depth >= NT_DURATION_STACK_MAX)
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
	} else if (nt_event_closes(e)) {
		if (b->open[t] == 0) {
			b->unmatched_ends++;
			return 0;
		}
		b->open[t]--;
	}
	return 1;
}

uint64_t nt_balance_unended(const nt_balance *b)
{
	uint64_t n = 0;
	for (uint32_t t = 0; t < b->nthreads; t++)
		n += b->open[t];
	return n;
}

void nt_balance_free(nt_balance *b)
{
	free(b->open);
	b->open = NULL;
}

void nt_json_write_list(FILE *out, const nt_reader_arg *a)
{
	uint32_t pos = 0, len;
	const char *s;
	int first = 1;
	fputc('[', out);
	while (nt_reader_list_next(a, &pos, &s, &len)) {
		fputs(first ? "\"" : ",\"", out);
		nt_json_write_string(out, s, len);
		fputc('"', out);
		first = 0;
	}
	fputc(']', out);
}
