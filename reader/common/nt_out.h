/*
 * nt_out.h - the renderers' output buffer and number formatting (not installed).
 *
 * Renderers write millions of short fields; one stdio call per field (a lock, a format
 * string parsed, a locale consulted) cost more than the decode itself. Here a field is a
 * few stores into a block that goes to the FILE * in one fwrite when full, and numbers are
 * formatted two digits at a time from a table. The output is byte for byte what the printf
 * formats named beside each function give (tests/reader/test_render_fast.c checks every
 * one of them against snprintf, edge values included).
 *
 * Write errors are sticky: the first failed fwrite (ENOSPC, EPIPE, EIO...) sets `failed`
 * and `err` (errno of the failure), later output is dropped, and the renderer stops its
 * visit and returns -1 with errno = err, so nothing is lost silently and no time is spent
 * rendering into a dead file.
 */
#ifndef NT_OUT_H
#define NT_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/nt_term_escape.h"

#define NT_OUT_CAP (64u * 1024u)
/* The most bytes one nt_out_room() may ask for. */
#define NT_OUT_ROOM_MAX 256u

typedef struct nt_out {
	FILE *f;
	size_t len;
	int failed; /* a write failed: output after it is dropped */
	int err;    /* errno of that failure */
	char buf[NT_OUT_CAP];
} nt_out;

/* Start writing to f (nothing is written until a block fills or nt_out_flush). */
void nt_out_init(nt_out *o, FILE *f);
/* Write what is buffered to the FILE * (and fflush it); 0, or -1 once any write failed
 * (errno is then set to the failure's). */
int nt_out_flush(nt_out *o);
/* Slow paths: write the block out; n bytes straight through. */
void nt_out_drain(nt_out *o);
void nt_out_bytes_slow(nt_out *o, const void *s, size_t n);
/* printf into the buffer, for rare lines (gaps, damage): one vsnprintf. */
void nt_out_printf(nt_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* n (<= NT_OUT_ROOM_MAX) writable bytes at the end of the buffer; commit with
 * nt_out_commit(o, used). Cost: one comparison unless the block is full. */
static inline char *nt_out_room(nt_out *o, size_t n)
{
	if (__builtin_expect(NT_OUT_CAP - o->len < n, 0))
		nt_out_drain(o);
	return o->buf + o->len;
}

static inline void nt_out_commit(nt_out *o, size_t used)
{
	o->len += used;
}

static inline void nt_out_bytes(nt_out *o, const void *s, size_t n)
{
	if (__builtin_expect(n <= NT_OUT_CAP - o->len, 1)) {
		memcpy(o->buf + o->len, s, n);
		o->len += n;
	} else {
		nt_out_bytes_slow(o, s, n);
	}
}

static inline void nt_out_str(nt_out *o, const char *s)
{
	nt_out_bytes(o, s, strlen(s));
}

static inline void nt_out_char(nt_out *o, char c)
{
	*nt_out_room(o, 1) = c;
	o->len++;
}

/* Names come from the archive: in a format read on a terminal, a control (ESC of an escape
 * sequence among them, C1 controls too) is shown as '?', so an archive cannot drive the
 * terminal (runtime/nt_term_escape.h). In place: p holds n bytes and room for one more (the
 * NUL written after); returns the new length, at most n. */
static inline size_t nt_unctrl(char *p, size_t n)
{
	return nt_term_escape(p, n + 1, p, n);
}

/* A NUL-terminated copy of s in dst (cap bytes, cut to fit), controls shown as '?': for
 * names printed with stdio. Returns dst. */
static inline const char *nt_unctrl_copy(char *dst, size_t cap, const char *s)
{
	nt_term_escape(dst, cap, s, strlen(s));
	return dst;
}

/* A name: its bytes, controls shown as '?'. */
static inline void nt_out_name(nt_out *o, const char *s)
{
	size_t n = strlen(s);
	if (n < NT_OUT_ROOM_MAX) {
		char *p = nt_out_room(o, n + 1);
		memcpy(p, s, n);
		nt_out_commit(o, nt_unctrl(p, n));
		return;
	}
	char part[257];
	for (size_t i = 0; i < n;) { /* long names: rare; pieces cut between sequences */
		size_t take = n - i < 256 ? n - i : 256;
		while (take < n - i && take > 252 && ((unsigned char)s[i + take] & 0xC0) == 0x80)
			take--;
		nt_out_bytes(o, part, nt_term_escape(part, sizeof(part), s + i, take));
		i += take;
	}
}

/* n copies of c (padding). */
void nt_out_fill_slow(nt_out *o, char c, size_t n);
static inline void nt_out_fill(nt_out *o, char c, size_t n)
{
	if (__builtin_expect(n <= NT_OUT_ROOM_MAX, 1)) {
		memset(nt_out_room(o, n), c, n);
		o->len += n;
	} else {
		nt_out_fill_slow(o, c, n);
	}
}

/* ---- numbers into a caller's buffer: each returns the length, writes no NUL ------------ */

/* "00".."99": digit pairs, so a number costs one division per two digits. */
extern const char nt_digit_pairs[200];

#define NT_FMT_U64_MAX 20 /* digits of UINT64_MAX */

/* "%" PRIu64. */
static inline size_t nt_fmt_u64(char *dst, uint64_t v)
{
	char tmp[NT_FMT_U64_MAX];
	char *p = tmp + sizeof(tmp);
	while (v >= 100) {
		p -= 2;
		memcpy(p, nt_digit_pairs + (v % 100) * 2, 2);
		v /= 100;
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, nt_digit_pairs + v * 2, 2);
	} else {
		*--p = (char)('0' + v);
	}
	size_t n = (size_t)(tmp + sizeof(tmp) - p);
	memcpy(dst, p, n);
	return n;
}

