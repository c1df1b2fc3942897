/*
 * nt_arena_layout.h - where each part of an arena lives: the one computation the writer
 * (mapping its arena), the manager (sizing a provider's memfd) and the saver share.
 *
 *   [4 KiB header][durable region][rolling half 0][rolling half 1]
 *   [one overwrite counter per chunk slot][one saved-claim word per chunk slot]
 *
 * The overwrite counters are circular mode's per-slot accounting (writer/core/nt_arena.c);
 * the saved-claim words are streaming mode's: the saver stores there the claim word of each
 * chunk it holds in full, and a writer reuses a slot only once its chunk's word is there
 * (runtime/nt_arena_saver.h). Both sit in the mapping so that a saver in another process
 * (the manager) and the writers see the same words.
 */
#ifndef NT_ARENA_LAYOUT_H
#define NT_ARENA_LAYOUT_H

#include <stdint.h>

#include "nt_archive_header.h"

#define NT_MIN_BUFFER (64u * 1024u)
#define NT_MAX_BUFFER (4ull << 30)
#define NT_MIN_CHUNK 4096u
#define NT_MAX_CHUNK 65536u
NT_STATIC_ASSERT(NT_MAX_CHUNK <= NT_MAX_ZCHUNK_BYTES, "a chunk piece fits a CompressedChunk");

typedef struct nt_arena_layout {
	uint64_t buffer_size;
	uint32_t chunk_size;       /* resolved: 0 (automatic) is replaced by the chosen size */
	uint32_t chunks_per_half;
	uint32_t nslots;           /* 2 * chunks_per_half */
	uint64_t durable_offset;   /* NT_ARENA_HEADER_BYTES */
	uint64_t durable_size;
	uint64_t rolling_offset;
	uint64_t slot_overwritten_offset;
	uint64_t saved_claim_offset;
	uint64_t map_size;         /* the whole arena; a streaming archive's stream starts here */
} nt_arena_layout;

enum {
	NT_LAYOUT_OK = 0,
	NT_LAYOUT_BAD_BUFFER_SIZE,  /* outside [NT_MIN_BUFFER, NT_MAX_BUFFER] */
	NT_LAYOUT_BAD_CHUNK_SIZE,   /* not a power of two in [NT_MIN_CHUNK, NT_MAX_CHUNK] */
	NT_LAYOUT_TOO_FEW_CHUNKS,   /* fewer than 2 chunks per rolling half */
};

/* Lays out an arena of `buffer_size` bytes cut into chunks of `chunk_size` (0: 16 KiB, or
 * smaller for at least 10 chunks in all). Returns NT_LAYOUT_OK and fills *out, or the
 * reason the sizes are refused. Cost: a few divisions. */
static inline int nt_arena_layout_compute(uint64_t buffer_size, uint64_t chunk_size,
					  nt_arena_layout *out)
{
	if (buffer_size < NT_MIN_BUFFER || buffer_size > NT_MAX_BUFFER)
		return NT_LAYOUT_BAD_BUFFER_SIZE;
	if (chunk_size == 0)
		for (chunk_size = 16u << 10; chunk_size > NT_MIN_CHUNK && buffer_size / chunk_size < 10;)
			chunk_size /= 2;
	if ((chunk_size & (chunk_size - 1)) != 0 || chunk_size < NT_MIN_CHUNK ||
	    chunk_size > NT_MAX_CHUNK)
		return NT_LAYOUT_BAD_CHUNK_SIZE;
	/* Durable data is small (interned strings, threads, call sites) but must never run out
	 * before the events do: 1/16 of the arena, at least 4 KiB, at most 1 MiB (Fuchsia's
	 * split). */
	uint64_t durable = buffer_size / 16;
	if (durable < 4096)
		durable = 4096;
	if (durable > NT_MAX_DURABLE_BYTES)
		durable = NT_MAX_DURABLE_BYTES;
	durable &= ~(uint64_t)4095;
	uint64_t cph = (buffer_size - durable) / 2 / chunk_size;
	if (cph < 2)
		return NT_LAYOUT_TOO_FEW_CHUNKS;
	out->buffer_size = buffer_size;
	out->chunk_size = (uint32_t)chunk_size;
	out->chunks_per_half = (uint32_t)cph;
	out->nslots = (uint32_t)(2 * cph);
	out->durable_offset = NT_ARENA_HEADER_BYTES;
	out->durable_size = durable;
	out->rolling_offset = out->durable_offset + durable;
	out->slot_overwritten_offset = out->rolling_offset + 2 * cph * chunk_size;
	out->saved_claim_offset = out->slot_overwritten_offset + 2 * cph * sizeof(uint64_t);
	out->map_size = out->saved_claim_offset + 2 * cph * sizeof(uint64_t);
	return NT_LAYOUT_OK;
}

#endif /* NT_ARENA_LAYOUT_H */
