/*
 * nt_state.h - the bottom of writer/core: the session's state (nt_S) and what reads or
 * changes it without calling any other part of the writer (nt_state.c), with the errors
 * (nt_error.h). Every file of the folder may include it; it includes nothing of the folder
 * above it. The arena's layout: nt_internal.h.
 */
#ifndef NT_STATE_H
#define NT_STATE_H

#include <ck_hs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <nanotrace/nanotrace.h>
#include "nt_core.h"
#include "format/nt_archive_header.h"
#include "format/nt_arena_layout.h"
#include "nt_atomic.h"
#include "nt_clock.h"
#include "nt_error.h"

#define NT_CACHELINE 64
#define NT_TAG_GEN_SHIFT 17
#define NT_TAG_GEN_MAX 0x7FFDu        /* generations 0x7FFE and 0x7FFF are tags of their own */
#define NT_TAG_HALTED ((0x7FFFu << NT_TAG_GEN_SHIFT) | NT_SITE_ENABLED)
/* A fork() child's pending session (nt_fork.c): nonzero, so the event macros call in, and of
 * a generation no call site has, so every event takes the cold path, whose first call starts
 * the child's own session. */
#define NT_TAG_FORKED ((0x7FFEu << NT_TAG_GEN_SHIFT) | NT_SITE_ENABLED)
#define NT_SITE_INDEX_MASK 0xFFFFu
#define NT_TAG_EPOCH_MASK 0xFFFFu /* the low bits of the tag number the start/stop runs */

/* A site state is valid for tag `tag` when generation and enabled bit agree (the low 16 bits
 * are the site's index in one and the run epoch in the other). */
static inline int nt_site_current(uint32_t state, uint32_t tag)
{
	return ((state ^ tag) & ~(uint32_t)NT_SITE_INDEX_MASK) == 0;
}
/* Registered in the generation of `tag`, whether its category is enabled or not. */
static inline int nt_site_registered(uint32_t state, uint32_t tag)
{
	return (((state | NT_SITE_ENABLED) ^ tag) & ~(uint32_t)NT_SITE_INDEX_MASK) == 0;
}

/* nt_session.compact_args: bit 31 set when the site has a CallSiteArgs record; bits 16..19
 * the arguments whose values are signed; bits 0..15 their types, four bits each, as in the
 * fast path's descriptor (nanotrace.h: nt_fixed_desc_ bits 16..31). */
#define NT_COMPACT_SITE_VALID (1u << 31)
#define NT_COMPACT_SITE_SIGNED_SHIFT 16

