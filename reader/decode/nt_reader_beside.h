/* nt_reader_beside.h - whether a reader's helper thread runs beside the thread it helps or
 * only instead of it (nt_reader_pipe.c, nt_reader_ahead.c). Not installed.
 *
 * A helper pays only on a CPU of its own. Where it shares the one the consumer runs on (the
 * process's affinity, or a host that runs the guest's two CPUs on one core), its results
 * still come in time, but each of its wake-ups takes the CPU from the consumer: with the
 * process held to one CPU, 1,150 switches made a --stats of 20,000 sections 12 ms slower
 * than one thread (40 ms), and a single archive's 1.6 to 2.2 ms slower (15 ms).
 *
 * The test, over an interval of NT_BESIDE_NS in which the consumer never slept (no
 * voluntary switch: a consumer waiting for its output is not judged): the helper is not
 * beside the consumer when the consumer had less than 90 % of the time on a CPU and the
 * process, all its threads together, less than 110 %: the helper's CPU time came out of
 * the consumer's. A host that runs the guest's CPUs on one core shows as the same, since
 * the time it takes from a thread is not counted as the thread's (steal time). With a CPU
 * of its own the helper leaves the consumer its time; where other programs take CPUs from
 * both, the process still has more than one. NT_BESIDE_STRIKES such intervals in a row
 * say "stop the helper". */
#ifndef NT_READER_BESIDE_H
#define NT_READER_BESIDE_H

#include <stdint.h> /* (RUSAGE_THREAD: the includer defines _GNU_SOURCE first) */
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>

#define NT_BESIDE_NS 2000000
#define NT_BESIDE_STRIKES 2

/* The consumer's own record (zeroed before the first call; never shared). */
typedef struct nt_beside {
	uint64_t wall, cpu, process, slept;
	uint32_t strikes;
} nt_beside;

static inline uint64_t nt_beside_timeval_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

/* Called by the consumer now and then with the monotonic clock's `now_ns`: 1 when the
 * helper should be stopped. Cost: nothing until NT_BESIDE_NS have passed since the last
 * reading; then two system calls (getrusage, clock_gettime). */
static inline int nt_beside_lost(nt_beside *b, uint64_t now_ns)
{
	if (b->wall != 0 && now_ns - b->wall < NT_BESIDE_NS)
		return 0;
	struct rusage ru;
	struct timespec ts;
	if (getrusage(RUSAGE_THREAD, &ru) != 0 || clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	uint64_t cpu = nt_beside_timeval_ns(ru.ru_utime) + nt_beside_timeval_ns(ru.ru_stime);
	uint64_t process = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	uint64_t slept = (uint64_t)ru.ru_nvcsw;
	if (b->wall != 0) {
		uint64_t w = now_ns - b->wall;
		int instead = slept == b->slept && (cpu - b->cpu) * 10 < w * 9 &&
			      (process - b->process) * 10 < w * 11;
		b->strikes = instead ? b->strikes + 1 : 0;
	}
	b->wall = now_ns;
	b->cpu = cpu;
	b->process = process;
	b->slept = slept;
	return b->strikes >= NT_BESIDE_STRIKES;
}

#endif /* NT_READER_BESIDE_H */
