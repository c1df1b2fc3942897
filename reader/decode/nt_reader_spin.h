/* nt_reader_spin.h - what the reader's helpers (nt_reader_ahead.c, nt_reader_pipe.c) wait
 * with when the other thread is a few microseconds away: a bounded spin, checked against
 * the monotonic clock every few dozen turns. Not installed. */
#ifndef NT_READER_SPIN_H
#define NT_READER_SPIN_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds: a vDSO call, about 20 ns. */
static inline uint64_t nt_spin_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One turn of a spin: tells the CPU (and a hyperthread sibling) that this one waits. */
static inline void nt_spin_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

#endif /* NT_READER_SPIN_H */
