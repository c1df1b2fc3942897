/*
 * nt_internal.h - the writer's session state, shared by its mechanisms (not installed).
 *
 * One process records one session at a time. The arena is one mapping, anonymous, of the
 * output file itself (nt_config.path), or of a memfd the trace manager made, laid out exactly
 * as an Arena-layout archive by format/nt_arena_layout.h (the one place of that arithmetic):
 *
 *   [4 KiB header: the ArchiveHeader FlatBuffer][durable region][rolling half 0][half 1]
 *   [one overwrite counter per chunk slot][one saved-claim word per chunk slot]
 *
 * The loss counters are fields of that header, updated atomically in place, so a process
 * killed at any moment leaves a file whose header is current.
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

#include <nanotrace/nanotrace.h>
#include "nt_core.h"
#include "format/nt_archive_header.h"
#include "format/nt_archive_header_encode.h"
#include "format/nt_arena_layout.h"
#include "nt_atomic.h"
#include "nt_clock.h"
#include "nt_state.h"
#include "format/nt_zchunk.h"
#include "format/nt_format.h"
#include "format/nt_record.h"
#include "runtime/nt_write_all.h"

/* nt_env_warn.c: the compression level a session uses (0 = none) for nt_config's
 * compression_level `cfg_level` (checked): 0 takes NANOTRACE_COMPRESSION, whose garbage
 * prints one warning line and gives NT_COMPRESSION_DEFAULT. */
int nt_compression_level(int cfg_level);
/* nt_env_warn.c: nt_config.blocking_timeout_us as nanoseconds (0 = never wait): the
 * config's value, or for 0 NANOTRACE_BLOCKING_TIMEOUT (microseconds or "off"; garbage: one
 * warning line and never wait). `cfg_us` was checked by nt_start. */
uint64_t nt_blocking_timeout_ns(long long cfg_us);
/* NANOTRACE_CLOCK's value: "auto", "monotonic" or "tsc" as an nt_clock_choice, else -1. */
int nt_env_clock_choice(const char *v);

/* nt_session.c */
/* Validate `cfg`, map the arena and publish its header; recording is not started. */
nt_result nt_session_initialize(const nt_config *cfg);
/* Counters that restart when events are cleared. */
void nt_session_reset_counters(void);
/* Async-signal-safe: stop recording and record `reason` (and `sig`) and the end time in the
 * mapped header. Returns 0 when not recording. */
int nt_session_record_end(uint8_t reason, int sig);
/* nt_finish() with the reason recorded in the archive. */
nt_result nt_session_finish(const char *path, uint8_t reason);

/* nt_arena.c */
/* Map the arena (of the file at `path`, or anonymous when NULL). The file appears at `path`
 * only once its header is written, via nt_arena_publish(). */
nt_result nt_arena_map(size_t buffer_size, size_t chunk_size, int mode, const char *path);
/* Map the arena on `fd`, a memfd the trace manager made and sized to the layout's map_size
 * (format/nt_arena_layout.h): it is mapped shared, never resized, and closed by
 * nt_arena_forget()/the next map. The arena is as nt_arena_map() leaves it (no path: its
 * header is published by nt_arena_publish() without a rename), and treated as file-backed
 * (fork children let go of it; the fatal-signal handlers record the end in its header).
 * NT_ERR_INVALID_ARGUMENT with a message when the sizes are refused or fd's size (fstat) is
 * not exactly the layout's map_size; NT_ERR_IO when it cannot be mapped. On failure `fd`
 * stays the caller's (not closed); on success it is the arena's. Cost: one mmap that
 * populates the whole buffer. */
nt_result nt_arena_map_fd(int fd, size_t buffer_size, size_t chunk_size, int mode);
/* Write the header for `info` into the mapping, point the counters at it and, for a
 * file-backed arena, move the file into place. */
nt_result nt_arena_publish(nt_archive_info *info);
/* After a successful nt_finish() of a oneshot or circular file-backed arena, whose file the
 * archive replaced: its chunks' dirty pages are thrown away (a hole), never written back. */
void nt_arena_discard(void);
/* In a fork() child: let go of the parent's file, fd and mapping (nt_arena.c). */
void nt_arena_forget(void);
/* The reason an event finds no chunk to write into: saving stopped (a streaming saver's
 * write failed, so no slot is freed again), else a full rolling buffer. */
static inline uint64_t *nt_no_chunk_reason(void)
{
	return nt_load_32(nt_header_u32(NT_HDR_SAVE_ERRNO)) ? nt_S.dropped_unsaved
							   : nt_S.dropped_rolling_full;
}
/* Reserve `bytes` (a multiple of 8) in the durable region; NULL when full (recording is
 * halted and the record counted). Caller holds intern_lock. */
