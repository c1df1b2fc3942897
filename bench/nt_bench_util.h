/* nt_bench_util.h - what the benchmark programs share: the clock they time with, medians,
 * and the loop of argument-less begin/end pairs both compare. */
#ifndef NT_BENCH_UTIL_H
#define NT_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <nanotrace/nanotrace.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v. */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Returns ns per event (two events per pair). */
static inline double pairs_loop(uint64_t pairs)
{
	uint64_t t0 = now_ns();
	for (uint64_t i = 0; i < pairs; i++) {
		NT_BEGIN("bench", "pair");
		NT_END("bench", "pair");
	}
	return (double)(now_ns() - t0) / (double)(2 * pairs);
}

#endif /* NT_BENCH_UTIL_H */
