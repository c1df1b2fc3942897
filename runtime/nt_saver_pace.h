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
 * second at most. A request (a full half) always wakes the saver at once. And none after a
 * save that appended and took NT_SAVER_POLL_MIN_MS or more: the writers fill the arena at
 * least as fast as the saver empties it, and waiting would grow the backlog by a wait's
 * worth each round. With one thread streaming the mixed shape (its saver compressing at 74%
 * of a core) the 1 ms wait after each save let the backlog pass the eighth of the arena
 * past which the saver stores pieces uncompressed (runtime/nt_arena_saver.c): 10% of the
 * pieces were stored, 1.9x the bytes of the oneshot archive.
 */
#ifndef NT_SAVER_PACE_H
#define NT_SAVER_PACE_H

#include <stdint.h>
#include <time.h>

#define NT_SAVER_POLL_MIN_MS 1
#define NT_SAVER_POLL_MAX_MS 256

/* A saver stores a piece uncompressed while the writers are more than this fraction of the
 * arena ahead of it (runtime/nt_arena_saver.c, writers_outrun, says why an eighth). */
#define NT_SAVER_Z_BACKLOG_DIV 8

/* But a saver asleep between saves (up to NT_SAVER_POLL_MAX_MS when the writers were idle)
 * learns of writers that start again only from the request of a full half: a burst after a
 * pause was half an arena ahead before the saver looked, and it stored pieces raw until it
 * caught up. A process traced by trace-record starts so (the manager's saver waited 4 to 16
 * ms while the process started): one writer of the mixed shape at full rate had 343 to 816
 * of its 817 pieces compressed, 1.0x to 7.5x the oneshot bytes. So the claim that starts
 * each sixteenth of the arena also wakes the provider thread when the chunk a sixteenth
 * back is not saved yet (writer/core/nt_arena.c, nudge_due), and the provider asks for a
 * save of the half being filled (SAVE_BUFFER of the generation not yet complete, which the
 * saver answers as any: it saves what is published). A saver that keeps up is never behind
 * by that much, so its writers make no more system calls than before; the others make one
 * per sixteenth of the arena (16 KiB chunks in 16 MiB: one per 1 MiB of records). Half the
 * backlog past which pieces are stored raw: the saver wakes before that backlog. */
#define NT_SAVER_NUDGE_DIV (2 * NT_SAVER_Z_BACKLOG_DIV)

/* The wait before the next save of one's own, after one that appended (saved != 0) or not
 * and took `took_ns`, with `prev_ms` the previous wait. */
static inline int nt_saver_next_poll_ms(int prev_ms, int saved, uint64_t took_ns)
{
	if (saved && took_ns >= NT_SAVER_POLL_MIN_MS * 1000000ull)
		return 0;
	if (saved || prev_ms < NT_SAVER_POLL_MIN_MS)
		return NT_SAVER_POLL_MIN_MS;
	return prev_ms >= NT_SAVER_POLL_MAX_MS / 2 ? NT_SAVER_POLL_MAX_MS : prev_ms * 2;
}

/* CLOCK_MONOTONIC in ns, to time a save. */
static inline uint64_t nt_saver_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* NT_SAVER_PACE_H */
