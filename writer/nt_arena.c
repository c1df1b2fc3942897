/*
 * nt_arena.c - the arena: its mapping, durable reservations, chunk claims and closes.
 *
 * Chunk ownership protocol (circular mode must survive a slow writer):
 *   claim   seq = faa(next_seq, 1); slot = seq % nslots; CAS the slot's claim word from
 *           "closed by an older sequence" (or 0, never used) to ((seq + 1) << 1 | 1).
 *           Only the CAS winner touches the slot. A slot whose writer is still active (low
 *           bit set) is skipped, not overwritten: a slow thread keeps its chunk and the
 *           claimer moves on to the next sequence number.
 *   fill    the owner appends records with plain stores, each published by its first word.
 *   close   the owner stores event_count, then the claim word with the low bit cleared
 *           (release). Only then can a later claim reuse the slot.
 * In oneshot mode slots are never reused, so the fetch-and-add alone claims a slot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "nt_internal.h"

#define NT_MIN_BUFFER (64u * 1024u)
#define NT_MAX_BUFFER (4ull << 30)
#define NT_MIN_CHUNK 4096u
#define NT_MAX_CHUNK 65536u

static int is_power_of_two(size_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

int nt_arena_map(size_t buffer_size, size_t chunk_size, int mode)
{
	if (buffer_size < NT_MIN_BUFFER || buffer_size > NT_MAX_BUFFER) {
		nt_set_error("nt_start: buffer_size %zu is out of range [%u, %llu]", buffer_size,
			     NT_MIN_BUFFER, (unsigned long long)NT_MAX_BUFFER);
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (!is_power_of_two(chunk_size) || chunk_size < NT_MIN_CHUNK || chunk_size > NT_MAX_CHUNK) {
		nt_set_error("nt_start: chunk_size %zu must be a power of two in [%u, %u]",
			     chunk_size, NT_MIN_CHUNK, NT_MAX_CHUNK);
		return NT_ERR_INVALID_ARGUMENT;
	}
	/* Durable data is small (interned strings, threads, call sites) but must never run out
	 * before the events do: 1/16 of the arena, at least 4 KiB, at most 1 MiB (Fuchsia's
	 * split). */
	uint64_t durable = buffer_size / 16;
	if (durable < 4096)
		durable = 4096;
	if (durable > (1u << 20))
		durable = 1u << 20;
	durable &= ~(uint64_t)7;
	uint64_t cph = (buffer_size - durable) / 2 / chunk_size;
	if (cph < 2) {
		nt_set_error("nt_start: buffer_size %zu holds fewer than 2 chunks of %zu bytes per "
			     "rolling half; use a larger buffer or smaller chunks",
			     buffer_size, chunk_size);
		return NT_ERR_INVALID_ARGUMENT;
	}
	size_t size = (size_t)(durable + 2 * cph * chunk_size);

	if (nt_S.map == NULL || nt_S.map_size != size) {
		if (nt_S.map != NULL)
			munmap(nt_S.map, nt_S.map_size);
		nt_S.map = NULL;
		/* MAP_POPULATE pre-faults the arena: a first-touch page fault on the hot path
		 * costs several times the event itself. */
		void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (m == MAP_FAILED) {
			nt_set_error("nt_start: cannot map a %zu-byte arena: %s", size,
				     strerror(errno));
			return NT_ERR_NO_MEMORY;
		}
		nt_S.map = m;
		nt_S.map_size = size;
	} else {
		memset(nt_S.map, 0, size);
	}
	nt_S.durable = nt_S.map;
	nt_S.durable_size = durable;
	nt_S.rolling = nt_S.map + durable;
	nt_S.chunk_size = (uint32_t)chunk_size;
	nt_S.chunks_per_half = (uint32_t)cph;
	nt_S.nslots = (uint32_t)(2 * cph);
	nt_S.mode = mode;
	nt_S.next_seq = 0;
	nt_S.rolling_full = 0;
	nt_S.durable_head = 0;
	nt_S.events_dropped = 0;
	nt_S.events_overwritten = 0;
	nt_S.wraps = 0;
	nt_S.durable_dropped = 0;
	return NT_OK;
}

void nt_publish_word(void *record, uint64_t first_word)
{
	nt_store_release_64((uint64_t *)record, first_word);
}

void *nt_durable_reserve(uint32_t bytes)
{
	/* Writers hold intern_lock, but the head is still advanced atomically so that a
	 * reader of the live arena sees a head that only grows. */
	uint64_t off = nt_load_64(&nt_S.durable_head);
	if (off + bytes > nt_S.durable_size) {
		nt_add_64(&nt_S.durable_dropped, 1);
		nt_session_halt(NT_FINAL_DURABLE_FULL);
		return NULL;
	}
	nt_faa_64(&nt_S.durable_head, bytes);
	return nt_S.durable + off;
}

static uint64_t chunk_first_word(uint32_t size_bytes)
{
	return (uint64_t)NT_KIND_CHUNK | ((uint64_t)size_bytes << 32);
}

nt_chunk_header *nt_chunk_claim(uint32_t thread, uint64_t base_ticks)
{
	const uint32_t nslots = nt_S.nslots;
	const int oneshot = nt_S.mode == NT_MODE_ONESHOT;

	/* Each failed attempt consumed a sequence number whose slot was busy; after nslots of
	 * them every slot is held by an active writer and the event is dropped. */
	for (uint32_t attempt = 0; attempt < nslots; attempt++) {
		if (oneshot && nt_load_32(&nt_S.rolling_full))
			return NULL;
		uint64_t seq = nt_faa_64(&nt_S.next_seq, 1);
		uint32_t slot = (uint32_t)(seq % nslots);
		nt_chunk_header *h = nt_chunk_slot(slot);
		uint64_t mine = ((seq + 1) << 1) | 1u; /* 0 stays "never claimed" */

		if (oneshot) {
			if (seq >= nslots) {
				nt_store_32(&nt_S.rolling_full, 1);
				return NULL;
			}
			nt_store_64(&h->claim, mine);
		} else {
			if (seq >= nslots && seq % nt_S.chunks_per_half == 0)
				nt_add_64(&nt_S.wraps, 1);
			uint64_t old = nt_load_64(&h->claim);
			if ((old & 1u) || (old >> 1) > seq + 1)
				continue; /* active writer, or a newer claim already took it */
			if (!nt_cas_64(&h->claim, old, mine))
				continue;
			if (old != 0) {
				/* Invalidate before touching the body, so a reader of the live
				 * arena never takes the old records for the new owner's. */
				uint32_t lost = nt_load_32(&h->event_count);
				nt_store_64((uint64_t *)(void *)h, 0);
				nt_fence_store();
				memset((uint8_t *)h + sizeof(*h), 0, nt_S.chunk_size - sizeof(*h));
				nt_add_64(&nt_S.events_overwritten, lost);
			}
		}
		h->thread = thread;
		h->event_count = 0;
		h->base_ticks = base_ticks;
		nt_publish_word(h, chunk_first_word(nt_S.chunk_size));
		return h;
	}
	return NULL;
}

void nt_chunk_close(nt_chunk_header *chunk, uint32_t event_count)
{
	uint64_t claim = nt_load_64(&chunk->claim);
	nt_store_32(&chunk->event_count, event_count);
	nt_store_release_64(&chunk->claim, claim & ~(uint64_t)1);
}
