/* nt_clock.c - clock selection and TSC calibration. */
#define _GNU_SOURCE
#include "nt_clock.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if NT_HAVE_TSC
#include <cpuid.h>
#endif

#include "nt_internal.h" /* nt_env_clock_choice, nt_env_warn, nt_env_shown */

int nt_clock_use_tsc_;
int nt_clock_calibration_skew_pct_;

int nt_clock_tsc_invariant(void)
{
#if NT_HAVE_TSC
	unsigned a, b, c, d;
	/* unsigned in gcc's <cpuid.h>, int in clang's: compared as unsigned for both */
	if ((unsigned)__get_cpuid_max(0x80000000u, NULL) < 0x80000007u)
		return 0;
	__cpuid(0x80000007u, a, b, c, d);
	(void)a, (void)b, (void)c;
	return (d >> 8) & 1u;
#else
	return 0;
#endif
}

void nt_clock_pair_now(nt_clock_pair *out)
{
	uint64_t best = UINT64_MAX;
	/* Bracket the realtime read with two tick/monotonic reads and keep the midpoint, so the
	 * pair is off by at most half the bracket. A preemption inside the bracket would make
	 * that milliseconds, and the reader's rate comes from two pairs: keep the tightest of a
	 * few tries. */
	for (int try = 0; try < 4; try++) {
		struct timespec rt;
		uint64_t t0 = nt_clock_ticks();
		uint64_t m0 = nt_clock_monotonic_ns();
		clock_gettime(CLOCK_REALTIME, &rt);
		uint64_t m1 = nt_clock_monotonic_ns();
		uint64_t t1 = nt_clock_ticks();
		if (try > 0 && t1 - t0 >= best)
			continue;
		best = t1 - t0;
		out->ticks = t0 + (t1 - t0) / 2;
		out->monotonic_ns = m0 + (m1 - m0) / 2;
		out->realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	}
}

uint64_t nt_clock_refine_rate(const nt_clock_pair *a, const nt_clock_pair *b, uint64_t fallback)
{
	if (!nt_clock_use_tsc_)
		return 1000000000u;
	if (b->monotonic_ns <= a->monotonic_ns || b->ticks <= a->ticks)
		return fallback;
	uint64_t dns = b->monotonic_ns - a->monotonic_ns;
	if (dns < 50000000u)
		return fallback;
	return (uint64_t)((unsigned __int128)(b->ticks - a->ticks) * 1000000000u / dns);
}

int nt_clock_setup(int choice, uint64_t *ticks_per_second)
{
	int want_tsc;
	const char *env = choice == NT_CLOCK_AUTO ? secure_getenv("NANOTRACE_CLOCK") : NULL;
	if (env != NULL && env[0] != '\0') {
		int from_env = nt_env_clock_choice(env);
		char shown[NT_ENV_SHOWN_MAX];
		if (from_env < 0) /* no caller to tell: one line, and the default */
			nt_env_warn("NANOTRACE_CLOCK='%s' is not auto, monotonic or tsc; using auto",
				    nt_env_shown(env, shown));
		else
			choice = from_env;
	}
	if (choice == 2 && !nt_clock_tsc_invariant())
		return -1;
	want_tsc = choice == 2 || (choice == 0 && nt_clock_tsc_invariant());
	nt_clock_use_tsc_ = want_tsc;
	if (!want_tsc) {
		*ticks_per_second = 1000000000u;
		return 0;
	}
	/* Calibrate over ~2 ms: long enough for a 0.1% first estimate; nt_finish() refines the
	 * rate from the start and finish pairs, which are usually much further apart. */
	nt_clock_pair a, b;
	nt_clock_pair_now(&a);
	do
		nt_clock_pair_now(&b);
	while (b.monotonic_ns - a.monotonic_ns < 2000000u);
	*ticks_per_second =
		(uint64_t)((unsigned __int128)(b.ticks - a.ticks) * 1000000000u *
			   (unsigned)(100 + nt_clock_calibration_skew_pct_) / 100u /
			   (b.monotonic_ns - a.monotonic_ns));
	return 0;
}
