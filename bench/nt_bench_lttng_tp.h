/* nt_bench_lttng_tp.h - the LTTng-UST tracepoint provider of the peer benchmark: the same
 * event shapes nanotrace records in bench/nt_bench_shapes.h, so both tracers write the same
 * information (an event's name is its LTTng event class, as it is a nanotrace name id):
 *   begin, end     argument-less (a zone's begin and end; NT_BEGIN / NT_END)
 *   point          an instant with two int64 (NT_INSTANT with two NT_I64)
 *   message        an instant with one string (NT_INSTANT with one NT_STR)
 * Built only when meson finds lttng-ust (bench/meson.build). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER nt_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./nt_bench_lttng_tp.h"

#if !defined(NT_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define NT_BENCH_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(nt_bench, begin, LTTNG_UST_TP_ARGS(), LTTNG_UST_TP_FIELDS())
LTTNG_UST_TRACEPOINT_EVENT(nt_bench, end, LTTNG_UST_TP_ARGS(), LTTNG_UST_TP_FIELDS())

LTTNG_UST_TRACEPOINT_EVENT(nt_bench, point,
	LTTNG_UST_TP_ARGS(int64_t, x, int64_t, y),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(int64_t, x, x)
		lttng_ust_field_integer(int64_t, y, y)))

LTTNG_UST_TRACEPOINT_EVENT(nt_bench, message,
	LTTNG_UST_TP_ARGS(const char *, s),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_string(s, s)))

#endif /* NT_BENCH_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
