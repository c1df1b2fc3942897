/*
 * nt_clock.h - the event clock: raw TSC where it is invariant, else CLOCK_MONOTONIC.
 *
 * The hot path reads ticks with nt_clock_ticks(); converting ticks to time is the reader's
 * job, from ticks_per_second and the (ticks, monotonic, realtime) pairs that nt_clock_pair()
 * takes at start and finish.
 */
#ifndef NT_CLOCK_H
#define NT_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define NT_HAVE_TSC 1
#else
#define NT_HAVE_TSC 0
#endif

/* 1 when the session reads the TSC; written only by nt_start(). */
extern int nt_clock_use_tsc_;

/* Test-only (tests/support/t2_timing.c): percent added to the start-up TSC calibration, so a test
 * can prove that no recorded duration depends on that rate. 0 in every real program: the
 * shared library does not export it (libnanotrace.map), and nothing else sets it. */
extern int nt_clock_calibration_skew_pct_;

static inline uint64_t nt_clock_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t nt_clock_ticks(void)
{
#if NT_HAVE_TSC
	/* Plain rdtsc, not rdtscp or lfence;rdtsc: an event needs its own thread's order only,
	 * and the store that follows is ordered after it by the data dependency. */
	if (__builtin_expect(nt_clock_use_tsc_, 1))
		return __rdtsc();
#endif
	return nt_clock_monotonic_ns();
}

/* Both clocks read before a session has chosen one: nt_clock_snapshot_ticks() then gives
 * the reading in the session's ticks exactly, with no calibrated rate in between. */
typedef struct nt_clock_snapshot {
	uint64_t tsc, monotonic_ns;
} nt_clock_snapshot;

static inline void nt_clock_snapshot_now(nt_clock_snapshot *out)
{
#if NT_HAVE_TSC
	out->tsc = __rdtsc();
#else
	out->tsc = 0;
#endif
	out->monotonic_ns = nt_clock_monotonic_ns();
}

static inline uint64_t nt_clock_snapshot_ticks(const nt_clock_snapshot *s)
{
	return NT_HAVE_TSC && nt_clock_use_tsc_ ? s->tsc : s->monotonic_ns;
}

typedef struct nt_clock_pair {
	uint64_t ticks;
	uint64_t monotonic_ns;
	uint64_t realtime_ns;
} nt_clock_pair;

/* 1 if the CPU reports an invariant TSC (CPUID 0x80000007 EDX bit 8). */
int nt_clock_tsc_invariant(void);

/* Choose the source for a session (0: auto, 1: monotonic, 2: tsc; NANOTRACE_CLOCK overrides
 * auto) and calibrate ticks per second. Returns 0, or -1 when the TSC was demanded and is
 * not invariant. */
int nt_clock_setup(int choice, uint64_t *ticks_per_second);

/* Ticks, CLOCK_MONOTONIC and CLOCK_REALTIME read as close together as possible. */
void nt_clock_pair_now(nt_clock_pair *out);

/* Refine ticks per second from two pairs far enough apart (>= 50 ms), else keep `fallback`. */
uint64_t nt_clock_refine_rate(const nt_clock_pair *a, const nt_clock_pair *b, uint64_t fallback);

#endif /* NT_CLOCK_H */
