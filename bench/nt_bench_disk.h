/* nt_bench_disk.h - what nanotrace leaves on disk and how its streaming saver keeps up,
 * measured by nt_bench_peers (bench/nt_bench_disk.c). */
#ifndef NT_BENCH_DISK_H
#define NT_BENCH_DISK_H

#include <stdint.h>

#include "nt_bench_shapes.h"

typedef struct nt_bench_disk {
	double record_bpe[SHAPE_COUNT]; /* event-record bytes per event (chunk headers excluded) */
	double file_bpe[SHAPE_COUNT];   /* the archive file's size per event, as nt_finish saves */
	uint64_t archive_events[SHAPE_COUNT];
	/* 1 writer thread streaming the mixed shape at full rate into the default arena */
	double stream_lost_pct;    /* events dropped / events made, percent */
	uint64_t stream_events;    /* events made */
	uint64_t stream_dropped;
	double saver_mb_s;         /* archive bytes / (start of writing .. nt_finish returned) */
	uint64_t stream_bytes;     /* the archive's size */
	double plain_write_mb_s;   /* the same bytes with write(2) of 1 MiB + fsync, same folder */
} nt_bench_disk;

/* Measures all of nt_bench_disk in a private scratch folder (mkdtemp under $TMPDIR or
 * /tmp, removed before returning): archives of `events` events per shape, and `stream_ms`
 * milliseconds of streaming. Returns 0 after printing why on failure. */
int nt_bench_measure_disk(nt_bench_disk *out, uint64_t events, int stream_ms);

#endif /* NT_BENCH_DISK_H */