void *nt_durable_reserve(uint32_t bytes);
/* Publish a record whose body is written: a store of its first word after a store fence. */
void nt_publish_word(void *record, uint64_t first_word);
nt_chunk_header *nt_chunk_claim(uint32_t thread, uint64_t base_ticks, uint64_t first_event);
/* A thread's waits for a streaming saver not yet written into a BlockedRecord. */
typedef struct nt_block_tally {
	uint32_t waits, timeouts;
	uint64_t ns;
	/* The last wait ran out of time with the saver's progress word at `stale_progress`: no
	 * new wait until the word moves (a saver that let one wait expire is not waited for on
	 * every event, LTTng-style, which would slow the program to one event a timeout). */
	uint32_t stale, stale_progress;
} nt_block_tally;
/* Streaming with blocking on (nt_S.block_timeout_ns), after nt_chunk_claim found no chunk:
 * waits up to the timeout for the saver to free one, while the session's tag is still `tag`
 * and the streaming threads run (nt_stream_may_wait). Adds the wait to *tally and to the
 * header's blocked_* totals. The chunk, or NULL when the wait ended without one. Returns
 * NULL at once, counting nothing, when waiting may not begin (nt_stream_may_wait), or after
 * a wait that ran out of time until the saver's progress word moves (tally->stale). Cost: a few claim attempts, then futex
 * waits of at most a millisecond each; never called while the thread's chunk has room. */
nt_chunk_header *nt_chunk_claim_wait(uint32_t thread, uint64_t base_ticks, uint64_t first_event,
				     uint32_t tag, nt_block_tally *tally);
void nt_chunk_close(nt_chunk_header *chunk, uint32_t event_count);
/* Bytes of published records in a chunk's payload; *events counts the events among them. */
uint32_t nt_chunk_walk(const nt_chunk_header *h, uint32_t *events);
/* ChunkHeader.slot_wrap for sequence `seq`. */
static inline uint16_t nt_slot_wrap(uint64_t seq)
{
	return nt_chunk_slot_wrap(seq, nt_S.nslots);
}

/* The slot's chunk as a consistent pair: returns its claim word if the header published
 * in the first word belongs to that claim, else 0 (empty, or being re-claimed: the claim
 * word changes before the header is invalidated and rewritten). */
static inline uint64_t nt_chunk_snapshot(const nt_chunk_header *h)
{
	uint64_t claim = nt_load_acquire_64(&h->claim);
	uint64_t w0 = nt_load_acquire_64((const uint64_t *)(const void *)h);
	if (nt_record_kind(w0) != NT_KIND_CHUNK || claim < 2 ||
	    nt_record_bits16(w0) != nt_slot_wrap(nt_claim_sequence(claim)))
		return 0;
	return claim;
}

static inline nt_chunk_header *nt_chunk_slot(uint32_t slot)
{
	return (nt_chunk_header *)(void *)(nt_S.rolling + (size_t)slot * nt_S.chunk_size);
}

/* nt_stream.c: streaming mode. */
/* Start the provider and saver threads; `fresh` for the first run of a buffer. */
nt_result nt_stream_start(int fresh);
/* The same with the saver at the other end of `fifo_fd` (the trace manager): this process
 * runs only the provider thread, which speaks format/nt_fifo.h on fifo_fd (never closed
 * here). All the streaming packets of a run are the stream code's: STARTED is sent by its
 * thread once the caller has stored the session tag (so the manager never sees STARTED
 * before recording is on), and before every SAVE_BUFFER; SAVE_BUFFER(wrap count, durable
 * head) each time a half fills, counted in buffers_saved when BUFFER_SAVED echoes it, and
 * for the half being filled when writers nudge (nt_stream_nudge), not counted; and at
 * nt_stream_stop() the final SAVE_BUFFER(NT_FIFO_SAVE_ALL) and then STOPPED. The caller sends
 * neither STARTED nor STOPPED for a streaming run. Never blocks the program: sends do not
 * wait; a manager that closes, errs or answers wrongly is not asked again this run (writers
 * drop and count at the unsaved half); a stop waits at most 2 s for the pending answer and
 * the final save together. Answers left over from a previous run are discarded at start. */
