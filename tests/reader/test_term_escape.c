/*
 * test_term_escape.c - nt_term_escape (runtime/nt_term_escape.h), the one function that makes
 * a string from a file or a peer safe to show on a terminal: fixed cases (ESC, BEL, CR, LF,
 * DEL, UTF-8-encoded C1, raw 0x9b, valid UTF-8 of every length), then a million random
 * strings against a reference written independently (code points decoded by their bit
 * patterns): the same output, never longer than the input, idempotent, the same in place,
 * cut without splitting a sequence.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/nt_cmocka.h"
#include "runtime/nt_term_escape.h"

static uint64_t state = 0x243f6a8885a308d3u;

static uint64_t next(void) /* xorshift64*: reproducible */
{
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 0x2545f4914f6cdd1du;
}

static void check_case(const char *in, size_t len, const char *want)
{
	char out[256];
	size_t n = nt_term_escape(out, sizeof(out), in, len);
	assert_msg(n == strlen(want) && memcmp(out, want, n + 1) == 0,
		   "escaped as '%s', want '%s'", out, want);
}

static void fixed_cases(void **state_)
{
	(void)state_;
	check_case("plain name", 10, "plain name");
	check_case("\x1b[2J\x07" "a\rb\nc", 10, "?[2J?a?b?c");
	check_case("x\x7fy", 3, "x?y");
	check_case("nul\0in", 6, "nul?in");
	check_case("\xc2\x9b" "31m", 5, "?31m");          /* CSI as UTF-8 */
	check_case("\xc2\x80\xc2\x9f", 4, "??");          /* the C1 range's ends */
	check_case("\x9b" "31m", 4, "?31m");              /* CSI as one raw byte */
	check_case("\x80\x9f", 2, "??");
	check_case("\xc2\xa0\xc3\xa9", 4, "\xc2\xa0\xc3\xa9"); /* U+00A0, e acute: shown */
	check_case("\xe2\x82\xac \xf0\x9f\x98\x80", 8, "\xe2\x82\xac \xf0\x9f\x98\x80");
	check_case("\xe2\x82\x9b", 3, "\xe2\x82\x9b");    /* U+209B: 0x9b as a continuation */
	check_case("\xe2\x9b", 2, "\xe2?");               /* a cut sequence: 0x9b is raw */
	check_case("\xc0\x9b", 2, "\xc0?");               /* overlong: not UTF-8 */
	check_case("\xed\xa0\x9b", 3, "\xed\xa0?");       /* a surrogate: not UTF-8 */
	check_case("\xff\xa0", 2, "\xff\xa0");            /* not UTF-8, but no control */
}

static void cuts_and_in_place(void **state_)
{
	(void)state_;
	char out[8];
	assert_int_equal(nt_term_escape(out, 0, "abc", 3), 0);
	assert_int_equal(nt_term_escape(out, 1, "abc", 3), 0);
	assert_string_equal(out, "");
	assert_int_equal(nt_term_escape(out, 3, "a\xc3\xa9", 3), 1); /* never half of e acute */
	assert_string_equal(out, "a");
	assert_int_equal(nt_term_escape(out, 4, "a\xc3\xa9", 3), 3);
	char buf[] = "a\x1b\xc2\x9b" "b";
	assert_int_equal(nt_term_escape(buf, sizeof(buf), buf, sizeof(buf) - 1), 4);
	assert_string_equal(buf, "a??b");
}

/* The reference: decode one code point by its bit pattern; 0 when the bytes at s are no
 * valid UTF-8 sequence (overlong, surrogate, above U+10FFFF, cut, bad continuation). */
static size_t ref_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3
		     : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
	if (len == 0 || len > n)
		return 0;
	uint32_t v = len == 1 ? s[0] : (uint32_t)(s[0] & (0x7F >> len));
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3F);
	}
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (v < min[len] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return len;
}

static size_t ref_escape(char *dst, const unsigned char *s, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len = ref_decode(s + i, n - i, &cp);
		if (len == 0) {
			dst[o++] = s[i] >= 0x80 && s[i] <= 0x9F ? '?' : (char)s[i];
			i++;
		} else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
			dst[o++] = '?';
			i += len;
		} else {
			memcpy(dst + o, s + i, len);
			o += len;
			i += len;
		}
	}
	return o;
}

/* Bytes that make the interesting cases likely: controls, lead and continuation bytes. */
static unsigned char pick_byte(void)
{
	static const unsigned char hot[] = { 0x00, 0x07, 0x0a, 0x0d, 0x1b, 0x7f, 0x80, 0x9b, 0x9f,
					     0xa0, 0xbf, 0xc0, 0xc2, 0xc3, 0xdf, 0xe0, 0xe2, 0xed,
					     0xef, 0xf0, 0xf4, 0xf5, 0xff, 'a', '[' };
	return next() % 3 ? hot[next() % sizeof(hot)] : (unsigned char)next();
}

static void random_strings_match_the_reference(void **state_)
{
	(void)state_;
	unsigned char in[64];
	char out[80], want[80], again[80], inplace[80];
	for (unsigned t = 0; t < 1000000; t++) {
		size_t n = next() % sizeof(in);
		for (size_t i = 0; i < n; i++)
			in[i] = pick_byte();
		size_t len = nt_term_escape(out, sizeof(out), (const char *)in, n);
		size_t wlen = ref_escape(want, in, n);
		assert_msg(len == wlen && memcmp(out, want, len) == 0 && out[len] == '\0',
			   "case %u: differs from the reference", t);
		assert_true(len <= n);
		for (size_t i = 0; i < len; i++)
			assert_true((unsigned char)out[i] >= 0x20 && out[i] != 0x7f);
		assert_int_equal(nt_term_escape(again, sizeof(again), out, len), len);
		assert_memory_equal(again, out, len);
		memcpy(inplace, in, n);
		assert_int_equal(nt_term_escape(inplace, n + 1, inplace, n), len);
		assert_memory_equal(inplace, out, len);
		size_t cap = 1 + next() % (n + 1); /* a cut: a prefix of the whole, sequences whole */
		size_t cut = nt_term_escape(again, cap, (const char *)in, n);
		assert_true(cut <= cap - 1 && cut <= len && memcmp(again, out, cut) == 0);
		assert_true(cut == len || cap - 1 - cut < 4);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fixed_cases),
		cmocka_unit_test(cuts_and_in_place),
		cmocka_unit_test(random_strings_match_the_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
