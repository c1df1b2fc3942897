/* nt_bench_floor.h - the floor every benchmark compares with: one read of the writer's own
 * clock plus one 16-byte store into a thread-local ring, the least any tracer that
 * timestamps events must do. Shared by nt_bench and nt_bench_peers so both measure the
 * same floor. */
#ifndef NT_BENCH_FLOOR_H
#define NT_BENCH_FLOOR_H

#include <stdint.h>

#include "nt_bench_util.h"
#include "writer/core/nt_clock.h"

#define NT_BENCH_SINK(x) __asm__ volatile("" : : "r"(x) : "memory")

typedef struct nt_bench_rec16 {
	uint64_t a, b;
} nt_bench_rec16;

#define NT_BENCH_RING_RECORDS 4096 /* 64 KiB: stays in L2 like the writer's current chunk */
static __thread nt_bench_rec16 nt_bench_ring[NT_BENCH_RING_RECORDS] __attribute__((aligned(64)));

/* Returns ns per record. */
static inline double floor_loop(uint64_t n)
{
	uint64_t t0 = now_ns();
	uint32_t j = 0;
	for (uint64_t i = 0; i < n; i++) {
		nt_bench_ring[j].a = nt_clock_ticks();
		nt_bench_ring[j].b = i;
		j = (j + 1) & (NT_BENCH_RING_RECORDS - 1);
	}
	NT_BENCH_SINK(nt_bench_ring[0].a);
	return (double)(now_ns() - t0) / (double)n;
}

#endif /* NT_BENCH_FLOOR_H */
