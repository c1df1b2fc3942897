/* nt_term_escape.h - a string from a file or a peer, made safe to show on a terminal.
 *
 * A crafted archive, bundle or provider name may hold bytes that a terminal obeys rather than
 * shows: ESC starting an escape sequence, BEL, CR and LF rewriting what the user reads, and
 * the C1 controls (U+0080-U+009F), which a terminal in UTF-8 mode obeys when encoded as two
 * bytes (0xC2 0x80-0x9F) and one in an 8-bit mode as a single raw byte (0x9B is CSI). As
 * SECURITY.md promises, each of them is shown as '?':
 *   - C0 control bytes (0x00-0x1F) and DEL (0x7F): one '?' each;
 *   - a UTF-8-encoded C1 code point (0xC2 0x80 .. 0xC2 0x9F): one '?' for the two bytes;
 *   - a raw byte 0x80-0x9F that is not part of a valid UTF-8 sequence: one '?'.
 * Valid UTF-8 of every other code point passes unchanged; other bytes that are not valid
 * UTF-8 (0xA0-0xFF alone) pass too: no terminal takes them for a control.
 *
 * Header-only (static inline), with no dependency, so the reader's tools, the manager and
 * its log share this one definition. */
#ifndef NT_TERM_ESCAPE_H
#define NT_TERM_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence of two bytes or more at s (n bytes available): 2-4,
 * or 0 when s does not start one (overlong forms, surrogates and code points above
 * U+10FFFF are not valid). */
static inline size_t nt_term_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0; /* overlong below */
		else if (c == 0xED)
			hi = 0x9F; /* surrogates above */
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		return 0;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return len;
}

/* Writes src (len bytes, NUL bytes included as controls) to dst as the terminal may show
 * it, cut to cap - 1 bytes and NUL-terminated (nothing is written when cap is 0); returns
 * the bytes written, without the NUL. The result is never longer than src, and dst may be
 * src itself (escaping in place), so cap = len + 1 always holds all of it. A cut never
 * splits a UTF-8 sequence. */
static inline size_t nt_term_escape(char *dst, size_t cap, const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t i = 0, o = 0;
	if (cap == 0)
		return 0;
	while (i < len) {
		unsigned char c = s[i];
		size_t take = 1;
		int bad = 0;
		if (c < 0x20 || c == 0x7F) {
			bad = 1;
		} else if (c >= 0x80) {
			size_t u = nt_term_utf8_len(s + i, len - i);
			if (u == 0)
				bad = c <= 0x9F; /* a raw C1 byte */
			else if (c == 0xC2 && s[i + 1] <= 0x9F)
				bad = 1, take = 2; /* U+0080-U+009F */
			else
				take = u;
		}
		size_t out = bad ? 1 : take;
		if (o + out > cap - 1)
			break;
		if (bad)
			dst[o] = '?';
		else
			for (size_t k = 0; k < take; k++) /* forwards: safe when dst == src */
				dst[o + k] = (char)s[i + k];
		o += out;
		i += take;
	}
	dst[o] = '\0';
	return o;
}

/* The same of a NUL-terminated src; returns dst, for a printf argument. */
static inline const char *nt_term_escape_str(char *dst, size_t cap, const char *src)
{
	size_t len = 0;
	while (src[len] != '\0')
		len++;
	nt_term_escape(dst, cap, src, len);
	return dst;
}

#endif /* NT_TERM_ESCAPE_H */
