/* nt_out.c - the renderers' output buffer: blocks to the FILE *, numbers from a digit-pair
 * table, JSON escaping from a byte table (see nt_out.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>

#include "nt_out.h"

const char nt_digit_pairs[200] = "00010203040506070809"
				 "10111213141516171819"
				 "20212223242526272829"
				 "30313233343536373839"
				 "40414243444546474849"
				 "50515253545556575859"
				 "60616263646566676869"
				 "70717273747576777879"
				 "80818283848586878889"
				 "90919293949596979899";

void nt_out_init(nt_out *o, FILE *f)
{
	o->f = f;
	o->len = 0;
	o->failed = 0;
	o->err = 0;
}

/* n bytes to the FILE *, once: a short write marks the buffer failed. */
static void write_through(nt_out *o, const void *p, size_t n)
{
	if (o->failed || n == 0)
		return;
	errno = 0;
	if (fwrite(p, 1, n, o->f) != n) {
		o->failed = 1;
		o->err = errno ? errno : EIO;
	}
}

void nt_out_drain(nt_out *o)
{
	write_through(o, o->buf, o->len);
	o->len = 0;
}

void nt_out_bytes_slow(nt_out *o, const void *s, size_t n)
{
	nt_out_drain(o);
	if (n <= NT_OUT_CAP / 2) {
		memcpy(o->buf, s, n);
		o->len = n;
	} else {
		write_through(o, s, n);
	}
}

int nt_out_flush(nt_out *o)
{
	nt_out_drain(o);
	if (!o->failed && fflush(o->f) != 0) {
		o->failed = 1;
		o->err = errno ? errno : EIO;
	}
	if (o->failed)
		errno = o->err;
	return o->failed ? -1 : 0;
}

void nt_out_printf(nt_out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->buf + o->len, NT_OUT_CAP - o->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < NT_OUT_CAP - o->len) {
		o->len += (size_t)n;
		return;
	}
	/* Did not fit: write the block out and format again, into the buffer or a heap copy. */
	nt_out_drain(o);
	char *tmp = (size_t)n < NT_OUT_CAP ? o->buf : malloc((size_t)n + 1);
	if (tmp == NULL) {
		o->failed = 1;
		o->err = ENOMEM;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(tmp, (size_t)n + 1, fmt, ap);
	va_end(ap);
	if (tmp == o->buf) {
		o->len = (size_t)n;
	} else {
		write_through(o, tmp, (size_t)n);
		free(tmp);
	}
}

void nt_out_fill_slow(nt_out *o, char c, size_t n)
{
	while (n > 0) {
		size_t k = n < NT_OUT_ROOM_MAX ? n : NT_OUT_ROOM_MAX;
		memset(nt_out_room(o, k), c, k);
		nt_out_commit(o, k);
		n -= k;
	}
}

size_t nt_fmt_hex(char *dst, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	size_t n = 0;
	do {
		tmp[n++] = digits[v & 15];
		v >>= 4;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		dst[i] = tmp[n - 1 - i];
	return n;
}

/* Below 10^15 us (31 years) the double us / 1e6 is within 1.2e-7 of whole.frac, so "%.6f"
 * rounds it back to exactly those digits. */
#define US_EXACT_LIMIT 1000000000000000ull

size_t nt_fmt_us_as_secs(char *dst, uint64_t us)
{
	if (us < US_EXACT_LIMIT)
		return nt_fmt_fixed(dst, (int64_t)us, 1000000u, 6);
	int n = snprintf(dst, 32, "%.6f", (double)us / 1000000.0);
	return n < 0 ? 0 : (size_t)n;
}

/* ---- JSON ------------------------------------------------------------------------------- */

enum { J_PLAIN = 0, J_ESCAPE = 1, J_HIGH = 2 };

/* What each byte needs in a JSON string body. */
static const unsigned char json_class[256] = {
	[0x00 ... 0x1F] = J_ESCAPE, ['"'] = J_ESCAPE, ['\\'] = J_ESCAPE,
	[0x80 ... 0xFF] = J_HIGH,
};

/* Does any byte of the 8 in x need attention: below 0x20, '"', '\\', or (high) >= 0x80?
 * The classic "has a zero byte" tests on x ^ c and x - 0x20...: exact for the bytes that
 * matter, and a false positive only ever sends the word to the byte loop. */
static inline int word_stops(uint64_t x, uint64_t high)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
	uint64_t ctl = (x - ones * 0x20) & ~x;
	uint64_t quote = (q - ones) & ~q;
	uint64_t bs = (b - ones) & ~b;
	return ((ctl | quote | bs) & highs) != 0 || (x & high) != 0;
}

size_t nt_json_plain_prefix(const char *str, size_t n, int raw_high)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned stop = raw_high ? J_ESCAPE : J_ESCAPE | J_HIGH;
	uint64_t high = raw_high ? 0 : 0x8080808080808080ull;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x;
		memcpy(&x, s + i, 8);
		if (word_stops(x, high))
			break;
	}
	while (i < n && !(json_class[s[i]] & stop))
		i++;
	return i;
}

size_t nt_json_escape_byte(char *dst, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char named = 0;
	switch (c) {
	case '"': named = '"'; break;
	case '\\': named = '\\'; break;
	case '\n': named = 'n'; break;
	case '\t': named = 't'; break;
	case '\r': named = 'r'; break;
	case '\b': named = 'b'; break;
	case '\f': named = 'f'; break;
	default: break;
	}
	dst[0] = '\\';
	if (named) {
		dst[1] = named;
		return 2;
	}
	memcpy(dst + 1, "u00", 3);
	dst[4] = hex[c >> 4];
	dst[5] = hex[c & 15];
	return 6;
}

size_t nt_utf8_seq(const unsigned char *s, size_t n)
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

void nt_out_json_body(nt_out *o, const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t run = nt_json_plain_prefix(s + i, n - i, 0);
		nt_out_bytes(o, s + i, run);
		i += run;
		if (i == n)
			break;
		unsigned char c = (unsigned char)s[i];
		if (c < 0x80) {
			nt_out_commit(o, nt_json_escape_byte(nt_out_room(o, 6), c));
			i++;
			continue;
		}
		size_t len = nt_utf8_seq((const unsigned char *)s + i, n - i);
		if (len == 0) {
			nt_out_bytes(o, "\\ufffd", 6);
			i++;
		} else if (nt_is_utf8_c1((const unsigned char *)s + i, len)) {
			nt_out_commit(o, nt_json_escape_c1(nt_out_room(o, 6), (unsigned char)s[i + 1]));
			i += len;
		} else {
			nt_out_bytes(o, s + i, len);
			i += len;
		}
	}
}
