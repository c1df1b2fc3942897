/* nt_reader_ahead.h - compressed chunks decompressed ahead of a visit on a helper thread
 * (nt_reader_ahead.c; not installed). See nanotrace_reader.h's DECOMPRESSING AHEAD. */
#ifndef NT_READER_AHEAD_H
#define NT_READER_AHEAD_H

#include <stdint.h>

#include "nt_reader_internal.h"

typedef struct nt_ahead nt_ahead;

/* One sequence of compressed chunks the visit will ask for, in order: the CompressedChunk
 * records of `r`'s record stream (from nt_stream_start, as a visit's quiet walk takes them),
 * all of them or those of one thread. Each is a queue of the helper, numbered as given. */
#define NT_AHEAD_ANY_THREAD UINT32_MAX
typedef struct nt_ahead_source {
	const nt_reader *r;
	uint32_t thread; /* a thread index, or NT_AHEAD_ANY_THREAD */
} nt_ahead_source;

/* How many buffers a visit of `r` decompresses ahead with (0: serial), from its setting,
 * NANOTRACE_READER_AHEAD and the CPUs this process may use; *forced is set when asked
 * for explicitly (then any compressed chunk is worth it). Cost: a getenv and a syscall. */
uint32_t nt_ahead_plan(const nt_reader *r, int *forced);

/* Starts the helper over `n` sources (copied) with `buffers` chunks decompressed ahead at
 * most, when `zchunks` compressed chunks make it worth it (see nt_ahead_plan; `forced`:
 * any). by_time: the helper takes the sources' chunks by their start time (the order a
 * time-ordered merge needs them in); else source by source. NULL: visit serially (not
 * worth it, buffers 0, no memory or no thread). */
nt_ahead *nt_ahead_start(const nt_ahead_source *src, uint32_t n, int by_time, uint32_t buffers,
			 int forced, uint64_t zchunks);

/* The chunk at `off` of source `queue`, decompressed: returns 1 and sets *why (NULL, or
 * nt_zchunk_decode's answer) and *buf (the caller's buffer, NT_MAX_ZCHUNK_BYTES or NULL,
 * is handed over to the helper and replaced by the one decoded into); waits (spinning, at
 * most 100 us) only when the helper is decompressing that very chunk; returns 0 when the
 * caller must decompress the chunk itself (the helper is elsewhere, stalled, stopped, out
 * of memory, or too slow: then the helper skips it). The caller asks for each source's
 * chunks in order and uses *buf until its next call. */
int nt_ahead_take(nt_ahead *a, uint32_t queue, uint64_t off, uint8_t **buf, const char **why);

/* Stops the helper (within one chunk's decompression), joins it and frees all it holds.
 * NULL is ignored. */
void nt_ahead_stop(nt_ahead *a);

#endif /* NT_READER_AHEAD_H */
