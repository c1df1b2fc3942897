/* nt_bench_shapes.h - the event shapes issue 14 compares, written by nanotrace and (when
 * built with lttng-ust: NT_BENCH_HAVE_LTTNG) by LTTng-UST through nt_bench_lttng_tp.h,
 * with the same information in each event:
 *   zone    an argument-less begin/end pair (2 events)
 *   int2    an instant with two int64 (1 event)
 *   str     an instant with one 24-byte string (1 event)
 *   mixed   BEGIN + an instant with two int64 + END (3 events): the "mixed shape"
 * and the floor (nt_bench_floor.h), one record per event. Each loop returns ns per event. */
#ifndef NT_BENCH_SHAPES_H
#define NT_BENCH_SHAPES_H

#include <stdint.h>

#include <nanotrace/nanotrace.h>
#include "nt_bench_floor.h"
#include "nt_bench_util.h"
#ifdef NT_BENCH_HAVE_LTTNG
#include "nt_bench_lttng_tp.h"
#endif

typedef enum { SHAPE_ZONE, SHAPE_INT2, SHAPE_STR, SHAPE_MIXED, SHAPE_COUNT } nt_bench_shape;
typedef enum { SUBJECT_FLOOR, SUBJECT_NANOTRACE, SUBJECT_LTTNG, SUBJECT_COUNT } nt_bench_subject;

__attribute__((unused)) static const char *const nt_bench_shape_names[SHAPE_COUNT] = { "zone", "int2", "str", "mixed" };
__attribute__((unused)) static const unsigned nt_bench_shape_events[SHAPE_COUNT] = { 2, 1, 1, 3 };
__attribute__((unused)) static const char *const nt_bench_subject_names[SUBJECT_COUNT] = { "floor", "nanotrace", "lttng" };

#define NT_BENCH_STRING "a 24-byte string payload" /* 24 characters */

/* One timed loop per shape, so the shape is not a branch inside the measured loop. */
#define NT_BENCH_LOOP(name, body, per_iteration)                                       \
	static inline double name(uint64_t iterations)                                  \
	{                                                                               \
		uint64_t t0 = now_ns();                                                 \
		for (uint64_t i = 0; i < iterations; i++) {                             \
			body;                                                           \
		}                                                                       \
		return (double)(now_ns() - t0) / (double)(iterations * (per_iteration)); \
	}

NT_BENCH_LOOP(nt_zone_loop, NT_BEGIN("bench", "zone"); NT_END("bench", "zone"), 2)
NT_BENCH_LOOP(nt_int2_loop,
	      NT_INSTANT("bench", "point", NT_I64("x", (int64_t)i), NT_I64("y", (int64_t)(i * 7))), 1)
NT_BENCH_LOOP(nt_str_loop, NT_INSTANT("bench", "message", NT_STR("s", NT_BENCH_STRING)), 1)
NT_BENCH_LOOP(nt_mixed_loop, NT_BEGIN("bench", "iteration");
	      NT_INSTANT("bench", "point", NT_I64("x", (int64_t)i), NT_I64("y", (int64_t)(i * 7)));
	      NT_END("bench", "iteration"), 3)

__attribute__((unused)) static double (*const nt_shape_loops[SHAPE_COUNT])(uint64_t) = {
	nt_zone_loop, nt_int2_loop, nt_str_loop, nt_mixed_loop
};

#ifdef NT_BENCH_HAVE_LTTNG
NT_BENCH_LOOP(lttng_zone_loop, lttng_ust_tracepoint(nt_bench, begin);
	      lttng_ust_tracepoint(nt_bench, end), 2)
NT_BENCH_LOOP(lttng_int2_loop, lttng_ust_tracepoint(nt_bench, point, (int64_t)i, (int64_t)(i * 7)), 1)
NT_BENCH_LOOP(lttng_str_loop, lttng_ust_tracepoint(nt_bench, message, NT_BENCH_STRING), 1)
NT_BENCH_LOOP(lttng_mixed_loop, lttng_ust_tracepoint(nt_bench, begin);
	      lttng_ust_tracepoint(nt_bench, point, (int64_t)i, (int64_t)(i * 7));
	      lttng_ust_tracepoint(nt_bench, end), 3)

__attribute__((unused)) static double (*const lttng_shape_loops[SHAPE_COUNT])(uint64_t) = {
	lttng_zone_loop, lttng_int2_loop, lttng_str_loop, lttng_mixed_loop
};

/* Nonzero when the session daemon enabled every event of the provider in this process (the
 * process registered with it before main()). */
static inline int lttng_events_enabled(void)
{
	return lttng_ust_tracepoint_enabled(nt_bench, begin) &&
	       lttng_ust_tracepoint_enabled(nt_bench, end) &&
	       lttng_ust_tracepoint_enabled(nt_bench, point) &&
	       lttng_ust_tracepoint_enabled(nt_bench, message);
}
#endif

/* `events` events of `shape` written by `subject` (the floor writes one record per event).
 * Returns ns per event, or -1 for a subject this build lacks. */
static inline double subject_loop(nt_bench_subject subject, nt_bench_shape shape, uint64_t events)
{
	uint64_t iterations = events / nt_bench_shape_events[shape];
	if (iterations == 0)
		iterations = 1;
	switch (subject) {
	case SUBJECT_FLOOR:
		return floor_loop(events);
	case SUBJECT_NANOTRACE:
		return nt_shape_loops[shape](iterations);
	default:
#ifdef NT_BENCH_HAVE_LTTNG
		return lttng_shape_loops[shape](iterations);
#else
		return -1;
#endif
	}
}

#endif /* NT_BENCH_SHAPES_H */
