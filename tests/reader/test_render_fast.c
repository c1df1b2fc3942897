/*
 * test_render_fast.c - the renderers format without stdio per field (reader/common/nt_out.h)
 * and must still write exactly what printf would:
 *
 *   numbers        every formatting helper against snprintf with the format it replaces:
 *                  edge values (0, INT64_MIN, INT64_MAX, UINT64_MAX, powers of ten and their
 *                  neighbours, rounding ties) and a million pseudo-random values of every
 *                  magnitude
 *   json           the table-driven JSON escaping against a byte-by-byte reference, for every
 *                  byte, every pair of bytes and random strings (invalid UTF-8 included), in
 *                  both dialects (nanotrace's U+FFFD, Git's raw bytes)
 *   archive        a generated archive with arguments of every type and edge values (NaN,
 *                  infinities, strings that need escapes, invalid UTF-8) rendered as text and
 *                  Chrome JSON by the library and by a reference renderer here that formats
 *                  every field with stdio, as the renderers did before; byte for byte equal
 *   write errors   a full disk (/dev/full) and a closed pipe make every renderer stop and
 *                  return -1 with errno ENOSPC / EPIPE: nothing is lost silently
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/nt_cmocka.h"
#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_reader.h>
#include "reader/common/nt_out.h"
#include "reader/render/nt_render_util.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state; /* xorshift64* */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* A value of a random magnitude: uniform bits would almost always have 20 digits. */
static uint64_t rng_any(void)
{
	unsigned bits = (unsigned)(rng() % 65);
	return bits == 64 ? rng() : rng() & ((1ull << bits) - 1);
}

/* Edge values: 0, 1, the extremes, every power of ten and its neighbours, halves. */
static size_t edge_values(uint64_t *v, size_t cap)
{
	size_t n = 0;
	v[n++] = 0, v[n++] = 1, v[n++] = UINT64_MAX, v[n++] = UINT64_MAX - 1;
	v[n++] = (uint64_t)INT64_MAX, v[n++] = (uint64_t)INT64_MIN, v[n++] = (uint64_t)INT64_MIN + 1;
	v[n++] = 1ull << 50, v[n++] = (1ull << 53) - 1, v[n++] = 1ull << 53, v[n++] = (1ull << 53) + 1;
	for (uint64_t p = 1; n + 6 <= cap; p *= 10) {
		v[n++] = p - 1, v[n++] = p, v[n++] = p + 1, v[n++] = p / 2, v[n++] = p + p / 2;
		if (p > UINT64_MAX / 10)
			break;
	}
	return n;
}

/* ---- numbers ---------------------------------------------------------------------------- */

/* What nt_render_text and nt_render_chrome printed before nt_out (the references). */
static void ref_duration(char *buf, size_t cap, uint64_t ns)
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

static void ref_fixed(char *buf, size_t cap, int64_t v, uint64_t unit, int digits)
{
	uint64_t a = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
	snprintf(buf, cap, "%s%" PRIu64 ".%0*" PRIu64, v < 0 ? "-" : "", a / unit, digits, a % unit);
}

