/*
 * test_clock_conv.c - the reader's per-event clock conversion (nt_ticks_to_ns and
 * nt_ns_to_wall in reader/decode/nt_reader_internal.h, a multiply and one divq) gives exactly
 * what the exported definitions nt_reader_ticks_to_ns() and nt_reader_ns_to_wall() give, for
 * realistic archives and for hostile header values (zero rates, starts past INT64_MAX, ticks
 * before the start or 2^63 after it, products past 2^128 / 2^64).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/nt_cmocka.h"
#include "reader/decode/nt_reader_internal.h"

static uint64_t state = 0x9e3779b97f4a7c15u;

static uint64_t next(void) /* xorshift64*: reproducible */
{
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 0x2545f4914f6cdd1du;
}

/* A value drawn from realistic magnitudes and from the edges a lying header may hold. */
static uint64_t pick(uint64_t typical)
{
	static const uint64_t edges[] = { 0, 1, 2, INT64_MAX - 1, INT64_MAX, (uint64_t)INT64_MAX + 1,
					  UINT64_MAX - 1, UINT64_MAX, 1000000000u, 1u << 31 };
	switch (next() % 6) {
	case 0: return edges[next() % (sizeof(edges) / sizeof(edges[0]))];
	case 1: return next();
	case 2: return next() >> (next() % 64);
	default: return typical + (next() % 1000000u) - 500000u;
	}
}

static void check_archive(const nt_archive_info *in, unsigned ticks_tries)
{
	nt_reader r;
	memset(&r, 0, sizeof(r));
	r.info = *in;
	nt_reader_prepare_clock(&r);
	for (unsigned k = 0; k < ticks_tries; k++) {
		uint64_t ticks = k % 3 == 0 ? pick(in->start_ticks)
					    : in->start_ticks + (next() >> (next() % 64));
		int64_t want = nt_reader_ticks_to_ns(&r, ticks), got = nt_ticks_to_ns(&r, ticks);
		assert_msg(got == want,
			   "ticks %llu (start %llu, tps %llu, finish %llu/%llu ns %llu): %lld, not %lld",
			   (unsigned long long)ticks, (unsigned long long)in->start_ticks,
			   (unsigned long long)in->ticks_per_second, (unsigned long long)in->finish_ticks,
			   (unsigned long long)in->start_monotonic_ns,
			   (unsigned long long)in->finish_monotonic_ns, (long long)got, (long long)want);
		int64_t mono = (int64_t)pick((uint64_t)want);
		assert_int_equal(nt_ns_to_wall(&r, mono), nt_reader_ns_to_wall(&r, mono));
	}
}

static void fast_conversion_equals_the_definition(void **state_)
{
	(void)state_;
	for (unsigned a = 0; a < 200000; a++) {
		nt_archive_info in;
		memset(&in, 0, sizeof(in));
		in.clock_source = next() % 8 == 0 ? NT_CLOCK_SOURCE_MONOTONIC : NT_CLOCK_SOURCE_TSC;
		do /* the header decoder refuses a rate of 0 */
			in.ticks_per_second = pick(2900000000u);
		while (in.ticks_per_second == 0);
		in.start_ticks = pick(5000000000000u);
		in.start_monotonic_ns = pick(1700000000000u);
		in.start_realtime_ns = pick(1763900000000000000u);
		int finished = next() % 4 != 0;
		in.finish_ticks = finished ? in.start_ticks + pick(290000000000u) : 0;
		in.finish_monotonic_ns = finished ? in.start_monotonic_ns + pick(100000000000u) : 0;
		check_archive(&in, 10);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fast_conversion_equals_the_definition),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
