/*
 * nt_deadline.h - an absolute CLOCK_MONOTONIC deadline `ms` milliseconds from now, for
 * pthread_cond_timedwait on a condition whose clock is CLOCK_MONOTONIC (set with
 * pthread_condattr_setclock). Shared because the writer's registry and the trace manager's
 * saver both wait so, and neither may include the other: one definition of the carry.
 */
#ifndef NT_DEADLINE_H
#define NT_DEADLINE_H

#include <time.h>

/* `ms` (0 or more) from now on CLOCK_MONOTONIC, tv_nsec normalized below one second. */
static inline struct timespec nt_deadline_after_ms(int ms)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	return until;
}

#endif /* NT_DEADLINE_H */