static void check_one(uint64_t u)
{
	char got[64], want[64];
	int64_t i = (int64_t)u;
	size_t n;
	n = nt_fmt_u64(got, u), got[n] = '\0';
	snprintf(want, sizeof(want), "%" PRIu64, u);
	assert_msg(strcmp(got, want) == 0, "u64 %s: got %s", want, got);
	n = nt_fmt_i64(got, i), got[n] = '\0';
	snprintf(want, sizeof(want), "%" PRId64, i);
	assert_msg(strcmp(got, want) == 0, "i64 %s: got %s", want, got);
	n = nt_fmt_hex(got, u), got[n] = '\0';
	snprintf(want, sizeof(want), "%" PRIx64, u);
	assert_msg(strcmp(got, want) == 0, "hex %s: got %s", want, got);
	n = nt_fmt_u64_zero_padded(got, u % 1000000000u, 9), got[n] = '\0';
	snprintf(want, sizeof(want), "%09" PRIu64, u % 1000000000u);
	assert_msg(strcmp(got, want) == 0, "%%09: %s: got %s", want, got);
	n = nt_fmt_fixed(got, i, 1000000000u, 9), got[n] = '\0'; /* text's time column */
	ref_fixed(want, sizeof(want), i, 1000000000u, 9);
	assert_msg(strcmp(got, want) == 0, "seconds %s: got %s", want, got);
	n = nt_format_offset_us(got, sizeof(got), i), got[n] = '\0'; /* chrome's ts and dur */
	ref_fixed(want, sizeof(want), i, 1000u, 3);
	assert_msg(strcmp(got, want) == 0, "us %s: got %s", want, got);
	n = nt_fmt_us_as_secs(got, u), got[n] = '\0'; /* Git's "%.6f" of seconds */
	snprintf(want, sizeof(want), "%.6f", (double)u / 1000000.0);
	assert_msg(strcmp(got, want) == 0, "%%.6f of %" PRIu64 " us: %s, got %s", u, want, got);
	nt_format_duration(got, sizeof(got), u);
	ref_duration(want, sizeof(want), u);
	assert_msg(strcmp(got, want) == 0, "duration of %" PRIu64 " ns: %s, got %s", u, want, got);
}

static void test_numbers(void **state)
{
	(void)state;
	uint64_t edge[256];
	size_t n = edge_values(edge, 256);
	for (size_t k = 0; k < n; k++)
		for (int64_t d = -3; d <= 3; d++)
			check_one(edge[k] + (uint64_t)d);
	/* Rounding ties of the duration column (half a microsecond, half a millisecond). */
	for (uint64_t t = 1000500; t < 1000000000; t = t * 3 + 1000500)
		check_one(t - t % 1000 + 500);
	for (uint64_t t = 1000000000; t < (1ull << 52); t = t * 7 + 500000)
		check_one(t - t % 1000000 + 500000);
	for (int k = 0; k < 1000000; k++)
		check_one(rng_any());
}

/* ---- JSON ------------------------------------------------------------------------------- */

/* nt_json_write_string as it was: a switch per byte, and U+FFFD for bad UTF-8. */
static size_t ref_utf8(const unsigned char *s, size_t n)
{
	unsigned c = s[0], cp, min;
	size_t len;
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
	cp = c & (0x7F >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	return cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : len;
}

static void ref_json(FILE *out, const char *str, size_t n, int raw_high)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		if (c == '"' || c == '\\') {
			fprintf(out, "\\%c", c), i++;
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
		} else if (raw_high) {
			fputc((int)c, out), i++;
		} else {
			size_t len = ref_utf8(s + i, n - i);
			if (len == 0)
				fputs("\\ufffd", out), i++;
			else if (len == 2 && c == 0xC2 && s[i + 1] < 0xA0) /* C1: escaped */
				fprintf(out, "\\u%04x", s[i + 1]), i += len;
			else
				fwrite(s + i, 1, len, out), i += len;
		}
	}
}

/* Git's dialect through the shared pieces, as the Trace2 renderer uses them. */
static void fast_json_raw(nt_out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t run = nt_json_plain_prefix(s + i, n - i, 1);
		nt_out_bytes(o, s + i, run);
		if ((i += run) == n)
			break;
		nt_out_commit(o, nt_json_escape_byte(nt_out_room(o, 6), (unsigned char)s[i++]));
	}
}

