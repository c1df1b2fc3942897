/*
 * test_render_lines.c - a long list of lines formatted on two threads
 * (reader/render/nt_render_lines.c; linked from the static library, it is not exported)
 * gives the bytes one thread gives, in order; and when the helper's memory runs out in the
 * middle of its part (realloc wrapped to fail, here once at its first large growth), its
 * part is formatted again by the caller: the output is still exactly one thread's, never a
 * part cut short or bytes read from past a buffer (glibc took the memory stream's -1 as
 * (size_t)-1 bytes written and copied 64 KiB from past the caller's buffer into the
 * output, reporting no error).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/nt_cmocka.h"
#include "reader/render/nt_render_lines.h"

void *__real_realloc(void *p, size_t n);
static int fail_next_large; /* the next realloc past 256 KiB fails, once */
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
	if (n > 256 * 1024 && __atomic_exchange_n(&fail_next_large, 0, __ATOMIC_ACQ_REL))
		return NULL;
	return __real_realloc(p, n);
}

static void line(nt_out *o, uint32_t i, const void *ctx)
{
	(void)ctx;
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"
				      "abcdefghijklmnopqrstuvwxyzabcdefghijklmn";
	nt_out_printf(o, "  line %u %.*s\n", i, (int)(i % 90), letters);
}

/* The lines [0, n) as nt_render_lines writes them, with NANOTRACE_READER_AHEAD=`ahead`. */
static char *rendered(uint32_t n, const char *ahead, size_t *len)
{
	setenv("NANOTRACE_READER_AHEAD", ahead, 1);
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	assert_non_null(f);
	nt_out o;
	nt_out_init(&o, f);
	nt_render_lines(&o, n, line, NULL);
	assert_int_equal(nt_out_flush(&o), 0);
	assert_int_equal(fclose(f), 0);
	unsetenv("NANOTRACE_READER_AHEAD");
	return buf;
}

static void check_same(uint32_t n, int fail)
{
	size_t one_len, two_len;
	char *one = rendered(n, "off", &one_len);
	fail_next_large = fail;
	char *two = rendered(n, "2", &two_len);
	if (fail)
		assert_int_equal(fail_next_large, 0); /* the helper's growth did fail */
	fail_next_large = 0;
	assert_int_equal(two_len, one_len);
	assert_memory_equal(two, one, one_len);
	free(one);
	free(two);
}

static void two_threads_write_one_threads_bytes(void **state)
{
	(void)state;
	for (uint32_t n = 2; n < 40; n++)
		check_same(n, 0);
	check_same(20000, 0);
}

/* 20,000 lines: the helper's part (about 0.6 MB) outgrows its first 256 KiB. */
static void helper_out_of_memory_is_redone_by_the_caller(void **state)
{
	(void)state;
	check_same(20000, 1);
	check_same(60000, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_threads_write_one_threads_bytes),
		cmocka_unit_test(helper_out_of_memory_is_redone_by_the_caller),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
