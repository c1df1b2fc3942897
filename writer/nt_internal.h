/*
 * nt_internal.h - the writer's session state, shared by its mechanisms (not installed).
 *
 * One process records one session at a time. The arena is one anonymous mapping:
 *
 *   [durable region: strings, threads, call sites][rolling half 0][rolling half 1]
 *
 * and each rolling half is cut into chunks_per_half chunk slots of chunk_size bytes. Chunk
 * sequence numbers come from one fetch-and-add; sequence s lives in slot s % (2 * cph), so
 * the halves alternate every cph claims (a "wrap" each time circular mode re-enters a half).
 */
#ifndef NT_INTERNAL_H
#define NT_INTERNAL_H

#include <ck_hs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "nanotrace.h"
#include "nt_archive_header.h"
#include "nt_atomic.h"
#include "nt_clock.h"
#include "nt_format.h"

#define NT_CACHELINE 64
#define NT_TAG_GEN_SHIFT 17
#define NT_TAG_GEN_MAX 0x7FFEu        /* generation 0x7FFF is the "halted" tag */
#define NT_TAG_HALTED ((0x7FFFu << NT_TAG_GEN_SHIFT) | NT_SITE_ENABLED)
#define NT_SITE_INDEX_MASK 0xFFFFu

typedef struct nt_session {
	/* Read on every event: kept together and never written while recording. */
	uint8_t *durable;
	uint8_t *rolling;
	uint32_t chunk_size;
	uint32_t chunks_per_half;
	uint32_t nslots;
	int mode;

	/* Written by chunk claims, one cache line each so claims do not slow each other. */
	uint64_t next_seq __attribute__((aligned(NT_CACHELINE)));
	uint64_t events_dropped __attribute__((aligned(NT_CACHELINE)));
	uint32_t rolling_full; /* oneshot: every slot has been handed out */
	uint64_t durable_head __attribute__((aligned(NT_CACHELINE)));
	uint64_t events_overwritten __attribute__((aligned(NT_CACHELINE)));
	uint64_t wraps;
	uint64_t durable_dropped;

	/* Slow-path state, guarded by intern_lock. */
	pthread_mutex_t intern_lock __attribute__((aligned(NT_CACHELINE)));
	ck_hs_t strings;
	int strings_ready;
	uint32_t next_string;
	uint32_t next_callsite;
	uint32_t next_thread;
	uint8_t final_state;

	/* Set by nt_start(). */
	uint8_t *map;
	size_t map_size;
	uint64_t durable_size;
	uint32_t generation;
	int started;
	uint64_t ticks_per_second;
	nt_clock_pair start_pair;
	char *categories; /* comma-separated patterns, or NULL for all */
	char process_name[NT_HDR_MAX_STRING + 1];
} nt_session;

extern nt_session nt_S;

/* nt_session.c */
void nt_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Stop recording for the whole process because of `final_state` (durable or index full):
 * later events are counted as dropped. */
void nt_session_halt(uint8_t final_state);

/* nt_arena.c */
int nt_arena_map(size_t buffer_size, size_t chunk_size, int mode);
/* Reserve `bytes` (a multiple of 8) in the durable region; NULL when full (recording is
 * halted and the record counted). Caller holds intern_lock. */
void *nt_durable_reserve(uint32_t bytes);
/* Publish a record whose body is written: a store of its first word after a store fence. */
void nt_publish_word(void *record, uint64_t first_word);
nt_chunk_header *nt_chunk_claim(uint32_t thread, uint64_t base_ticks);
void nt_chunk_close(nt_chunk_header *chunk, uint32_t event_count);
static inline nt_chunk_header *nt_chunk_slot(uint32_t slot)
{
	return (nt_chunk_header *)(void *)(nt_S.rolling + (size_t)slot * nt_S.chunk_size);
}

/* nt_intern.c */
int nt_intern_init(void);
/* Index of `s` (at most NT_MAX_STRING_LENGTH bytes kept), interning it if new; 0 when the
 * durable region or the index space is full. Caller holds intern_lock. */
uint32_t nt_intern_string(const char *s);
/* Registers `site` (and the names of `args`, its first call's arguments) for the current
 * session; returns its state, or 0 when the event is dropped (and counted). */
uint32_t nt_callsite_resolve(nt_callsite *site, const nt_arg *args);
int nt_category_matches(const char *category);

/* nt_event.c */
/* Closes the calling thread's chunk (thread exit, and nt_finish() on its own thread). */
void nt_thread_release(void);

/* nt_archive_write.c */
/* Write the archive of the current session (recording already stopped) to `path`. */
int nt_archive_write(const char *path, const nt_archive_info *info);
/* Encode `info` as a size-prefixed ArchiveHeader FlatBuffer padded to 8 bytes; returns its
 * length, or 0 if `cap` is too small. */
size_t nt_header_encode(const nt_archive_info *info, uint8_t *out, size_t cap);

#endif /* NT_INTERNAL_H */