static void check_json(const char *s, size_t n)
{
	for (int raw = 0; raw <= 1; raw++) {
		char *want = NULL, *got = NULL;
		size_t wl = 0, gl = 0;
		FILE *w = open_memstream(&want, &wl), *g = open_memstream(&got, &gl);
		assert_non_null(w);
		assert_non_null(g);
		ref_json(w, s, n, raw);
		nt_out *o = malloc(sizeof(*o));
		assert_non_null(o);
		nt_out_init(o, g);
		if (raw)
			fast_json_raw(o, s, n);
		else
			nt_out_json_body(o, s, n);
		assert_int_equal(nt_out_flush(o), 0);
		free(o);
		fclose(w);
		fclose(g);
		assert_msg(wl == gl && memcmp(want, got, wl) == 0,
			   "JSON (%s) of %zu bytes starting %02x: want %s, got %s",
			   raw ? "raw" : "utf8", n, n ? (unsigned char)s[0] : 0, want, got);
		/* The public FILE * version too (nanotrace's dialect). */
		if (!raw) {
			char *pub = NULL;
			size_t pl = 0;
			FILE *p = open_memstream(&pub, &pl);
			nt_json_write_string(p, s, n);
			fclose(p);
			assert_msg(pl == wl && memcmp(pub, want, wl) == 0, "nt_json_write_string differs");
			free(pub);
		}
		free(want);
		free(got);
	}
}

static void test_json(void **state)
{
	(void)state;
	char s[64];
	for (int a = 0; a < 256; a++) {
		s[0] = (char)a;
		check_json(s, 1);
		for (int b = 0; b < 256; b++) {
			s[1] = (char)b;
			if (a >= 0x80 || a < 0x21 || b >= 0x80 || b < 0x21 || a == '"' || a == '\\')
				check_json(s, 2); /* the pairs that matter: escapes and UTF-8 leads */
		}
	}
	/* Random strings over a small alphabet of trouble, long enough for the word loop. */
	static const unsigned char alphabet[] = { 'a', 'Z', ' ', '"', '\\', '\n', 0x01, 0x1f, 0x7f,
						  0x80, 0xbf, 0xc2, 0xc3, 0xa9, 0xe2, 0x82, 0xac,
						  0xed, 0xa0, 0xf0, 0x9f, 0x98, 0xf4, 0xf5, 0xff, 0 };
	for (int k = 0; k < 50000; k++) {
		size_t n = (size_t)(rng() % sizeof(s));
		int plain = (int)(rng() % 4); /* mostly plain strings, now and then all trouble */
		for (size_t i = 0; i < n; i++)
			s[i] = (char)(plain ? (rng() % 8 ? 'a' + (char)(rng() % 26) : alphabet[rng() % sizeof(alphabet)])
					    : alphabet[rng() % sizeof(alphabet)]);
		check_json(s, n);
	}
}

/* ---- a whole archive, against a stdio reference ----------------------------------------- */

static const char *const tricky[] = {
	"plain", "", "quote \" and backslash \\", "line\nfeed\ttab\rcr\bbs\ffeed",
	"\x01\x02\x1f control", "del \x7f", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	"bad \xc0\xaf overlong", "surrogate \xed\xa0\x80", "cut \xe2\x82", "lone \x80\xbf",
	"high \xf5\xff", "a long plain string that crosses several eight-byte words, twice over",
};
static const double doubles[] = { 0.0, -0.0, 0.1, -1.5, 1e300, -1e-300, 4.9e-324, 1.7976931348623157e308,
				  3.141592653589793, 1e15, 123456789.125 };

/* Records the edge-value archive into a new file named from `path` (a mkstemp template,
 * which gets the name). */
static void record_archive(char *path)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = 64u << 20;
	cfg.process_name = "render \"fast\"";
	assert_int_equal(nt_start(&cfg), NT_OK);
	uint64_t edge[256];
	size_t ne = edge_values(edge, 256);
	size_t nt = sizeof(tricky) / sizeof(tricky[0]), nd = sizeof(doubles) / sizeof(doubles[0]);
	for (size_t i = 0; i < 60000; i++) {
		NT_BEGIN("fast", "outer");
		NT_INSTANT("fast", "values", NT_I64("i", (int64_t)edge[i % ne]), NT_U64("u", edge[(i + 1) % ne]),
			   NT_I32("i32", (int32_t)edge[i % ne]), NT_U32("u32", (uint32_t)edge[(i + 3) % ne]),
			   NT_BOOL("b", i & 1), NT_PTR("p", (void *)(uintptr_t)edge[(i + 2) % ne]));
		double d = i % 13 == 11 ? NAN : i % 13 == 12 ? (i & 1 ? INFINITY : -INFINITY) : doubles[i % nd];
		NT_INSTANT("fast \"cat\"", "na\\me\n", NT_F64("d", d), NT_STR("s", tricky[i % nt]),
			   NT_STR("t", tricky[(i + 5) % nt]));
		NT_COUNTER("fast", "level", NT_I64("v", (int64_t)(i * 977)));
		NT_COMPLETE("fast", "done", nt_now() - (uint64_t)(rng() % 5000000));
		NT_END("fast", "outer");
	}
	assert_int_equal(nt_finish(path), NT_OK);
}

