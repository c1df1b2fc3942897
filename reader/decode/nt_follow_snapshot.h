/* nt_follow_snapshot.h - a consistent copy of a live Arena-layout file (not installed).
 *
 * A writer changes its file-backed arena while a follower reads it, so the follower never
 * decodes the shared mapping itself: it copies, with the writers' protocol, what is
 * published into private memory at the file's own offsets, and the ordinary reader opens
 * that copy (nt_reader_open_memory), which is immutable while it is read. */
#ifndef NT_FOLLOW_SNAPSHOT_H
#define NT_FOLLOW_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "format/nt_archive_header.h"

typedef struct nt_follow_snapshot {
	uint8_t *buf;         /* the image: arena at its file offsets, then the saved stream */
	size_t cap;           /* bytes allocated */
	size_t size;          /* bytes of the image */
	uint64_t stream_have; /* the saved stream is copied up to here (kept across polls) */
	uint64_t empty_from;  /* saved chunks before here were delivered and emptied */
	uint64_t reused;      /* chunk slots dropped from copies: reused while being copied */
	nt_archive_info info; /* the copied header, decoded */
	uint64_t *latest;     /* per copy, by thread index: its latest chunk's first_event + 1 */
	size_t nlatest;
	uint64_t *latest_set; /* the thread indices whose latest is not 0 (at most one a slot): */
	size_t nlatest_set, latest_set_cap; /* a copy zeroes those, not the whole table */
	uint64_t *active;     /* per copy: slots copied while their writer was adding to them */
	size_t nactive_cap;
	uint8_t *scratch;     /* one slot: a later look at a slot is copied here first */
	size_t scratch_cap;
} nt_follow_snapshot;

/* Copies the live arena `map` (the first `map_len` bytes of the file, mapped shared) and the
 * saved stream after it (read from `fd`, whose size is now `file_size`) into s: every chunk
 * slot up to its last published record (a slot reused while it was copied is left empty and
 * counted in s->reused) and a second look at each for chunks claimed there since that are
 * older than their thread's latest chunk copied (no thread shows a hole that was only the
 * order of the copy), then the durable region, then the header, then the stream up to the
 * header's STREAM_END, so that every event copied finds its call site and thread copied too.
 * Every size comes from the copied header and is checked against map_len and file_size
 * first. A closed chunk whose events all lie below next[its thread] (nnext entries: the
 * follower's next ordinals) is left out. Returns NULL, or what is wrong (the image is then
 * not usable); a header that says the arena is finished (Stream layout) returns NULL with
 * s->info.layout saying so. Cost: the published bytes of the chunks not left out, the
 * durable region, and the stream bytes not copied before; saved chunks delivered whole are
 * emptied in the copy (their header kept), so the reader decodes only what is new; memory:
 * one image of the file. */
const char *nt_follow_snapshot_take(nt_follow_snapshot *s, int fd, const uint8_t *map,
				    size_t map_len, uint64_t file_size, const uint64_t *next,
				    size_t nnext);

/* A 64-bit hash of the image's bytes: two copies with the same one hold the same bytes (but
 * for a collision, odds 2^-64 for copies that differ by a torn store). Cost: one pass over
 * the image. */
uint64_t nt_follow_snapshot_fingerprint(const nt_follow_snapshot *s);

void nt_follow_snapshot_free(nt_follow_snapshot *s);

#endif /* NT_FOLLOW_SNAPSHOT_H */
