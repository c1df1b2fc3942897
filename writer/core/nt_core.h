/*
 * nt_core.h - what the writer's core offers the layers built on it (writer/trace2/), beside
 * the public API of <nanotrace/nanotrace.h>. Not installed.
 *
 * The core never names a layer: a layer that must act at a core event (a fatal signal, a
 * start that cleared the durable region) registers a hook here. Layers include this header,
 * never nt_internal.h, so the core's session state stays the core's.
 */
#ifndef NT_CORE_H
#define NT_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <nanotrace/nanotrace.h>
#include "nt_clock.h" /* the session clock, for layers that time things */

/* Hooks a layer registers (NULL to remove). Each is called from the core's slow path:
 *   on_fatal_signal   first thing in the fatal-signal handler of a file-backed arena, with
 *                     recording still on: it may record one last event; async-signal-safe
 *                     code only.
 *   on_durable_cleared  after a start that cleared the durable region (CLEAR_ENTIRE):
 *                     durable records the layer wrote before must be written again.
 *   fork_child_path   in a fork() child, at its first event, before its own session starts
 *                     (nanotrace.h, FORK): `path` holds the archive the core chose beside
 *                     the parent's ("" for an anonymous arena), of `cap` bytes; the layer
 *                     may rename it (Trace2: after the child's new SID). No event here.
 *   on_fork_child_started  right after that session started: the layer writes its durable
 *                     records for the child (Trace2: the child's ProcessRecord). */
typedef struct nt_core_hooks {
	void (*on_fatal_signal)(int sig);
	void (*on_durable_cleared)(void);
	void (*fork_child_path)(char *path, size_t cap);
	void (*on_fork_child_started)(void);
} nt_core_hooks;
void nt_core_set_hooks(const nt_core_hooks *hooks);

/* Registers `site` (and the names of `args`, its first call's arguments) for the current
 * session ahead of its first event, so that a later emit (from a signal handler, say) takes
 * no lock; returns its state, or 0 when the event would be dropped (and counted). */
uint32_t nt_callsite_resolve(nt_callsite *site, const nt_arg *args);

/* Writes a ProcessRecord (a SID, the process start and its UTC offset) into the durable region;
 * 0 when not recording or the region is full. */
int nt_write_process_record(const char *sid, uint32_t flags, uint64_t start_ticks,
			    int32_t utc_offset);

/* Starts a session from NANOTRACE and the NANOTRACE_* variables (nt_start_from_env()'s
 * parser), naming a per-process file `unique` (in a directory target, or beside a file
 * target another process already took). *too_many_files (may be NULL) is set when the
 * trace went to the NANOTRACE_MAX_FILES sentinel. Returns nt_start_from_env()'s results. */
nt_result nt_env_start(const char *unique, int *too_many_files);
/* NANOTRACE_EVENT without NANOTRACE: a session whose arena only a follower reads (the Trace2
 * layer's forwarder): circular, of NANOTRACE_BUFFER_SIZE or NT_PRIVATE_ARENA_BYTES, a file
 * named `unique` in a fresh 0700 directory (nt_internal.h: nt_private_arena_path) that the
 * process removes at exit and on a fatal signal, never finished into an archive; a fork()
 * child's arena is private in a directory of its own. The other NANOTRACE_* settings apply
 * (NANOTRACE_MODE is checked, then circular). Returns nt_env_start()'s results. The size:
 * each poll of the follower copies and reads the whole arena, so 1 MiB every
 * NT_TRACE2_FORWARD_INTERVAL_MS is about 5 MB/s of copying (bench/PERFORMANCE.md). */
#define NT_PRIVATE_ARENA_BYTES (1u << 20)
nt_result nt_env_start_private(const char *unique);
/* The file of a file-backed session's arena (a follower may open it), or NULL: no session,
 * an anonymous arena, or a trace manager's buffer. */
const char *nt_core_arena_path(void);
/* After a follower opened the private arena (nt_env_start_private): its file is unlinked,
 * its directory kept until exit (a fork() child's arena goes in one of its own). Nothing
 * for any other session. */
void nt_core_private_arena_unlink(void);

/* A variable's value as a warning may show it, on one line whatever it holds: bytes below
 * 0x20, 0x7f and above, '\\' and '\'' written as \xNN (so no newline or terminal escape
 * gets through), at most 64 of its bytes followed by "... (N bytes)". Returns out. */
#define NT_ENV_SHOWN_MAX 340
const char *nt_env_shown(const char *v, char out[NT_ENV_SHOWN_MAX]);

/* One warning line on stderr, "nanotrace: <message>\n", written with a single write(2) so
 * that lines of concurrent processes never interleave. */
void nt_env_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* NT_CORE_H */