typedef struct ref_ctx {
	FILE *out;
	int64_t start_ns;
	int wthread, wcat, wname;
	uint32_t depth[64];
	int64_t begin_ns[64][256];
	int first;
	uint64_t *open; /* chrome's balance, by thread index */
} ref_ctx;

static void ref_arg(FILE *out, const nt_reader_arg *a, int chrome)
{
	switch (a->type) {
	case NT_ARG_INT32:
	case NT_ARG_INT64: fprintf(out, "%" PRId64, a->value.i64); break;
	case NT_ARG_UINT32:
	case NT_ARG_UINT64: fprintf(out, "%" PRIu64, a->value.u64); break;
	case NT_ARG_DOUBLE:
		if (!chrome || isfinite(a->value.f64))
			fprintf(out, "%.17g", a->value.f64);
		else
			fprintf(out, "\"%s\"", isnan(a->value.f64) ? "NaN" : a->value.f64 > 0 ? "Infinity" : "-Infinity");
		break;
	case NT_ARG_BOOL: fputs(a->value.u64 ? "true" : "false", out); break;
	case NT_ARG_POINTER: fprintf(out, chrome ? "\"0x%" PRIx64 "\"" : "0x%" PRIx64, a->value.u64); break;
	default:
		fputc('"', out);
		ref_json(out, a->value.str.ptr, a->value.str.len, 0);
		fputc('"', out);
		break;
	}
}

/* The text format's names: a control byte is shown as '?' (never sent to a terminal). */
static const char *ref_name(char *buf, size_t cap, const char *s)
{
	snprintf(buf, cap, "%s", s);
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return buf;
}

static int ref_text_event(void *ctx, const nt_reader_event *e)
{
	ref_ctx *t = ctx;
	int64_t rel = e->time_ns - t->start_ns;
	char when[48], thread[96], dur[48] = "";
	ref_fixed(when, sizeof(when), rel, 1000000000u, 9);
	snprintf(thread, sizeof(thread), "%s:%" PRIu32, e->thread->name[0] ? e->thread->name : "thread",
		 e->thread->tid);
	uint32_t ti = e->thread->index % 64, *d = &t->depth[ti];
	if (e->kind == NT_KIND_COMPLETE)
		ref_duration(dur, sizeof(dur), e->duration_ns);
	else if (e->kind == NT_KIND_BEGIN)
		t->begin_ns[ti][(*d)++ % 256] = e->time_ns;
	else if (e->kind == NT_KIND_END && *d > 0)
		ref_duration(dur, sizeof(dur), (uint64_t)(e->time_ns - t->begin_ns[ti][--*d % 256]));
	char cat[256], name[256], arg[256], shown[96];
	fprintf(t->out, "%16s  %-*.*s  %s   %-*.*s  %-*.*s  %10s ", when, t->wthread, t->wthread,
		ref_name(shown, sizeof(shown), thread), nt_kind_phase(e->kind), t->wcat, t->wcat,
		ref_name(cat, sizeof(cat), e->category), t->wname, t->wname,
		ref_name(name, sizeof(name), e->name), dur);
	for (uint32_t i = 0; i < e->arg_count; i++) {
		fprintf(t->out, " %s=", ref_name(arg, sizeof(arg), e->args[i].name));
		ref_arg(t->out, &e->args[i], 0);
	}
	fputc('\n', t->out);
	return 0;
}