/* "%" PRId64 (21 bytes at most). */
static inline size_t nt_fmt_i64(char *dst, int64_t v)
{
	if (v >= 0)
		return nt_fmt_u64(dst, (uint64_t)v);
	dst[0] = '-';
	return 1 + nt_fmt_u64(dst + 1, (uint64_t)0 - (uint64_t)v);
}

/* "%0<width>" PRIu64 for v < 10^width (width <= 19): the fraction of a fixed-point number. */
static inline size_t nt_fmt_u64_zero_padded(char *dst, uint64_t v, unsigned width)
{
	for (unsigned i = width; i >= 2; i -= 2) {
		memcpy(dst + i - 2, nt_digit_pairs + (v % 100) * 2, 2);
		v /= 100;
	}
	if (width & 1)
		dst[0] = (char)('0' + v % 10);
	return width;
}

/* "%" PRIx64 (16 bytes at most). */
size_t nt_fmt_hex(char *dst, uint64_t v);

/* A signed count of units as "[-]whole.frac" with `digits` decimals of `unit` = 10^digits:
 * "%s%" PRIu64 ".%0<digits>" PRIu64 of |v| / unit and |v| % unit (INT64_MIN included).
 * 42 bytes at most. */
static inline size_t nt_fmt_fixed(char *dst, int64_t v, uint64_t unit, unsigned digits)
{
	uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	size_t n = 0;
	if (v < 0)
		dst[n++] = '-';
	n += nt_fmt_u64(dst + n, a / unit);
	dst[n++] = '.';
	return n + nt_fmt_u64_zero_padded(dst + n, a % unit, digits);
}

/* (double)us / 1e6 as "%.6f" prints it: exact integer arithmetic, which is the same digits
 * while us < 2^53 (the double is then within 2^-53 relative of whole.frac, far from any
 * rounding boundary); larger values go through snprintf. 32 bytes at most. */
size_t nt_fmt_us_as_secs(char *dst, uint64_t us);

/* ---- numbers straight into the buffer ------------------------------------------------- */

static inline void nt_out_u64(nt_out *o, uint64_t v)
{
	nt_out_commit(o, nt_fmt_u64(nt_out_room(o, NT_FMT_U64_MAX), v));
}

static inline void nt_out_i64(nt_out *o, int64_t v)
{
	nt_out_commit(o, nt_fmt_i64(nt_out_room(o, NT_FMT_U64_MAX + 1), v));
}

/* ---- JSON strings ----------------------------------------------------------------------- */

/* Length of the prefix of s[0..n) that a JSON string body holds as it is: no quote,
 * backslash or control character, and (unless raw_high) no byte >= 0x80. A table lookup
 * per byte. */
size_t nt_json_plain_prefix(const char *s, size_t n, int raw_high);
/* The escape of a byte the prefix stopped at (quote, backslash, control character):
 * "\\n" style or "\\u00XX"; returns its length (2 or 6). */
size_t nt_json_escape_byte(char *dst, unsigned char c);

/* Length of the valid UTF-8 sequence at s (of n >= 1 bytes), or 0 if it is not valid
 * (overlong, surrogate, above U+10FFFF, cut short). */
size_t nt_utf8_seq(const unsigned char *s, size_t n);
/* A C1 control (U+0080-U+009F) as UTF-8: valid JSON raw, but a terminal obeys it (0xC2
 * 0x9B is CSI), so JSON strings carry it escaped ("\\u009b"), and JSON piped to a terminal
 * cannot drive it. `s` is a valid sequence of `len` bytes. */
static inline int nt_is_utf8_c1(const unsigned char *s, size_t len)
{
	return len == 2 && s[0] == 0xC2 && s[1] <= 0x9F;
}
/* Its escape, from its second byte: 6 bytes. */
static inline size_t nt_json_escape_c1(char *dst, unsigned char second)
{
	return nt_json_escape_byte(dst, second);
}
/* The body of a JSON string as nt_json_write_string writes it: escapes (C1 controls
 * included), and U+FFFD for each byte that does not start a valid UTF-8 sequence. */
void nt_out_json_body(nt_out *o, const char *s, size_t n);
/* The same, quoted. */
static inline void nt_out_json_str(nt_out *o, const char *s, size_t n)
{
	nt_out_char(o, '"');
	nt_out_json_body(o, s, n);
	nt_out_char(o, '"');
}

#endif /* NT_OUT_H */
