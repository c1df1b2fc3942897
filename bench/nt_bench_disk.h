/* nt_bench_disk.h - what nanotrace leaves on disk and how its streaming saver keeps up,
 * measured by nt_bench_peers (bench/nt_bench_disk.c). */
#ifndef NT_BENCH_DISK_H
#define NT_BENCH_DISK_H

#include <stdint.h>

#include "nt_bench_shapes.h"

#define NT_BENCH_MAX_REPS 15

typedef struct nt_bench_stream_shape {
	uint64_t events;              /* made per run */
	double oneshot_ns, stream_ns; /* the writer's ns per event, medians of the rounds */
	double ns_ratio;              /* median of the rounds' streaming / oneshot */
	double oneshot_bpe, stream_bpe; /* bytes allocated on disk per event saved, medians */
	double bytes_ratio;           /* median of the rounds' streaming / oneshot */
	double apparent_bpe;          /* streaming, st_size per event (the arena's hole too) */
	double lost_pct;              /* streaming, worst round: (made - saved) / made */
	uint64_t dropped;             /* streaming, all rounds: what the writer counted */
	uint64_t chunks, zchunks;     /* streaming, last round: chunk pieces, compressed ones */
	double saver_cpu;             /* streaming: the saver's CPU time ÷ the writer's loop time */
} nt_bench_stream_shape;

typedef struct nt_bench_disk {
	double record_bpe[SHAPE_COUNT]; /* event-record bytes per event (chunk headers excluded) */
	double file_bpe[SHAPE_COUNT];   /* the archive file's size per event, as nt_finish saves */
	uint64_t archive_events[SHAPE_COUNT];
	/* 1 writer thread streaming the mixed shape at full rate into the default arena */
	double stream_lost_pct;    /* events dropped / events made, percent */
	uint64_t stream_events;    /* events made */
	uint64_t stream_dropped;
	double saver_mb_s;         /* chunk bytes saved, uncompressed (what the saver took in) /
				    * (start of writing .. nt_finish returned) */
	uint64_t stream_bytes;     /* the archive's size (st_size: the arena's hole included) */
	double plain_write_mb_s;   /* as many bytes with write(2) of 1 MiB + fsync, same folder */
	/* Streaming beside oneshot, 1 writer at full rate, the same events (vs[0] zone, vs[1]
	 * mixed): what issue 29 asks of streaming. */
	nt_bench_stream_shape vs[2];
} nt_bench_disk;

/* Measures all of nt_bench_disk in a private scratch folder (mkdtemp under $TMPDIR or
 * /tmp, removed before returning): archives of `events` events per shape, `stream_ms`
 * milliseconds of streaming, and `reps` (1..NT_BENCH_MAX_REPS) rounds of oneshot beside
 * streaming with `stream_events` events each. Returns 0 after printing why on failure. */
int nt_bench_measure_disk(nt_bench_disk *out, uint64_t events, int stream_ms,
			  uint64_t stream_events, int reps);

#endif /* NT_BENCH_DISK_H */