static int col(uint32_t n, int min)
{
	return n > 32 ? 32 : (int)n < min ? min : (int)n;
}

static void ref_text(nt_reader *r, FILE *out)
{
	ref_ctx *t = calloc(1, sizeof(*t));
	t->out = out;
	t->start_ns = (int64_t)nt_reader_info(r)->start_monotonic_ns;
	t->wthread = col(nt_reader_max_name_len(r) + 8, 6);
	t->wcat = col(nt_reader_max_category_len(r), 8);
	t->wname = col(nt_reader_max_event_name_len(r), 4);
	fprintf(out, "%16s  %-*s  %s  %-*s  %-*s  %10s  %s\n", "TIME(s)", t->wthread, "THREAD", "PH",
		t->wcat, "CATEGORY", t->wname, "NAME", "DURATION", "ARGS");
	nt_reader_callbacks cb = { .on_event = ref_text_event };
	assert_int_equal(nt_reader_visit(r, &cb, t, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP), 0);
	free(t);
}

static void ref_json_str(FILE *out, const char *s)
{
	fputc('"', out);
	ref_json(out, s, strlen(s), 0);
	fputc('"', out);
}

static int ref_chrome_event(void *ctx, const nt_reader_event *e)
{
	ref_ctx *c = ctx;
	uint32_t ti = e->thread->index % 64;
	if (e->kind == NT_KIND_BEGIN)
		c->depth[ti]++;
	else if (e->kind == NT_KIND_END && c->depth[ti]-- == 0)
		return (void)c->depth[ti]++, 0; /* unmatched: left out */
	char ts[48];
	ref_fixed(ts, sizeof(ts), e->time_ns - c->start_ns, 1000, 3);
	fprintf(c->out, ",\n{\"ph\":\"%s\",\"cat\":", nt_kind_phase(e->kind));
	ref_json_str(c->out, e->category);
	fputs(",\"name\":", c->out);
	ref_json_str(c->out, e->name);
	fprintf(c->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":%s", e->thread->pid, e->thread->tid, ts);
	if (e->kind == NT_KIND_COMPLETE) {
		ref_fixed(ts, sizeof(ts), (int64_t)e->duration_ns, 1000, 3);
		fprintf(c->out, ",\"dur\":%s", ts);
	}
	if (e->kind == NT_KIND_COUNTER)
		fprintf(c->out, ",\"id\":\"%" PRIu32 "\"", e->thread->tid);
	if (e->kind == NT_KIND_INSTANT)
		fputs(",\"s\":\"t\"", c->out);
	if (e->arg_count > 0) {
		fputs(",\"args\":{", c->out);
		for (uint32_t i = 0; i < e->arg_count; i++) {
			fputs(i ? "," : "", c->out);
			ref_json_str(c->out, e->args[i].name);
			fputc(':', c->out);
			ref_arg(c->out, &e->args[i], 1);
		}
		fputc('}', c->out);
	}
	fputc('}', c->out);
	return 0;
}

/* The events of the Chrome rendering (the metadata before them and otherData after are
 * printf lines in both): from the first event that is not "M" to the closing "]". */
static const char *chrome_events(const char *s)
{
	const char *p = strstr(s, ",\n{\"ph\":\"B\"");
	assert_non_null(p);
	return p;
}

static void ref_chrome(nt_reader *r, FILE *out)
{
	ref_ctx *c = calloc(1, sizeof(*c));
	c->out = out;
	c->start_ns = (int64_t)nt_reader_info(r)->start_monotonic_ns;
	nt_reader_callbacks cb = { .on_event = ref_chrome_event };
	assert_int_equal(nt_reader_visit(r, &cb, c, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP), 0);
	fputs("\n]", out);
	free(c);
}