typedef struct nt_session {
	/* Read on every event: kept together and never written while recording. */
	uint8_t *durable;
	uint8_t *rolling;
	uint64_t *slot_overwritten; /* per slot, in the mapping after the rolling halves: the
				       events circular mode overwrote there (see nt_arena.c) */
	uint32_t chunk_size;
	uint32_t chunks_per_half;
	uint32_t nslots;
	int mode;

	/* Counters inside the mapped header (see nt_header_counter). */
	uint64_t *events_dropped;
	uint64_t *dropped_rolling_full;
	uint64_t *dropped_durable_full;
	uint64_t *dropped_stopped;
	uint64_t *dropped_unsaved; /* saving stopped (SAVE_ERRNO): nt_record_save_failure */
	uint64_t *events_overwritten;
	uint64_t *wraps;
	uint64_t *durable_dropped;
	uint64_t *values_truncated;
	uint64_t *chunks_claimed;
	uint64_t *buffers_saved;
	uint64_t *events_closed; /* EVENTS_WRITTEN of a oneshot or circular arena: the events of
				    its closed chunks, added as each closes, so that a cut copy of
				    a killed process's arena says how many it lost. NULL when
				    streaming (the saver keeps EVENTS_WRITTEN: nt_stream.c) and in
				    a trace manager's buffer */

	/* Streaming mode (nt_stream.c). A half generation g is the g-th use of a rolling half
	 * (sequences g * cph ... (g + 1) * cph - 1). Generation g may be written once g - 2 is
	 * saved; a slot may be reused once the saver holds all of its closed chunk. */
	uint64_t full_gens __attribute__((aligned(NT_CACHELINE))); /* generations complete */
	uint32_t full_signal;  /* futex word: bumped when full_gens or nudges grows */
	uint32_t nudges;       /* writers found the saver a sixteenth behind (nt_saver_pace.h) */
	uint64_t saved_gens __attribute__((aligned(NT_CACHELINE))); /* generations saved */
	uint64_t *saved_claim; /* per slot, in the mapping after the overwrite counters: the
				  claim word of the chunk the saver holds in full (written by the
				  saver, runtime/nt_arena_saver.c, in this process or the manager) */
	int fd;                /* the archive, for appending the saved stream; or the manager's
				  memfd */

	/* Written by chunk claims, one cache line each so claims do not slow each other. */
	uint64_t next_seq __attribute__((aligned(NT_CACHELINE)));
	uint32_t rolling_full; /* oneshot: every slot has been handed out */
	uint64_t durable_head __attribute__((aligned(NT_CACHELINE)));

	/* Slow-path state, guarded by intern_lock. */
	pthread_mutex_t intern_lock __attribute__((aligned(NT_CACHELINE)));
	ck_hs_t strings;
	int strings_ready;
	uint32_t next_string;
	uint32_t next_callsite;
	uint32_t next_thread;
	uint8_t final_state;
	/* By call-site index: what the site's CallSiteArgs record declared (NT_COMPACT_SITE_*),
	 * 0 when its events with arguments are never compact. Written under intern_lock before
	 * the site's state is published (release); read by the fast path after it loaded that
	 * state (acquire). */
	uint32_t compact_args[NT_COMPACT_MAX_CALLSITE + 1];

	/* Set by nt_start(). */
	uint8_t *map;
	size_t map_size;
	int file_backed;         /* a shared mapping: the output file, or the manager's memfd */
	int manager_buffer;      /* the arena is the trace manager's memfd (nt_arena_map_fd) */
	int map_lazily;          /* a fork() child: fault the manager's buffer in on a thread */
	nt_arena_layout layout;  /* where each part of the arena lives */
	unsigned file_mode;
	int compression_level;   /* of saved archives' chunks (format/nt_zchunk.h); 0 = none */
	char *path;                               /* the file-backed arena, or NULL */
	uint32_t hdr_field[NT_HDR_FIELD_COUNT];   /* byte offset of each header field in map */
	uint64_t durable_size;
	uint32_t generation;
	uint32_t epoch;          /* start/stop run, the low 16 bits of the tag */
	uint32_t rolling_clears; /* times the events were cleared: threads restart ordinals */
	nt_callsite *sites;      /* every registered site, to reset on generation wrap */
	int ran;                 /* a run has started since initialize: the arena holds data */
	int started;
	int forked_from;         /* a fork() child: the pid whose session it left, else 0 */
	uint64_t ticks_per_second;
	nt_clock_pair start_pair;
	char *categories; /* comma-separated patterns, or NULL for all */
	char process_name[NT_HDR_MAX_STRING + 1];

	/* Last, so that nothing the event path reads moves. Blocking (nt_config.
	 * blocking_timeout_us): a writer that finds no free chunk may wait for the saver
	 * (nt_chunk_claim_wait). Set at initialize, 0 = never wait. */
	uint64_t block_timeout_ns;
	uint64_t *blocked_waits, *blocked_timeouts, *blocked_ns; /* header totals, in place */
	/* The saver's progress, for waiting writers (nt_stream.c): a futex word bumped after
	 * each save this process learns of, the writers asleep on it, and whether waiting may
	 * begin at all (the streaming threads run and blocking is on). */
	uint32_t saved_progress __attribute__((aligned(NT_CACHELINE)));
	uint32_t block_waiters;
	uint32_t block_ok;
	/* NANOTRACE_EVENT without NANOTRACE (nt_private_arena_path in nt_file.c): the arena's
	 * file and its fresh 0700 directory, removed at exit and on a fatal signal by the
	 * process that made them (private_owner; 0: no private arena). Fixed arrays: the
	 * signal handler reads them. */
	int private_owner;
	char private_dir[4096];
	char private_file[4096];
} nt_session;

extern nt_session nt_S;
/* The hooks layers registered (nt_core.h); every member may be NULL. */
extern nt_core_hooks nt_hooks;

/* FINISHED: stopped, but the archive is not written yet (nt_finish failed: it may be called
 * again); DONE: the archive is written, and a second nt_finish is a mistake to report. */
enum {
	SESSION_IDLE = 0,
	SESSION_READY = 1,
	SESSION_RECORDING = 2,
	SESSION_FINISHED = 3,
	SESSION_DONE = 4,
};

/* The mode named `name` ("oneshot", "circular", "streaming"), or -1. */
int nt_mode_from_name(const char *name);
/* Stop recording for the whole process because of `final_state` (durable or index full):
 * later events are counted as dropped. */
void nt_session_halt(uint8_t final_state);

/* Count `n` events dropped for `reason` (one of the dropped_* counters). */
static inline void nt_count_drop(uint64_t *reason, uint64_t n)
{
	nt_add_64(reason, n);
	nt_add_64(nt_S.events_dropped, n);
}

/* The mapped header's fields (NT_HDR_*), in place. */
static inline uint64_t *nt_header_u64(int field)
{
	return (uint64_t *)(void *)(nt_S.map + nt_S.hdr_field[field]);
}
static inline uint8_t *nt_header_u8(int field)
{
	return nt_S.map + nt_S.hdr_field[field];
}
static inline uint32_t *nt_header_u32(int field)
{
	return (uint32_t *)(void *)(nt_S.map + nt_S.hdr_field[field]);
}

/* Saving the live archive stopped on `err` (a write's errno, or ENOMEM): the first reason is
 * kept in the mapped header's SAVE_ERRNO, and `unsaved` events are counted as dropped with
 * reason DROPPED_UNSAVED, in place (stores only). */
void nt_record_save_failure(int err, uint64_t unsaved);

#endif /* NT_STATE_H */
