/* nt_bench_lttng_tp.c - instantiates the LTTng-UST probes of nt_bench_lttng_tp.h (linked
 * into nt_bench_peers only when meson finds lttng-ust). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "nt_bench_lttng_tp.h"