nt_result nt_stream_start_remote(int fresh, int fifo_fd);
void nt_stream_stop(void);        /* saves everything, stops and joins the threads */
void nt_stream_notify_full(uint64_t generations); /* called by the claim completing a half */
void nt_stream_nudge(void); /* the claim of a sixteenth the saver is behind (nt_saver_pace.h) */
nt_result nt_stream_finish(void); /* the saved stream becomes the archive: header in place */
void nt_stream_forget(void);      /* a fork() child: the saver threads stayed in the parent */
/* Blocking writers (nt_chunk_claim_wait). May a writer of session tag `tag` wait for the
 * saver now: blocking on, the streaming threads running in this process, the tag unchanged,
 * saving not stopped by a failure. Loads only. */
int nt_stream_may_wait(uint32_t tag);
/* The saver's progress word: changes after each save this process learns of (its own
 * saver's, or the trace manager's answer). */
uint32_t nt_stream_progress(void);
/* Sleeps until the progress word differs from `seen`, at most min(ns, 1 ms): the trace
 * manager saves unasked without telling this process, so a waiter looks again each
 * millisecond. */
void nt_stream_wait_progress(uint32_t seen, uint64_t ns);

/* nt_crash.c: for the session just initialized, the exit and (with `handle_signals`)
 * fatal-signal handlers of a file-backed arena, or the exit warning of an anonymous one;
 * each installed once in the process. */
void nt_exit_handlers_install(int handle_signals);

/* nt_intern.c */
nt_result nt_intern_init(void);
/* Index of `s` (at most NT_MAX_STRING_LENGTH bytes kept), interning it if new; 0 when the
 * durable region or the index space is full. Caller holds intern_lock. */
uint32_t nt_intern_string(const char *s);
int nt_category_matches(const char *category);
/* NT_OK, or NT_ERR_INVALID_ARGUMENT with a message naming `who`, the pattern list and the
 * position of its first mistake (the syntax is nt_config.categories'). NULL is NT_OK. */
nt_result nt_category_patterns_check(const char *who, const char *patterns);

/* nt_arena.c: close every chunk a writer still holds (between runs, no writer active), so
 * each slot can be reused and each chunk's event count is exact. */
void nt_arena_close_all_chunks(void);
/* Zero the rolling halves (and with `durable` the durable region) for a new run. */
void nt_arena_clear(int durable);

/* nt_event.c */
/* Closes the calling thread's chunk (thread exit, and nt_finish() on its own thread). */
void nt_thread_release(void);

/* nt_file.c */
/* Create a file beside `path` under a fresh random name, with O_EXCL and O_CLOEXEC (so a
 * planted link is never followed) and mode nt_S.file_mode (0600 when 0), exactly
 * (runtime/nt_private_file.h). Returns its fd and the name (malloc'd) in *name_out, or -1
 * with errno set. */
int nt_create_beside(const char *path, char **name_out);
/* Rename `tmp` over `path`, refusing (-1, errno ELOOP) when a symbolic link is at `path`:
 * it is never followed or replaced. -1 with rename's errno otherwise; 0 on success. */
int nt_file_publish(const char *tmp, const char *path);
/* strerror(), with ELOOP worded as nt_file_publish() means it. */
const char *nt_file_strerror(int err);
/* Every write of a buffer: nt_write_all() (runtime/nt_write_all.h). */
/* A private arena (NANOTRACE_EVENT without NANOTRACE): makes a fresh directory, mode 0700,
 * "nanotrace-event-XXXXXX" under $XDG_RUNTIME_DIR, else $TMPDIR, else /tmp (mkdtemp: never
 * a name another user planted), writes "<that directory>/<name>" to path[cap] and records
 * both in nt_S for this process (nt_S.private_owner). Returns 0, or -1 with errno
 * (ENAMETOOLONG when it does not fit). */
int nt_private_arena_path(char *path, size_t cap, const char *name);
/* The private arena's file unlinked (a follower that opened it reads on), and with
 * `and_dir` its directory removed; only in the process that made them, else nothing.
 * Async-signal-safe. */
void nt_private_arena_remove(int and_dir);

/* nt_archive_write.c */
/* Write the archive of the current session (recording already stopped) to `path`. */
nt_result nt_archive_write(const char *path, const nt_archive_info *info);
/* Events published in the arena's chunks now (what an archive written now would hold). */
uint64_t nt_arena_event_count(void);

/* ---- The trace manager's provider (nt_registry.c, nt_registry_wire.c) ----------------
 * While the process is registered with a trace manager, the session belongs to the manager:
 * the provider thread initializes, starts, stops and terminates it from the manager's
 * messages (format/nt_wire.h), and the program's own nt_start()/nt_finish() defer to it. */