static void test_archive(void **state)
{
	(void)state;
	char path[] = "/tmp/test_render_fast-XXXXXX";
	record_archive(path);
	nt_reader *r = nt_reader_open(path, NULL);
	assert_non_null(r);
	for (int chrome = 0; chrome <= 1; chrome++) {
		char *want = NULL, *got = NULL;
		size_t wl = 0, gl = 0;
		FILE *w = open_memstream(&want, &wl), *g = open_memstream(&got, &gl);
		if (chrome) {
			ref_chrome(r, w);
			assert_int_equal(nt_render_chrome(r, g, NULL), 0);
		} else {
			ref_text(r, w);
			assert_int_equal(nt_render_text(r, g, NULL), 0);
		}
		fclose(w);
		fclose(g);
		const char *a = chrome ? chrome_events(want) : want;
		const char *b = chrome ? chrome_events(got) : got;
		size_t n = chrome ? strlen(a) : wl;
		assert_true(n > 1000000); /* the archive is large: every edge value many times over */
		if (strncmp(a, b, n) != 0) {
			size_t i = 0;
			while (a[i] == b[i])
				i++;
			size_t from = i > 200 ? i - 200 : 0;
			fail_msg("%s differs at byte %zu:\nwant ...%.300s\ngot  ...%.300s",
				 chrome ? "chrome" : "text", i, a + from, b + from);
		}
		free(want);
		free(got);
	}
	nt_reader_close(r);
	unlink(path);
}

/* ---- write errors ----------------------------------------------------------------------- */

typedef int (*render_fn)(nt_reader *r, FILE *out);

static int render_text(nt_reader *r, FILE *out) { return nt_render_text(r, out, NULL); }
static int render_chrome(nt_reader *r, FILE *out) { return nt_render_chrome(r, out, NULL); }
static int render_event(nt_reader *r, FILE *out)
{
	nt_trace2_options o;
	nt_trace2_options_init(&o);
	o.format = NT_TRACE2_EVENT;
	return nt_render_trace2(&r, 1, out, &o);
}

static const char t2_log[] =
	"{\"event\":\"version\",\"sid\":\"s\",\"thread\":\"main\",\"time\":\"2024-01-01T00:00:00.000000Z\",\"evt\":\"3\",\"exe\":\"2.39.5\"}\n"
	"{\"event\":\"region_enter\",\"sid\":\"s\",\"thread\":\"main\",\"time\":\"2024-01-01T00:00:00.000010Z\",\"nesting\":1,\"category\":\"c\",\"label\":\"l\"}\n";

static void test_write_errors(void **state)
{
	(void)state;
	char path[] = "/tmp/test_render_fast-XXXXXX";
	record_archive(path);
	/* A Trace2 log big enough to need several blocks. */
	size_t one = sizeof(t2_log) - 1, times = 20000;
	char *log = malloc(one * times);
	for (size_t i = 0; i < times; i++)
		memcpy(log + i * one, t2_log, one);
	void *t2 = NULL;
	size_t t2_size = 0;
	nt_trace2_import_error err;
	assert_int_equal(nt_trace2_import(log, one * times, &t2, &t2_size, &err), 0);
	free(log);
	signal(SIGPIPE, SIG_IGN);
	const render_fn fns[] = { render_text, render_chrome, render_event };
	for (int k = 0; k < 3; k++) {
		nt_reader *r = k < 2 ? nt_reader_open(path, NULL) : nt_reader_open_memory(t2, t2_size, "t2", NULL);
		assert_non_null(r);
		FILE *full = fopen("/dev/full", "w");
		if (full != NULL) {
			errno = 0;
			assert_int_equal(fns[k](r, full), -1);
			assert_int_equal(errno, ENOSPC);
			fclose(full);
		}
		int p[2];
		assert_int_equal(pipe(p), 0);
		close(p[0]);
		FILE *w = fdopen(p[1], "w");
		errno = 0;
		assert_int_equal(fns[k](r, w), -1);
		assert_int_equal(errno, EPIPE);
		fclose(w);
		nt_reader_close(r);
	}
	signal(SIGPIPE, SIG_DFL);
	free(t2);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_archive),
		cmocka_unit_test(test_write_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
