/*
 * nt_saver_pace.h - when a streaming saver saves between requests.
 *
 * A rolling half is handed to the saver only when it is full, and writers that come round
 * to it before it is saved drop. If the saver started only then, it would have the time
 * the writers take to fill the other half (about 1.5 ms for a 4 MiB arena written at
 * 1.3 GB/s) to write a whole half: any stall longer than that drops events. So both savers
 * (the writer's streaming thread and the trace manager's thread per provider) also save on
 * their own while the writers fill a half, as soon as there is something to save: when the
 * request comes, most of the half is already saved and the answer takes only the rest.
 *
 * Waiting between those saves: short while there was data (a busy arena is saved as it
 * fills), doubling while there is none, so an idle traced process is woken a few times a
 * second at most. A request (a full half) always wakes the saver at once.
 */
#ifndef NT_SAVER_PACE_H
#define NT_SAVER_PACE_H

#define NT_SAVER_POLL_MIN_MS 1
#define NT_SAVER_POLL_MAX_MS 256

/* The wait before the next save of one's own, after one that appended (saved != 0) or not,
 * with `prev_ms` the previous wait. */
static inline int nt_saver_next_poll_ms(int prev_ms, int saved)
{
	if (saved || prev_ms < NT_SAVER_POLL_MIN_MS)
		return NT_SAVER_POLL_MIN_MS;
	return prev_ms >= NT_SAVER_POLL_MAX_MS / 2 ? NT_SAVER_POLL_MAX_MS : prev_ms * 2;
}

#endif /* NT_SAVER_PACE_H */