/* Nonzero from a registration on, for the process's lifetime (also once the manager went
 * away or the program's nt_finish() unregistered it): the program's own session calls are
 * then answered without a session of their own. Cost: one load. */
int nt_registry_owns_session(void);
/* The program's nt_finish() or exit() while registered: stop (streaming: the final save),
 * STOPPED on the FIFO, close the connection. The section ends EXITED. */
void nt_registry_exit(void);
/* Once, before the first registration: the answer's condition variable and the exit handler
 * (nt_registry_exit). */
void nt_registry_init(void);
/* A registration's arguments (NT_ERR_INVALID_ARGUMENT with a message naming `who`): *path
 * NULL takes NANOTRACE_MANAGER, *name NULL the program's name; a negative timeout_ms of a
 * `sync` registration is refused. */
nt_result nt_registry_check(const char *who, const char **path, const char **name, int sync,
			    int timeout_ms);
/* Connects to the manager at `path` (checked) and registers as `name`; `sync`: waits up to
 * timeout_ms for its answer, *started (may be NULL) whether it started a session. */
nt_result nt_registry_connect(const char *who, const char *path, const char *name, int sync,
			      int timeout_ms, int *started);
/* Nonzero when losing the manager was already said on stderr. */
int nt_registry_loss_reported(void);
/* fork(): the registry lock is held across fork() (taken before intern_lock), and the child
 * lets go of the parent's connection, FIFO and buffer; nonzero when the parent was
 * registered, with its socket path and name copied out for the child's own registration. */
void nt_registry_before_fork(void);
void nt_registry_after_fork_in_parent(void);
int nt_registry_after_fork_in_child(char *path, size_t path_cap, char *name, size_t name_cap);

/* nt_fork.c: a fork() child's own archive, started lazily at its first event. */
/* Keep a copy of `cfg` (checked, full size) for the children of this session. */
nt_result nt_fork_remember_config(const nt_config *cfg);
/* The child's path for parent archive `base` (runtime/nt_fork_path.h). 0 when it does not
 * fit `cap`. */
int nt_fork_child_path(char *out, size_t cap, const char *base, int pid);
/* The parent's atfork handler: count the child in the archive header when recording. */
void nt_fork_parent_counted(void);
/* The child's atfork handler: a pending own session when the parent was recording (or was
 * itself a pending child); base is the parent's archive path or NULL. */
void nt_fork_child_prepare(int parent_pid, int parent_recording, const char *base);
/* nt_start() in a pending child: the lazy start is not wanted. */
void nt_fork_child_cancel(void);
/* The cold path (tag NT_TAG_FORKED): a pending child starts its session once. 1: recording now, try
 * again; -1: the child could not start (the event is counted as not recorded); 0: nothing
 * to do with fork (count the event as usual). */
int nt_fork_child_first_event(void);
/* nt_finish(path) in a lazily started child: the path beside `path` (buf), else path. */
const char *nt_fork_finish_path(const char *path, char *buf, size_t cap);
/* How a pending child starts its session: nt_start (nt_lifecycle.c, above nt_fork.c). */
extern nt_result (*const nt_fork_child_start)(const nt_config *cfg);

/* nt_session.c: choose the clock of the manager's sessions now, on the registering thread
 * (once). */
void nt_session_prepare_manager_clock(void);
/* Initialize a session in the memfd `memfd` the trace manager gave (nt_arena_map_fd takes
 * it), with cfg's mode, sizes, categories and process name; cfg->path must be NULL. */
nt_result nt_session_initialize_fd(const nt_config *cfg, int memfd);
/* Let go of a manager-given arena (TERMINATE, fork child): recording off, the mapping
 * replaced by private zero pages (a writer still inside an event writes there harmlessly),
 * the memfd closed, the session IDLE. */
void nt_session_release_fd(void);

/* nt_provider.c: the lifecycle without the manager-mode guard of the public functions, for
 * nt_lifecycle.c and the provider thread. Initialize a session (nt_provider_initialize's
 * work) in a memfd the manager gave (memfd >= 0), else as cfg says; `fifo` >= 0: streaming
 * saves go to the manager over it. Its exit and signal handlers are installed. */
nt_result nt_provider_setup(const nt_config *cfg, int memfd, int fifo);
/* nt_provider_start() and nt_provider_stop()'s work: one start/stop run. */
nt_result nt_provider_run_start(nt_buffer_disposition disposition, const char *additional);
nt_result nt_provider_run_stop(void);
/* Nonzero when the session's mode is streaming and its saves go to the manager. */
int nt_provider_remote_streaming(void);

#endif /* NT_INTERNAL_H */
