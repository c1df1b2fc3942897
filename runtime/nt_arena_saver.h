/*
 * nt_arena_saver.h - turns a live arena into archive bytes: the one saver that both the
 * writer's in-process streaming thread and the trace manager run (runtime/nt_arena_saver.c).
 *
 * A save appends to an output everything published in the arena since the previous save:
 * first the new durable records, then, in claim order, each chunk's new records as a chunk
 * piece of its own (time base and event ordinal recomputed at the cut), so every piece
 * decodes alone and each thread's pieces stay in order. A chunk still being written is
 * saved up to its last published record and continued at the next save. When the output
 * has taken the bytes, the saver commits: it calls out->commit(end) and only then stores,
 * for every slot whose chunk is closed and saved in full, that chunk's claim word in the
 * arena's saved-claim word (nt_arena_layout.h), which is what lets a writer reuse the slot.
 *
 * The arena may belong to another, untrusted process that changes it while it is read:
 * every size and index is taken from the consumer's own nt_arena_layout, never from the
 * arena; each chunk header is copied once and checked; records are framed by
 * format/nt_record.h within their chunk; memory is O(slots + threads), with thread indices
 * bounded by NT_MAX_THREAD_INDEX. A lying arena yields wrong records (which the reader then
 * reports), never a crash, a hang or unbounded memory.
 */
#ifndef NT_ARENA_SAVER_H
#define NT_ARENA_SAVER_H

#include <stddef.h>
#include <stdint.h>

#include "format/nt_arena_layout.h"

typedef struct nt_saver_output {
	/* Appends `len` bytes; returns 0, or the errno of the failure (the save stops, and
	 * nothing is committed). */
	int (*append)(void *ctx, const void *data, size_t len);
	/* The output is a consistent stream up to `end` (the total appended so far, counted
	 * from the output's start offset given to nt_arena_saver_new). May be NULL. */
	void (*commit)(void *ctx, uint64_t end);
	void *ctx;
} nt_saver_output;

typedef struct nt_arena_saver nt_arena_saver;

/* A saver of the arena mapped at `map` (map_size bytes, readable and writable: the saver
 * stores the saved-claim words) with layout `*layout` (copied), whose output starts at
 * offset `start` (for commit's `end`). NULL when memory runs out, or when `map` or `layout`
 * is NULL or the layout has no slots or a chunk size outside [NT_MIN_CHUNK, NT_MAX_CHUNK].
 * Cost: O(slots) memory, allocated here; the per-thread table grows at most to
 * NT_MAX_THREAD_INDEX + 1 entries. */
nt_arena_saver *nt_arena_saver_new(uint8_t *map, const nt_arena_layout *layout, uint64_t start);

/* Compression of the chunk pieces from the next save on: `level` 0 stores them as they
 * are (the default), any other level of nt_zchunk_level_ok() (format/nt_zchunk.h) writes
 * each piece as a CompressedChunk record when that is smaller, else as it is. Reuses one
 * codec context per saver; the work is done by the thread that calls save. `live` (a
 * streaming arena, whose writers wait for the saver): a piece whose writers are more than
 * an eighth of the arena ahead of it is stored as it is, which is faster, until the saver
 * is back within that backlog (the measured rule: nt_arena_saver.c, writers_outrun); and the
 * new records of a chunk still open are held for up to NT_SAVER_HOLD_MS, or until it closes,
 * so that a slow writer's chunk is not compressed in many small pieces (nt_arena_saver.c,
 * hold_open); nt_arena_saver_save_all cuts them. 0 (a stopped arena: nt_finish(), a
 * finished provider) compresses all and holds nothing. Returns 0, EINVAL (s NULL, or a
 * level out of range: nothing changes) or ENOMEM (the saver then stores pieces
 * uncompressed). */
#define NT_SAVER_HOLD_MS 50
int nt_arena_saver_set_compression(nt_arena_saver *s, int level, int live);

/* One save (above). Returns 0, or the errno of the failed append or ENOMEM; after a failure
 * every later save fails the same way without writing, and nothing of the failed save is
 * committed. *events (may be NULL) gets the events in the pieces this save appended. Cost:
 * two passes over the slot headers, one walk of each unsaved chunk's records and of the
 * new durable records, a sort of the pieces; at most durable_size + nslots * chunk_size
 * bytes appended. One thread at a time, and one saver per arena: a saver skips the chunks
 * the saved-claim words mark, whoever marked them. */
int nt_arena_saver_save(nt_arena_saver *s, const nt_saver_output *out, uint64_t *events);

/* One save as above that also cuts the records held in open chunks (live compression,
 * nt_arena_saver_set_compression): the save that answers a request for everything (a stop)
 * and a saver's last one. Same results and cost as nt_arena_saver_save. */
int nt_arena_saver_save_all(nt_arena_saver *s, const nt_saver_output *out, uint64_t *events);

/* Totals since nt_arena_saver_new: events saved, and the output's end. After a failed save
 * both include the pieces it appended before the failure (each append is whole records):
 * the output up to the end is a consistent stream holding exactly that many events. */
uint64_t nt_arena_saver_events(const nt_arena_saver *s);
uint64_t nt_arena_saver_end(const nt_arena_saver *s);

/* Events published in the arena's chunks that this saver has not appended (the slots not
 * marked saved, less what of them is saved): what a stopped arena loses when saving stopped
 * for good. Cost: one walk of each such chunk's unsaved records. 0 for s NULL. */
uint64_t nt_arena_saver_unsaved_events(nt_arena_saver *s);

/* Totals since nt_arena_saver_new: bytes of the chunk pieces cut, and bytes appended for
 * them (smaller when compressed). Durable records are not counted. */
void nt_arena_saver_bytes(const nt_arena_saver *s, uint64_t *pieces, uint64_t *appended);

void nt_arena_saver_free(nt_arena_saver *s); /* NULL is ignored */

#endif /* NT_ARENA_SAVER_H */
