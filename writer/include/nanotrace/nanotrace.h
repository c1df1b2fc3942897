/*
 * nanotrace.h - record events from latency-sensitive code at about the cost of a clock read.
 *
 * QUICK START
 *
 *     nt_config cfg;
 *     nt_config_init(&cfg);                  // 4 MiB arena, oneshot, all categories
 *     if (nt_start(&cfg) != NT_OK) fprintf(stderr, "%s\n", nt_last_error());
 *     ...
 *     NT_BEGIN("io", "read", NT_I64("fd", fd));
 *     NT_END("io", "read");
 *     { NT_SCOPE("db", "query"); ... }       // ends when the block exits
 *     NT_COUNTER("mem", "heap", NT_U64("bytes", heap_bytes));
 *     ...
 *     if (nt_finish("out.ntrace") != NT_OK) fprintf(stderr, "%s\n", nt_last_error());
 *
 * Then `trace-dump out.ntrace` prints the events, `trace-dump --format chrome` makes JSON for
 * Perfetto UI, and `trace-dump --stats` counts them.
 *
 * HOW IT WORKS
 *   nt_start() maps one arena: a durable region (strings, threads, call sites: kept for the
 *   whole session; if it fills, recording stops and every later event is counted as
 *   dropped) and two rolling halves cut into fixed-size chunks. A thread claims a whole chunk
 *   with one atomic fetch-and-add (a compare-and-swap in streaming mode, and one more to take
 *   over a slot once the arena has wrapped) and then appends event records (4 bytes for
 *   an event without arguments, 4 more per small integer argument) with plain stores;
 *   each record is published by a store of its first word, made after its body. Each event
 *   macro owns a static call site (category, name, file, line) that is interned on its first
 *   use, so afterwards an event costs: one load of the session tag, one load of the site's
 *   cached state, one clock read, one store. No lock, no system call and no allocation happens
 *   on that path; the first event of a thread or of a call site takes a lock and makes a few
 *   system calls (thread id, thread name) to register it. In streaming mode a chunk claim
 *   that completes a rolling half, or finds the saver a sixteenth of the arena behind, also
 *   wakes the saver's thread (one futex call; at most one per sixteenth of the arena).
 *
 * COMPILE-TIME OFF SWITCH
 *   Define NTRACE before including this header and every NT_* event macro expands to nothing
 *   (its arguments are not evaluated), and so do the NT_T2_* macros of nanotrace_trace2.h
 *   (those with a value expand to it: NT_T2_CMD_EXIT(code) to (code)). A program that uses
 *   only the macros then links without libnanotrace; the nt_* functions stay declared.
 *
 * THREADS
 *   All functions are thread-safe. Events from a thread are recorded in the order the thread
 *   made them. nt_start() and nt_finish() must not run concurrently with each other; an event
 *   that races with nt_finish() on another thread is either in the archive or not, and is
 *   then not counted anywhere: stop your threads' tracing (or join them) before nt_finish()
 *   when every event must be accounted for.
 *
 * FORK
 *   A session belongs to the process that started it; the parent's archive is exactly what
 *   the parent recorded, whatever a child does (_exit, exit, exec, killed): a child never
 *   writes to the parent's file or arena. The child of a process that is recording (handlers
 *   are registered with pthread_atfork by the first nt_start()) records into an archive of
 *   its own, started at its first event, with the parent's configuration (mode, sizes,
 *   clock, categories, compression, file mode, process name) and a path beside the parent's:
 *     file-backed parent "P.ntrace" -> the child's "P.<child pid>.ntrace"; any other name
 *                             "P" -> "P.<child pid>" (a NANOTRACE directory target's
 *                             per-process file included: the child's is beside it); created
 *                             as every archive is (FILES), finished by the child's nt_finish()
 *                             or exit(), readable as an arena image if it is killed;
 *     anonymous arena         the child's is anonymous too, written where its nt_finish(path)
 *                             says, turned into the path beside `path` by the same rule (so
 *                             never over the parent's); like the parent's, it is lost at
 *                             _exit() (exit() without nt_finish() prints the usual
 *                             "was never finished" line);
 *     Trace2 (NANOTRACE)      the child gets a new SID "<parent SID>/<own>", and in a
 *                             directory target its file is named by its last component.
 *   A grandchild follows the same rule from the child's archive. A child that makes no event
 *   (fork()+exec(), fork()+_exit()) creates no file and costs nothing more than fork().
 *   The parent's header counts the children forked while it recorded (children_forked) and
 *   the child's names its parent (forked_from): `trace-dump --stats` shows both.
 *   Cost: the parent's event path is unchanged; its fork() adds one atomic add to a header
 *   counter, and the child's fork() handler one string copy of the path. The child's events
 *   carry a session tag that no call site matches, so its first event takes the cold path,
 *   which starts the session once (under a lock the child made anew) and records the event;
 *   from then on events take the usual paths.
 *   Errors: if the child's archive cannot start (path unusable, disk full, memory), the
 *   child prints one line on stderr "nanotrace: fork() child <pid> of <ppid>: its archive
 *   '<path>' could not be started: <nt_last_error()>; ...", counts every event it does not
 *   record, and at exit() prints "nanotrace: fork() child <pid>: <n> events not recorded
 *   (...)". Before its first event the child may nt_start() a session of its own instead
 *   (then no archive is made beside the parent's); nt_finish() there fails with NT_ERR_STATE
 *   naming the parent's pid. nt_is_recording() is nonzero in a child that will record (and
 *   in one whose archive could not start: its events still reach the library, to be
 *   counted).
 *   A child of a process registered with a trace manager registers as a provider of its own
 *   (MANAGER MODE) instead. Do not fork() while nt_start() or nt_finish() runs.
 *
 * FILES
 *   Every file is first created under a fresh random name beside its final path (mkostemp:
 *   O_EXCL and O_CLOEXEC, so a link planted at any name is never followed), with mode
 *   nt_config.file_mode (default 0600, the umask not applied), then renamed into place. If
 *   the final path is a symbolic link, the archive is refused (NT_ERR_IO, the message names
 *   the path): the link is neither followed nor replaced, and its target is never written.
 */
#ifndef NANOTRACE_H
#define NANOTRACE_H

#include <stddef.h>
#include <stdint.h>

#include "nt_format.h" /* record kinds, argument types and buffering modes */
#include "nt_version.h" /* NT_VERSION_STRING, NT_VERSION_MAJOR ... NT_VERSION_NUMBER */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Results -------------------------------------------------------------------------- */

/* Every function that can fail returns one of these; nt_last_error() then describes the
 * failure in one line naming what failed and where (for example the file path). */
typedef enum nt_result {
	NT_OK = 0,
	NT_ERR_INVALID_ARGUMENT = -1, /* a NULL or out-of-range argument, or a bad config */
	NT_ERR_STATE = -2,            /* nt_start() while recording, nt_finish() without start */
	NT_ERR_NO_MEMORY = -3,        /* the arena could not be mapped, or memory ran out */
	NT_ERR_IO = -4,               /* the archive could not be opened or written */
	NT_ERR_UNSUPPORTED = -5,      /* a mode or clock this build or machine cannot provide */
	NT_DISABLED = 1,              /* nt_start_from_env(): NANOTRACE is unset: not recording,
	                                 and not an error (failures are all negative) */
} nt_result;

/* The last failure seen by the calling thread, as one line (control characters that a
 * quoted path or value held are written as '?'); "" if none (each thread has its own: a
 * failure on another thread does not change it). Cost: none. Never NULL. */
const char *nt_last_error(void);

/* ---- Configuration --------------------------------------------------------------------- */

typedef enum nt_clock_choice {
	NT_CLOCK_AUTO = 0,      /* invariant TSC where the CPU has one, else CLOCK_MONOTONIC */
	NT_CLOCK_USE_MONOTONIC, /* always clock_gettime(CLOCK_MONOTONIC) */
	NT_CLOCK_USE_TSC,       /* rdtsc; nt_start() fails with NT_ERR_UNSUPPORTED if not invariant */
} nt_clock_choice;

/* GROWING STRUCTS
 *   nt_config may gain fields in later versions, always at its end. Fill it with
 *   nt_config_init() (which sets struct_size to the size this program was compiled with)
 *   and then set fields by name; never build one from scratch. The library reads only the
 *   caller's struct_size bytes: fields a caller compiled against an older header does not
 *   have take their defaults. A struct_size that is not an nt_config's (0: the config was
 *   never initialized) fails with NT_ERR_INVALID_ARGUMENT; a field this library does not
 *   know, set to a non-default value by a program built against a newer header, fails with
 *   NT_ERR_UNSUPPORTED. */
typedef struct nt_config {
	size_t struct_size;     /* set by nt_config_init(): sizeof(nt_config) as compiled */
	size_t buffer_size;     /* arena bytes, at least 64 KiB, at most 4 GiB; 0 (default):
	                           4 MiB, 16 MiB in streaming mode (NT_DEFAULT_*BUFFER_BYTES) */
	size_t chunk_size;      /* chunk bytes: a power of two, 4 KiB to 64 KiB; 0 (default) =
	                           16 KiB, or less (down to 4 KiB) so each rolling half holds
	                           at least 4 chunks */
	int mode;               /* NT_MODE_ONESHOT (default): record until the rolling halves
	                           are full, then drop and count; NT_MODE_CIRCULAR: keep the
	                           newest chunks, overwrite the oldest, count wraps;
	                           NT_MODE_STREAMING: a saver thread appends what the writers
	                           publish to the file at `path` (required) as they go, and
	                           each chunk's space is reused once it is saved; a writer that
	                           comes round to a chunk not yet saved drops and counts, never
	                           waits. Size the arena for the saver's worst stall: at 1.3
	                           GB/s of events the 16 MiB default covers about 12 ms */
	nt_clock_choice clock;  /* default NT_CLOCK_AUTO; the environment variable
	                           NANOTRACE_CLOCK=monotonic|tsc overrides AUTO */
	const char *categories; /* comma-separated items, each an exact name, a prefix ending
	                           in '*' ("net:*") or "*" alone; NULL = all, "" = none.
	                           Names hold letters, digits and _-.:/+ only; anything else
	                           (a space, an empty item, a '*' not at an item's end) makes
	                           nt_start() fail with NT_ERR_INVALID_ARGUMENT naming the
	                           position. Copied by nt_start(). */
	const char *process_name; /* stored in the archive; NULL = the program's name */
	const char *path;       /* NULL (default): the arena is anonymous memory and nt_finish()
	                           names the archive. Otherwise the arena IS this file, mapped
	                           shared: a process killed at any moment (even by SIGKILL)
	                           leaves a readable archive here, and nt_finish(NULL) compacts
	                           it in place. The file appears only once its header is
	                           written, and is replaced if it exists; a symbolic link there
	                           is refused (NT_ERR_IO naming the path), never followed or
	                           replaced. Copied by nt_start(). */
	unsigned file_mode;     /* permissions of the archive files, set exactly (the umask
	                           does not apply); 0 (default) = 0600, private to the user:
	                           a trace holds command lines, paths, config and environment
	                           values (SECURITY.md). Files are created under a random name
	                           beside `path` (O_EXCL, O_CLOEXEC) and renamed into place */
	int handle_signals;     /* with a path: on SIGTERM, SIGINT, SIGSEGV, SIGBUS, SIGABRT and
	                           SIGPIPE, stop recording, record the signal in the archive,
	                           restore the previous disposition and re-raise (so a program
	                           that ignores SIGPIPE keeps ignoring it, and one killed by it
	                           still dies of it); at exit(), finish the archive. Default 1.
	                           Handlers stay installed for the process. */
	int compression_level;  /* zstd level of the chunks of saved archives (nt_finish()'s
	                           file and streaming mode's saved stream; a file-backed arena
	                           itself is never compressed, so a killed process's file reads
	                           as it is): 0 (default) = the variable NANOTRACE_COMPRESSION
	                           if set, else NT_COMPRESSION_DEFAULT; NT_COMPRESSION_OFF =
	                           store chunks uncompressed; otherwise -50 (fastest) to 22
	                           (smallest). Compression runs in the saver thread or in
	                           nt_finish(), never on the event path; a chunk that would not
	                           shrink is stored as it is. Anything else: nt_start() fails
	                           with NT_ERR_INVALID_ARGUMENT. */
	long long blocking_timeout_us; /* streaming mode: what a writer does when the saver is
	                           behind and no chunk is free (LTTng-UST's --blocking-timeout).
	                           0 (default) = the variable NANOTRACE_BLOCKING_TIMEOUT if set
	                           (microseconds, or "off"), else never wait: drop and count,
	                           as ever; NT_BLOCKING_OFF = never wait, whatever the variable;
	                           1 to NT_BLOCKING_TIMEOUT_MAX_US = wait up to that many
	                           microseconds for the saver to free a chunk, then drop and
	                           count (rolling full); a thread whose wait ran out does not
	                           wait again until the saver shows progress, so a stuck saver
	                           costs each thread one timeout, not one an event (under a
	                           trace manager, progress is its answer to a full half). Only
	                           the claim of a new chunk waits:
	                           while the thread's chunk has room an event costs what it
	                           always did. A wait spins briefly, then sleeps (futex) until
	                           the saver reports progress; it ends at once when recording
	                           stops (nt_finish, a stop, a fatal signal, exit) and never
	                           happens in a fork() child before its own session. Each
	                           thread's waits, their time and those that timed out are in
	                           the archive (trace-dump --stats). Ignored in the other
	                           modes; anything else fails with NT_ERR_INVALID_ARGUMENT.
	                           Unlike LTTng-UST's, there is no endless wait (a saver that
	                           never comes back would hang the program), and the program's
	                           own setting (or the variable) is the one opt-in. */
} nt_config;

/* nt_config.blocking_timeout_us: never wait, and the longest wait (10 s) accepted. */
#define NT_BLOCKING_OFF (-1)
#define NT_BLOCKING_TIMEOUT_MAX_US 10000000LL

/* The largest NANOTRACE_BUFFER_SIZE nt_start_from_env() and NT_T2_INITIALIZE accept: the
 * variable reaches every child process, and each would reserve (and touch) that much.
 * A program that needs a larger arena sets nt_config.buffer_size (up to 4 GiB). */
#define NT_ENV_MAX_BUFFER_BYTES (256u << 20)

/* nt_config.compression_level: the level used when neither the config nor
 * NANOTRACE_COMPRESSION sets one, and the value that turns compression off. */
#define NT_COMPRESSION_DEFAULT 1
#define NT_COMPRESSION_OFF (-1000)

/* The NT_MODE_* named "oneshot", "circular" or "streaming" (for command lines and
 * environment variables); -1 for any other string or NULL. Cost: a few string compares. */
int nt_mode_from_name(const char *name);

/* Fill *cfg with the defaults above, and cfg->struct_size with sizeof(nt_config) (see
 * GROWING STRUCTS). Cost: a few stores. cfg == NULL is ignored. */
void nt_config_init(nt_config *cfg);

/* ---- Version ----------------------------------------------------------------------------- */

/* The version of the library running the program, "MAJOR.MINOR.PATCH": NT_VERSION_STRING of
 * the build it comes from, which may differ from the NT_VERSION_STRING the program was
 * compiled with (a newer shared library). Cost: none. Never NULL. */
const char *nt_version(void);

/* ---- Session --------------------------------------------------------------------------- */

/* Map and pre-fault the arena (of cfg->path, if set), calibrate the clock and start
 * recording; streaming mode also starts its provider and saver threads. A session of an
 * anonymous arena (no cfg->path) still recording when the process exits prints one line on
 * stderr ("nanotrace: session started at ... was never finished: N events not written;
 * call nt_finish()"): its events would otherwise vanish without a word.
 * Cost: one mmap of buffer_size bytes, touching every page, and about 2 ms of clock
 * calibration when the TSC is used; a file-backed arena also reserves its blocks and has
 * its first 64 MiB faulted in writable and dirty (about 0.3 ms a MiB), so that no event
 * takes the file system's first-write fault there: the kernel writes a session's arena
 * back once it has been dirty 30 s, as it does any file's dirty pages (a page written back
 * faults once more when next written), and a successful nt_finish() throws those pages
 * away instead.
 * Errors: NT_ERR_INVALID_ARGUMENT for cfg == NULL, a cfg not filled by nt_config_init()
 * (its struct_size), sizes out of range (the message names the field and the allowed
 * range), a malformed category pattern (the message names it and the position) or
 * streaming without a path; NT_ERR_UNSUPPORTED for a field this library does not know
 * (see GROWING STRUCTS); NT_ERR_STATE if already initialized; NT_ERR_NO_MEMORY; NT_ERR_IO if the file cannot be created or sized (the
 * message names it); NT_ERR_UNSUPPORTED for a demanded TSC that is not invariant.
 * Fork: a child of fork() does not inherit the session: it records into its own, beside
 * the parent's, from its first event, or may call nt_start() for one of its own before that
 * (see FORK above).
 * Registered with a trace manager (NANOTRACE_MANAGER): returns NT_OK and starts nothing;
 * the manager's session is the process's (see MANAGER MODE below). */
nt_result nt_start(const nt_config *cfg);

/* Start recording if the environment asks for it, as NT_T2_INITIALIZE does for Trace2
 * programs (nanotrace_trace2.h, ENABLING; call one or the other, not both):
 *   NANOTRACE=<absolute path>   an existing directory gets one archive per process, named
 *                               "<program>-<UTC start time>-P<pid>.ntrace" (created with
 *                               O_EXCL, retried as .1 ... .9); any other path is the archive
 *                               itself, a file-backed arena (mode 0600), finished at exit()
 *                               or by nt_finish(NULL); a second process given the same
 *                               file writes "<file>.<its own name>" beside it instead.
 *                               Unset, "", "0" or "false": nothing is recorded.
 *   NANOTRACE_MODE=oneshot|circular|streaming, NANOTRACE_BUFFER_SIZE=<bytes>[K|M|G],
 *   NANOTRACE_CATEGORIES=<patterns>, NANOTRACE_CLOCK=auto|monotonic|tsc
 *                               the nt_config fields of the same names (empty: default);
 *                               the buffer size from 64K to NT_ENV_MAX_BUFFER_BYTES (256M),
 *                               digits first (no sign, no blank). nt_start() itself reads
 *                               NANOTRACE_CLOCK when cfg.clock is NT_CLOCK_AUTO: garbage
 *                               there prints one line on stderr naming it, and AUTO is used.
 *   NANOTRACE_COMPRESSION=off|0|<level>
 *                               read by nt_start() itself (so it applies to every session
 *                               whose config leaves compression_level 0): the zstd level of
 *                               saved archives, -50 to 22; off or 0 stores them
 *                               uncompressed. A value that is none of these prints one line
 *                               on stderr naming it, and NT_COMPRESSION_DEFAULT is used.
 *   NANOTRACE_BLOCKING_TIMEOUT=off|<microseconds>
 *                               read by nt_start() itself (every session whose config leaves
 *                               blocking_timeout_us 0, a trace manager's provider included:
 *                               `NANOTRACE_BLOCKING_TIMEOUT=1000000 trace-record -m streaming
 *                               ...` makes the traced processes wait): how long a streaming
 *                               writer waits for the saver to free a chunk, 0 to
 *                               NT_BLOCKING_TIMEOUT_MAX_US; off or 0 never waits (the
 *                               default). Digits only; anything else prints one line on
 *                               stderr naming it, and writers never wait.
 *   NANOTRACE_MAX_FILES=<n>     (0 to 2147483647; 0: no limit)
 *                               directory targets: at n entries or more (. and .. counted)
 *                               the trace goes to "nanotrace-discard", and once that exists
 *                               later processes record nothing (NT_DISABLED).
 * In a set-user-ID or set-group-ID program these variables are ignored (secure_getenv):
 * NANOTRACE reads as unset, and nt_start_from_env() returns NT_DISABLED.
 * Returns NT_OK when recording, NT_DISABLED (1, not an error) when NANOTRACE does not ask
 * for it; NT_ERR_INVALID_ARGUMENT for a malformed value (nt_last_error() names the variable
 * and shows its value on one line: control and non-ASCII bytes as \xNN, at most 64 bytes of
 * it; a NANOTRACE path too long for a per-process name is one too), NT_ERR_IO when the file
 * cannot be created, and nt_start()'s errors
 * (NT_ERR_STATE when already recording). Nothing is printed. Cost: a few getenv() and one
 * file creation, then nt_start()'s. Registered with a trace manager: NT_OK, no file is
 * created and nothing is started (see MANAGER MODE below). */
nt_result nt_start_from_env(void);

/* Stop recording and write the compact archive to `path` (created with file_mode, default
 * 0600, replaced if it exists; a symbolic link there is refused with NT_ERR_IO naming the
 * path, never followed or replaced); with a
 * file-backed arena, path == NULL compacts the arena's own file in place, and another path
 * moves the archive there (the arena file is removed). Streaming: the saver saves what is
 * left, the header is rewritten to point at the saved stream, and the arena's blocks in the
 * file are released (a hole).
 * Cost: one write of the used part of the arena; allocates a table of chunk slots.
 * Errors: NT_ERR_INVALID_ARGUMENT for path == NULL without a file-backed arena, NT_ERR_STATE
 * if nt_start() did not succeed, if this session's archive was already written (a second
 * nt_finish() after one that returned NT_OK), or in a fork() child of the session's process, NT_ERR_IO if
 * the file cannot be created or written (the message names the path and the reason),
 * NT_ERR_NO_MEMORY if memory ran out (compacting, or while the saver streamed).
 * Recording is stopped in every case; after NT_ERR_IO the recorded data is still in the
 * arena (and, file-backed, in its file, which stays a readable archive) and nt_finish() may
 * be called again.
 * A write that fails (a full disk, EFBIG, EIO) still leaves a readable archive that records
 * why saving stopped (the header's SAVE_ERRNO) and counts the events it could not hold as
 * dropped (DROPPED_UNSAVED), so a reader's account stays exact: an arena in memory leaves
 * `path` holding what was written, cut at the last whole record (a later nt_finish() replaces
 * it); a file-backed arena keeps its file as recorded, every event in it; a streaming
 * session whose saver failed (then, or while recording: writers that found no free chunk
 * counted their events as not saved) ends as an archive of the stream saved before the
 * failure, and a later nt_finish() returns the same error. The message then says what was
 * kept. If even rewriting the header fails, the message says so.
 * Registered with a trace manager: `path` is ignored; recording stops, the manager gets the
 * final save (streaming) and STOPPED, the connection closes, and NT_OK is returned (also on
 * later calls; see MANAGER MODE below). */
nt_result nt_finish(const char *path);

/* Nonzero between a successful nt_start() and nt_finish(), and in a fork() child of a
 * recording process, whose first event starts its own session (see FORK). Cost: one load. */
int nt_is_recording(void);

/* ---- Provider lifecycle (fuchsia.tracing.provider) ---------------------------------------
 * nt_start() is initialize + start(CLEAR_ENTIRE); nt_finish() is terminate. A buffer can hold
 * several start/stop runs between initialize and terminate. While stopped, events are not
 * recorded and not counted (tracing is off). Do not make events on other threads while
 * start or stop runs: a start reuses the chunks those threads held.
 */
typedef enum nt_buffer_disposition {
	NT_BUFFER_CLEAR_ENTIRE = 0,     /* drop everything, durable data too: call-site and thread
	                                   caches are invalidated, counters restart */
	NT_BUFFER_CLEAR_NONDURABLE = 1, /* drop the events, keep strings, threads and call sites
	                                   (their references stay valid); counters restart */
	NT_BUFFER_RETAIN = 2,           /* keep everything and append the new run */
} nt_buffer_disposition;

/* Map the arena and prepare recording, without starting it. NT_ERR_STATE (and no effect)
 * if already initialized and not yet terminated; other errors as nt_start(). */
nt_result nt_provider_initialize(const nt_config *cfg);

/* Start recording with `disposition` for the data already in the buffer, and
 * `additional_categories` (same pattern syntax, NULL or "" for none) added to the
 * configured set for this run. Ignored (NT_OK) if already recording; NT_ERR_STATE if not
 * initialized; NT_ERR_INVALID_ARGUMENT for an unknown disposition or a malformed pattern
 * (nothing is started). Cost: clears what the disposition
 * says to clear (up to the whole arena). */
nt_result nt_provider_start(nt_buffer_disposition disposition, const char *additional_categories);

/* Stop recording; the buffer keeps its data. Ignored (NT_OK) if already stopped;
 * NT_ERR_STATE if not initialized. */
nt_result nt_provider_stop(void);

/* Stop if needed and write the archive, as nt_finish(). */
nt_result nt_provider_terminate(const char *path);

/* ---- The trace manager (fuchsia.tracing.provider across processes) ------------------------
 * A trace manager (nanotrace-manager, or trace-record's embedded one) records many processes
 * into one archive. A process registers with it over a Unix socket and then obeys it: the
 * manager hands it its buffer (a memfd the manager keeps, so a process killed at any moment
 * still contributes every event it published) and starts and stops it; the process's own
 * provider thread handles those messages, never the event path (which still sees only the
 * session tag: no lock, system call or allocation is added there).
 *
 * AUTOMATIC REGISTRATION
 *   When NANOTRACE_MANAGER is set (and not empty) at start-up, libnanotrace registers the
 *   process before main() as `program_invocation_short_name`, with no code change: the
 *   process and every descendant that links libnanotrace (Trace2 programs included) are
 *   traced under `trace-record -- COMMAND`. It waits for the manager's answer up to
 *   NANOTRACE_REGISTER_TIMEOUT milliseconds (default 3000; 0 = do not wait; at most 60000),
 *   so that a trace already running records the program from its first event. A malformed
 *   or larger timeout prints one line on stderr naming it, and the default is used. A
 *   manager out of reach prints "nanotrace: cannot reach the trace manager at PATH: REASON;
 *   not tracing (NANOTRACE_MANAGER)" and the program runs on untraced by a manager (its own
 *   nt_start() and NANOTRACE work as without one). A manager that runs as another user
 *   than the process's effective one (root excepted: SO_PEERCRED of its socket) is
 *   refused: "nanotrace: the trace manager at PATH runs as uid U, not V; not tracing
 *   (NANOTRACE_MANAGER)", so a socket planted by another user receives nothing. Each
 *   warning is one line: control characters in it are written as '?'. In
 *   a set-user-ID or set-group-ID program NANOTRACE_MANAGER is ignored (secure_getenv).
 *
 * MANAGER MODE
 *   From a successful registration on, for the rest of the process, the session belongs to
 *   the manager: nt_start(), nt_start_from_env() and Trace2's NT_T2_INITIALIZE return NT_OK
 *   without starting a session of their own (events go to the manager's buffer whenever it
 *   records; nt_is_recording() says when); nt_finish() (and exit()) stops recording, makes
 *   the final save (streaming), tells the manager STOPPED and closes the connection, and
 *   returns NT_OK (the manager records the process as exited); nt_provider_initialize(),
 *   nt_provider_start(), nt_provider_stop() and nt_provider_terminate() fail with
 *   NT_ERR_STATE. A manager that goes away (or breaks the protocol) costs one line on
 *   stderr; recording stops (later events are counted as dropped in the buffer it may still
 *   hold) and the program runs on. NT_* events made while the manager is not recording
 *   are neither recorded nor counted (Trace2 messages made while a started buffer is
 *   stopped are counted as dropped, as in-process). exit() waits for the final save of a
 *   streaming manager at most 2 s, and never for a manager that does not read its FIFO.
 *
 * FORK
 *   A fork() child of a registered process never touches its parent's buffer; before fork()
 *   returns in the child it registers anew as a provider of its own (same name, same
 *   NANOTRACE_REGISTER_TIMEOUT rule), so its events go to a buffer and a section of its own.
 *   fork() therefore takes up to a round trip to the manager in the child (with a trace
 *   running: its buffer's INITIALIZE and START too). A child that exec()s a program linking
 *   libnanotrace registers again from that program (the forked registration ends at exec).
 *   posix_spawn(), system() and popen() run no fork handlers: no registration before exec.
 */

/* Registers this process with the trace manager at `socket_path` (NULL: $NANOTRACE_MANAGER)
 * under `name` (NULL: program_invocation_short_name; at most 100 bytes) and returns at once:
 * the provider thread handles everything that follows (see MANAGER MODE).
 * Cost: one socket, connect and send, and one thread (a manager whose accept queue is full
 * is tried again for up to 1 s, then NT_ERR_IO).
 * Errors: NT_ERR_INVALID_ARGUMENT for no path (NULL and NANOTRACE_MANAGER unset), a path
 * longer than a Unix socket address or a name longer than 100 bytes; NT_ERR_IO when the
 * manager cannot be reached (nt_last_error(): "cannot reach the trace manager at PATH:
 * REASON") or runs as another uid than this process's euid and not as root ("the trace
 * manager at PATH runs as uid U, not V"); NT_ERR_STATE when already registered or while a session of the program's own is
 * running; NT_ERR_NO_MEMORY when the thread cannot be started. Nothing changes on error. */
nt_result nt_provider_register(const char *socket_path, const char *name);

/* The same, then waits up to `timeout_ms` for the manager's answer; *started (may be NULL)
 * is 1 when the manager had a trace running and started this process: the session is
 * recording on return. A timeout is not an error (*started is 0 and the registration
 * stands). Cost: nt_provider_register()'s, plus the wait (up to timeout_ms; the manager
 * answers in one round trip). Errors: nt_provider_register()'s, NT_ERR_INVALID_ARGUMENT for
 * a negative timeout_ms, and NT_ERR_IO when the manager closed the connection instead of
 * answering. */
nt_result nt_provider_register_sync(const char *socket_path, const char *name, int timeout_ms,
				    int *started);

/* Nonzero while this process is connected to a trace manager as a provider. Cost: a mutex. */
int nt_provider_is_registered(void);

/* Counters of the current (or last) session. Cost: a few atomic loads plus the intern
 * lock (a mutex, uncontended except against threads registering a call site), about
 * 100 ns: call it from a monitoring path, not per event. out == NULL is ignored. */
typedef struct nt_stats {
	uint64_t events_dropped;     /* events not recorded, the sum of the three reasons (and,
	                                streaming, of the events not saved once the saver's
	                                writes failed: the archive's dropped_unsaved): */
	uint64_t dropped_rolling_full; /* no chunk to write into (oneshot full, every slot busy) */
	uint64_t dropped_durable_full; /* recording halted: durable region or index space full */
	uint64_t dropped_stopped;    /* made while nt_finish() stopped recording */
	uint64_t events_overwritten; /* events in chunks that circular mode reused */
	uint64_t wraps;              /* times circular mode started reusing a rolling half */
	uint64_t durable_dropped;    /* strings, threads or call sites that did not fit */
	uint64_t values_truncated;   /* events recorded with a string or list argument cut to fit
	                                one record */
	uint64_t chunks_claimed;     /* chunks handed to threads */
	uint32_t threads;            /* threads registered */
	uint32_t callsites;          /* call sites registered */
	uint32_t strings;            /* strings interned */
} nt_stats;
void nt_get_stats(nt_stats *out);

/* Name the calling thread in the archive (a new Thread record for its index; the newest name
 * wins). Without it a thread is named by its kernel name (pthread_setname_np / prctl). The
 * name (its first 31 bytes) is kept for the thread's records in later sessions too.
 * Cost: takes the intern lock and, while recording, writes one durable record. NULL or ""
 * is ignored; the name is remembered whether or not a session is recording. */
void nt_thread_set_name(const char *name);

/* Nonzero if events of `category` are recorded in the current session (recording, and the
 * category matches the configured list). Cost: takes the intern lock and matches the pattern
 * list: use it to guard expensive argument computation, not on every event; the NT_* macros
 * already cache this per call site. NULL returns 0. */
int nt_category_enabled(const char *category);

/* Current clock reading in ticks, for NT_COMPLETE's start time. Cost: one clock read. */
uint64_t nt_now(void);

/* ---- Arguments ------------------------------------------------------------------------- */

typedef struct nt_arg {
	const char *name; /* see NT_I64() and nt_arg_i64() */
	uint8_t type;     /* NT_ARG_* of nt_format.h; use the NT_I64() ... macros */
	uint32_t length;  /* bytes of a string value */
	union {
		int64_t i64;
		uint64_t u64;
		double f64;
		const void *ptr;
		const char *str;
	} value;
} nt_arg;

/* Typed arguments for the event macros. An event of NT_BEGIN, NT_END, NT_INSTANT or
 * NT_COUNTER whose 1 to 4 arguments are integers or bools that fit 32 bits (signed for
 * NT_I64/NT_I32) is recorded compact: 4 bytes per value after a 4-byte head, the names and
 * types kept once per call site (format/nt_record.h; the first 1023 call sites, events less
 * than 2^14 ticks apart, TSC sessions). Otherwise an int64/uint64 value that fits 32 bits is
 * stored in 8 bytes, otherwise 16; doubles and pointers take 16; strings are copied inline
 * (8 bytes + length rounded up to 8) and truncated so that the event fits 2040 bytes (such
 * events are counted in nt_stats.values_truncated and the archive header); a NULL
 * string is recorded as "(null)".
 *
 * The name `n` of NT_I64() ... NT_STR() must be a string literal: a call site registers its
 * argument names once, on its first call, so a name taken from a variable would be frozen
 * at its first value; `NT_I64(names[i], i)` is therefore a compile error. A name known only
 * at run time goes through nt_arg_i64() ... nt_arg_str() into the *_DYN macros below.
 * Cost: a few register moves (the builders are inline). */
#define NT__LITERAL(n) ("" n "") /* a compile error unless n is a string literal */
#define NT_I64(n, v) nt_arg_i64(NT__LITERAL(n), (int64_t)(v))
#define NT_U64(n, v) nt_arg_u64(NT__LITERAL(n), (uint64_t)(v))
#define NT_I32(n, v) nt_arg_i64(NT__LITERAL(n), (int32_t)(v))
#define NT_U32(n, v) nt_arg_u64(NT__LITERAL(n), (uint32_t)(v))
#define NT_F64(n, v) nt_arg_f64(NT__LITERAL(n), (double)(v))
#define NT_BOOL(n, v) nt_arg_bool(NT__LITERAL(n), (v) ? 1 : 0)
#define NT_PTR(n, v) nt_arg_ptr(NT__LITERAL(n), (const void *)(v))
#define NT_STR(n, v) nt_arg_str(NT__LITERAL(n), (v))

/* The same arguments with any name (valid C and C++, unlike a compound literal). For the
 * *_DYN macros, which copy the name; given to the ordinary macros, the name must be the
 * same string on every call of the call site (its first value is the one recorded). */
static inline nt_arg nt_arg_make_(const char *name, uint8_t type)
{
	nt_arg a;
	a.name = name;
	a.type = type;
	a.length = 0;
	a.value.u64 = 0;
	return a;
}
static inline nt_arg nt_arg_i64(const char *name, int64_t v)
{
	nt_arg a = nt_arg_make_(name, NT_ARG_INT64);
	a.value.i64 = v;
	return a;
}
static inline nt_arg nt_arg_u64(const char *name, uint64_t v)
{
	nt_arg a = nt_arg_make_(name, NT_ARG_UINT64);
	a.value.u64 = v;
	return a;
}
static inline nt_arg nt_arg_f64(const char *name, double v)
{
	nt_arg a = nt_arg_make_(name, NT_ARG_DOUBLE);
	a.value.f64 = v;
	return a;
}
static inline nt_arg nt_arg_bool(const char *name, int v)
{
	nt_arg a = nt_arg_make_(name, NT_ARG_BOOL);
	a.value.u64 = v ? 1u : 0u;
	return a;
}
static inline nt_arg nt_arg_ptr(const char *name, const void *v)
{
	nt_arg a = nt_arg_make_(name, NT_ARG_POINTER);
	a.value.ptr = v;
	return a;
}
static inline nt_arg nt_arg_str(const char *name, const char *v)
{
	nt_arg a = nt_arg_make_(name, NT_ARG_STRING);
	a.value.str = v;
	return a;
}

/* ---- Call sites (used by the macros; the layout is not part of the API) --------------- */

typedef struct nt_callsite {
	uint32_t state;         /* session tag | enabled bit | index, 0 = not registered yet */
	uint32_t line;
	const char *category;
	const char *name;
	const char *file;
	uint16_t *arg_names;    /* interned argument names, filled on the first call */
	uint32_t arg_count;
	struct nt_callsite *next_registered; /* every site registered so far (generation wrap) */
	int always;             /* Trace2: recorded whatever the category filter says */
	uint32_t repo;          /* Trace2: repository id + 1 of all its events, 0 = none */
} nt_callsite;

/* Nonzero while recording: (generation << 17) | NT_SITE_ENABLED | 16-bit run epoch. */
extern uint32_t nt_session_tag_;
#define NT_SITE_ENABLED (1u << 16)
/* A relaxed atomic load: one plain mov on x86-64 and arm64, and race-free in C11 terms. */
#define NT__RECORDING() (__atomic_load_n(&nt_session_tag_, __ATOMIC_RELAXED) != 0)
/* The site is registered in the generation of `tag` (a nonzero tag, just loaded) with its
 * category disabled: skip it inline. A tag always has NT_SITE_ENABLED and a generation of 1
 * or more, so this is "same generation, enabled bit clear", and never true of state 0 (not
 * registered). */
static inline int nt_site_off_tag_(const nt_callsite *site, uint32_t tag)
{
	uint32_t st = __atomic_load_n(&site->state, __ATOMIC_RELAXED);
	return ((st ^ tag) & ~(uint32_t)0xFFFFu) == NT_SITE_ENABLED;
}
static inline int nt_site_off_(const nt_callsite *site)
{
	return nt_site_off_tag_(site, __atomic_load_n(&nt_session_tag_, __ATOMIC_RELAXED));
}
/* The tag, loaded once for both tests of an event macro (a relaxed atomic load is never
 * merged with another by the compiler). */
#define NT__TAG() __atomic_load_n(&nt_session_tag_, __ATOMIC_RELAXED)

void nt_emit_(nt_callsite *site, unsigned kind);
/* nt_emit_() for one kind each, which the macros call for NT_BEGIN, NT_END and NT_INSTANT
 * without arguments: with the kind known inside, the tests of it fold away (48 instructions
 * per arg-less begin/end event, loop included, against 61 through nt_emit_: callgrind over
 * bench/nt_bench_instr's zone case). nt_emit_ stays for programs compiled before them. */
void nt_emit_begin_(nt_callsite *site);
void nt_emit_end_(nt_callsite *site);
void nt_emit_instant_(nt_callsite *site);
void nt_emit_args_(nt_callsite *site, unsigned kind, const nt_arg *args, uint32_t nargs);
void nt_emit_complete_(nt_callsite *site, uint64_t start_ticks, const nt_arg *args,
		       uint32_t nargs);

/* The fixed-argument fast path (see "Events" below). An event with 1 to NT_FAST_ARGS_MAX
 * arguments, each NT_I64, NT_U64, NT_I32, NT_U32, NT_F64, NT_BOOL or NT_PTR, is described by
 * one word that folds to a constant at compile time (nt_fixed_desc_: the builders are
 * inline), and its values are passed in registers (nt_fixed_value_: an argument's 64 bits):
 *   bits  0..7   record kind
 *   bits  8..10  argument count (1 to NT_FAST_ARGS_MAX; nt_emit_fixedN_ goes by its own N)
 *   bits 16..31  four bits per argument: its NT_ARG_* type (INT64, UINT64, DOUBLE, BOOL,
 *                POINTER, or STRING with the value a `const char *`, NULL for "(null)"; any
 *                other is recorded as NT_ARG_NONE, as the generic path does)
 * nt_emit_fixedN_() (N = the argument count) records the event with the call site's
 * interned argument names and returns 0 when the call site is current, the thread owns a
 * chunk with room for the longest encoding (8 + 16 N bytes, plus each string's) and the
 * session's clock is the TSC. Otherwise, for a kind that is not an event, and for strings
 * too long for one record whole, it records nothing and returns 1, and the macro hands the
 * same event to nt_emit_args_(), which does everything else (first use and name interning,
 * chunk claims, drops, other clocks, truncation). What is read back is exactly what the
 * generic path records; the bytes are the compact record's when the call site's arguments,
 * its index, the values and the delta allow ("Typed arguments"), else the generic path's
 * (an int64 or uint64 that fits 32 bits takes 8 bytes). No lock, no system
 * call, no allocation; about 25 instructions plus 10 per fixed-size argument; a string adds
 * a strnlen() and a memcpy(). */
#define NT_FAST_ARGS_MAX 4
int nt_emit_fixed1_(nt_callsite *site, uint32_t desc, uint64_t v0);
int nt_emit_fixed2_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1);
int nt_emit_fixed3_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1, uint64_t v2);
int nt_emit_fixed4_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1, uint64_t v2,
		    uint64_t v3);
/* The same for NT_INSTANT, whatever kind `desc` names (the macros call them for instants,
 * the kind most events with arguments have; nt_emit_fixedN_ for the others). */
int nt_emit_instant_fixed1_(nt_callsite *site, uint32_t desc, uint64_t v0);
int nt_emit_instant_fixed2_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1);
int nt_emit_instant_fixed3_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1,
			    uint64_t v2);
int nt_emit_instant_fixed4_(nt_callsite *site, uint32_t desc, uint64_t v0, uint64_t v1,
			    uint64_t v2, uint64_t v3);

/* Nonzero when an argument of `type` has a fast path: the fixed-size ones, and NT_STR. */
static inline int nt_arg_has_fast_path_(uint8_t type)
{
	return type == NT_ARG_INT64 || type == NT_ARG_UINT64 || type == NT_ARG_DOUBLE ||
	       type == NT_ARG_BOOL || type == NT_ARG_POINTER || type == NT_ARG_STRING;
}
/* Argument i's contribution to the descriptor; ~0 (no fast path) when its type has none.
 * A constant when the arguments come from the NT_I64() ... builders (they are inline). */
static inline uint32_t nt_fixed_arg_desc_(const nt_arg *a, uint32_t n, uint32_t i)
{
	if (i >= n)
		return 0;
	return nt_arg_has_fast_path_(a[i].type) ? (uint32_t)a[i].type << (16 + 4 * i)
					       : ~(uint32_t)0;
}
/* The descriptor of nt_emit_fixed_(), or 0 when the event has no fast path. */
static inline uint32_t nt_fixed_desc_(unsigned kind, const nt_arg *a, uint32_t n)
{
	if (n == 0 || n > NT_FAST_ARGS_MAX)
		return 0;
	uint32_t types = nt_fixed_arg_desc_(a, n, 0) | nt_fixed_arg_desc_(a, n, 1) |
			 nt_fixed_arg_desc_(a, n, 2) | nt_fixed_arg_desc_(a, n, 3);
	if (types == ~(uint32_t)0)
		return 0;
	return (kind & 0xffu) | n << 8 | types;
}
/* Argument i's value as the 64 bits the record holds (0 past the last argument). */
static inline uint64_t nt_fixed_value_(const nt_arg *a, uint32_t n, uint32_t i)
{
	return i < n ? a[i].value.u64 : 0;
}

/* Copies the n (at most NT_FAST_ARGS_MAX) arguments to `to`, field by field; returns `to`. */
static inline const nt_arg *nt_fixed_copy_(nt_arg *to, const nt_arg *a, uint32_t n)
{
	for (uint32_t i = 0; i < n && i < NT_FAST_ARGS_MAX; i++) {
		to[i] = nt_arg_make_(a[i].name, a[i].type);
		to[i].value.u64 = a[i].value.u64;
	}
	return to;
}

/* Dynamic-name events: the call site is looked up by its strings (see NT_INSTANT_DYN). */
void nt_emit_dynamic_(const char *file, uint32_t line, unsigned kind, const char *category,
		      const char *name, const nt_arg *args, uint32_t nargs);

/* Async and flow events (see "Async spans and flows" below): `kind` is NT_KIND_ASYNC_BEGIN
 * ... NT_KIND_FLOW_END, or'ed with NT_KIND_ID_GLOBAL for a global id; any other kind records
 * nothing. nt_emit_id_ (no arguments) is one clock read and two 8-byte stores on a TSC
 * session in the thread's chunk, and the generic path otherwise; the others take the generic
 * path (and the dynamic one its lookup, as nt_emit_dynamic_). No lock, no system call, no
 * allocation but the generic path's and the dynamic lookup's, as for every event. */
void nt_emit_id_(nt_callsite *site, unsigned kind, uint64_t id);
void nt_emit_id_args_(nt_callsite *site, unsigned kind, uint64_t id, const nt_arg *args,
		      uint32_t nargs);
void nt_emit_dynamic_id_(const char *file, uint32_t line, unsigned kind, const char *category,
			 const char *name, uint64_t id, const nt_arg *args, uint32_t nargs);

/* ---- Events ---------------------------------------------------------------------------- */
/*
 * Every macro takes a category and a name, both string literals (a compile error otherwise:
 * the call site keeps them, see the *_DYN forms for names known only at run time), and zero
 * to 32 NT_*() arguments. Arguments are evaluated only while recording, each exactly once.
 * Cost when not recording: one load and one branch; with the category disabled, one more
 * load and compare. Cost when recording (after the call site's first event, which
 * registers it under a lock), on a TSC session, in the thread's current chunk:
 *   no arguments            one call, one clock read and one 4-byte store (about 1.2x the
 *                           floor of bench/nt_bench_args.c: a clock read and a 16-byte store)
 *   1 to 4 fixed-size ones  NT_I64, NT_U64, NT_I32, NT_U32, NT_F64, NT_BOOL, NT_PTR: the fast
 *                           path: one call with the values in registers, one clock read and
 *                           one store per value (compact, 4 + 4 per argument) or per 8 bytes
 *                           of record (8 + 8 or 16 per argument), as in "Typed arguments"
 *                           above; two int64 about 1.6x the floor
 *   with NT_STR among them  the same path, out of line: each string measured (strnlen) and
 *                           copied (memcpy)
 *   anything else           (a list, more than 4 arguments, NT_COMPLETE, the *_DYN forms)
 *                           the generic path: the arguments are built in an array on the
 *                           stack, sized, then encoded
 * A chunk change (every chunk_size bytes) and a gap of 2^32 ticks take the generic path too.
 * The macros are the same in C and C++ (C11, C++11 and later, gcc, g++, clang and clang++,
 * -Wall -Wextra -Wpedantic: the arguments after the names are counted and split off without
 * GNU's `, ##__VA_ARGS__`, and the Trace2 macros with a value are statement expressions
 * marked __extension__). A 33rd argument is a compile error ("at most 32 arguments"); an
 * argument that is not one NT_I64() ... NT_STR() value is the compiler's error about that
 * argument's type, and only that.
 *
 * NT_INSTANT   a point in time
 * NT_BEGIN     a duration begins on this thread
 * NT_END       the innermost open duration of this thread ends (category and name are for
 *              the reader's convenience; matching is by nesting, as in Chrome and Fuchsia)
 * NT_SCOPE     NT_BEGIN now and NT_END when the enclosing block exits: by the cleanup
 *              attribute in C, by a guard's destructor in C++ (so also when an exception
 *              leaves the block). At most one NT_SCOPE per source line.
 * NT_COMPLETE  a whole duration from `start` (a value of nt_now()) to now, in 16 bytes
 * NT_COUNTER   counter values: each argument is one series (a number)
 *
 * NT_INSTANT_DYN, NT_BEGIN_DYN, NT_END_DYN, NT_COUNTER_DYN (cat, name, ...)
 *              the same events with category, name and argument names (nt_arg_i64() ...)
 *              known only at run time, like Perfetto's DynamicString. The strings are
 *              copied (interned): they need not outlive the call. Cost: on top of the event,
 *              a hash of the strings and a table lookup under a mutex on every call, and on
 *              a combination's first use an allocation and its registration (about as much
 *              as a call site's first event). At most 65536 distinct combinations per
 *              process; events of more are dropped and counted (nt_stats.durable_dropped).
 *              A NULL category, name or argument name is recorded as "(null)".
 *
 * Async spans and flows: follow one request across threads and processes.
 *
 * NT_ASYNC_BEGIN (cat, name, id, NT_*() ...)   a span begins, on any thread
 * NT_ASYNC_INSTANT (cat, name, id, NT_*() ...) a point inside the span
 * NT_ASYNC_END (cat, name, id, NT_*() ...)     the span ends, on any thread
 *              A span is identified by (category, name, id): spans of one name with different
 *              ids overlap freely, and its begin, instants and end may each be on another
 *              thread. Chrome JSON draws it on an async track of its own (ph b/n/e).
 * NT_FLOW_BEGIN (cat, name, id, NT_*() ...)    a flow starts at this thread's open duration
 * NT_FLOW_STEP (cat, name, id, NT_*() ...)     the flow passes through this thread's one
 * NT_FLOW_END (cat, name, id, NT_*() ...)      the flow ends at this thread's one
 *              A flow binds to the duration (NT_BEGIN/NT_END, NT_SCOPE, or an NT_COMPLETE
 *              that encloses it) open on the calling thread at that moment, as Fuchsia and
 *              Chrome bind them, and connects those durations by arrows across threads;
 *              called outside any duration it binds to none (viewers drop that point).
 *              A flow is identified by (category, name, id) like a span.
 * `id` is any 64-bit integer (converted to uint64_t), evaluated once while recording. It is
 * scoped to the process: the same id in two processes names two spans. The _GLOBAL forms
 * (NT_ASYNC_BEGIN_GLOBAL ... NT_FLOW_END_GLOBAL, same arguments) record a global id, one
 * that means the same span or flow in every process of a trace (trace-record's bundle): use
 * them for an id that crosses processes (a request id sent over a socket or a pipe), and the
 * process forms for everything else (a pointer, a counter of this process). A process id
 * and a global id never match each other.
 * Ids are not checked when recording: an id reused while its span is open makes one
 * (category, name, id) with two begins, which viewers nest (Chrome JSON's async track) and
 * --stats counts as one pair and one unended; a span never ended (its end not reached,
 * dropped or overwritten) shows as unended, and an end whose begin is missing as an end
 * never begun: trace-dump --stats counts both, and flows never finished, per category. An
 * end never pairs with another id's begin, nor a flow point with another id's flow.
 * Cost: without arguments one clock read and a 16-byte record (two stores), about a
 * BEGIN's; with arguments the generic path (8 + 8 bytes, then the arguments). The *_DYN
 * forms (cat, name, id, nt_arg_*() ...) of each, process and global, look the site up as
 * NT_INSTANT_DYN does.
 */
#ifndef NTRACE

/* Counts the macro's arguments, names included, at preprocessing time (2 to 41): an integer
 * constant in C and C++ alike (a compound literal in sizeof is neither C++ nor a constant for
 * clang). An event's arguments are the count less its names, so 33 to 39 are counted right
 * and refused by a static assertion; more leave an argument where the count should be, which
 * does not compile either. The `~` after the numbers keeps the `...` of NT__COUNT_ from being
 * empty, which ISO C and C++ before C++20 do not allow (-Wpedantic). */
#define NT__COUNT(...)                                                                          \
	NT__COUNT_(__VA_ARGS__, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26,  \
		   25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, \
		   4, 3, 2, 1, ~)
#define NT__COUNT_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, \
		   a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32,  \
		   a33, a34, a35, a36, a37, a38, a39, a40, a41, n, ...)                        \
	n
/* The first, second and third of the macro's arguments (category, name, start), and the
 * arguments after the first two or three: each called with one more argument than it names,
 * so that no `...` is ever empty. */
#define NT__1ST(...) NT__1ST_(__VA_ARGS__, ~)
#define NT__1ST_(a, ...) a
#define NT__2ND(...) NT__2ND_(__VA_ARGS__, ~)
#define NT__2ND_(a, b, ...) b
#define NT__3RD(...) NT__3RD_(__VA_ARGS__, ~)
#define NT__3RD_(a, b, c, ...) c
#define NT__AFTER2(a, b, ...) __VA_ARGS__
#define NT__AFTER3(a, b, c, ...) __VA_ARGS__
/* The n arguments, then a terminator, so that an event without arguments is a valid array.
 * Sized by the count, not by the initializers: an argument of the wrong type is then one
 * error about that argument, with no second one about the array. `after` is NT__AFTER2 or
 * NT__AFTER3, the macro's arguments follow. */
#define NT__ARGS(var, n, after, ...)                                                           \
	const nt_arg var[(n) + 1] = { after(__VA_ARGS__, nt_arg_make_(NULL, NT_ARG_NONE)) }

/* Positional initializers, valid C and C++ (designated ones are C++20), in nt_callsite's
 * order: state, line, category, name, file, arg_names, arg_count, next_registered, always,
 * repo. */
#define NT__SITE(cat, nm, nargs)                                                               \
	static uint16_t nt__names_[(nargs) + 1];                                               \
	static nt_callsite nt__site_ = { 0, __LINE__, NT__LITERAL(cat), NT__LITERAL(nm),       \
					 __FILE__, nt__names_, (nargs), NULL, 0, 0 }

/* Fixed-size arguments (at most NT_FAST_ARGS_MAX): the descriptor and the values fold to
 * constants and registers at compile time, and the event is a few plain stores; the generic
 * path takes every other event, and this one when the fast path declines it. */
#define NT__FV(args, n, i) nt_fixed_value_((args), (n), (i))
#define NT__EMIT_FIXED_BY(fn, d, args, n)                                                      \
	((n) == 1   ? fn##1_(&nt__site_, (d), NT__FV(args, n, 0))                              \
	 : (n) == 2 ? fn##2_(&nt__site_, (d), NT__FV(args, n, 0), NT__FV(args, n, 1))          \
	 : (n) == 3 ? fn##3_(&nt__site_, (d), NT__FV(args, n, 0), NT__FV(args, n, 1),           \
			     NT__FV(args, n, 2))                                                \
		    : fn##4_(&nt__site_, (d), NT__FV(args, n, 0), NT__FV(args, n, 1),           \
			     NT__FV(args, n, 2), NT__FV(args, n, 3)))
#define NT__EMIT_FIXED(kind, d, args, n)                                                       \
	((kind) == NT_KIND_INSTANT ? NT__EMIT_FIXED_BY(nt_emit_instant_fixed, d, args, n)     \
				   : NT__EMIT_FIXED_BY(nt_emit_fixed, d, args, n))
/* When the fast path declines, the generic path gets a copy made there: handing it the
 * arguments' own array would make the compiler build that array in memory on every call. */
#define NT__EMIT_ARGS(kind, args, n)                                                           \
	do {                                                                                   \
		const uint32_t nt__d_ = nt_fixed_desc_((kind), (args), (n));                   \
		if (nt__d_ == 0) {                                                             \
			nt_emit_args_(&nt__site_, (kind), (args), (n));                        \
		} else if (__builtin_expect(NT__EMIT_FIXED((kind), nt__d_, args, n) != 0, 0)) { \
			nt_arg nt__c_[NT_FAST_ARGS_MAX];                                       \
			nt_emit_args_(&nt__site_, (kind), nt_fixed_copy_(nt__c_, (args), (n)), \
				      (n));                                                    \
		}                                                                              \
	} while (0)

/* The body of every event macro with a call site of its own. The macro's arguments are
 * (category, name, `heads` - 2 more, NT_*() ...): see NT__COUNT for why they are taken apart
 * here rather than named; `after` (NT__AFTER2 or NT__AFTER3) leaves the NT_*() ones, and
 * `emit` records the event with nt__site_, nt__a_ and nt__n_ in scope. */
#define NT__EVENT_BODY(heads, after, emit, ...)                                                \
	do {                                                                                   \
		const uint32_t nt__tag_ = NT__TAG();                                           \
		if (__builtin_expect(nt__tag_ != 0, 1)) {                                      \
			enum { nt__n_ = NT__COUNT(__VA_ARGS__) - (heads) };                    \
			NT_STATIC_ASSERT(nt__n_ <= 32, "at most 32 arguments");               \
			NT__SITE(NT__1ST(__VA_ARGS__), NT__2ND(__VA_ARGS__), nt__n_);          \
			if (!nt_site_off_tag_(&nt__site_, nt__tag_)) {                         \
				NT__ARGS(nt__a_, nt__n_, after, __VA_ARGS__);                  \
				emit;                                                          \
			}                                                                      \
		}                                                                              \
	} while (0)

#define NT__EMIT0(kind, site)                                                                   \
	((kind) == NT_KIND_BEGIN     ? nt_emit_begin_(site)                                    \
	 : (kind) == NT_KIND_END     ? nt_emit_end_(site)                                      \
	 : (kind) == NT_KIND_INSTANT ? nt_emit_instant_(site)                                  \
				     : nt_emit_((site), (kind)))
/* (category, name, NT_*() ...) */
#define NT__EMIT_PLAIN(kind)                                                                   \
	if (nt__n_ == 0)                                                                       \
		NT__EMIT0(kind, &nt__site_);                                                  \
	else                                                                                   \
		NT__EMIT_ARGS(kind, nt__a_, nt__n_)
#define NT__EVENT(kind, ...) NT__EVENT_BODY(2, NT__AFTER2, NT__EMIT_PLAIN(kind), __VA_ARGS__)

/* Each is (category, name, NT_*() ...), written (...) so that no argument may be empty. */
#define NT_INSTANT(...) NT__EVENT(NT_KIND_INSTANT, __VA_ARGS__)
#define NT_BEGIN(...) NT__EVENT(NT_KIND_BEGIN, __VA_ARGS__)
#define NT_END(...) NT__EVENT(NT_KIND_END, __VA_ARGS__)
#define NT_COUNTER(...) NT__EVENT(NT_KIND_COUNTER, __VA_ARGS__)

/* (category, name, start, NT_*() ...) */
#define NT_COMPLETE(...)                                                                       \
	NT__EVENT_BODY(3, NT__AFTER3,                                                          \
		       nt_emit_complete_(&nt__site_, (NT__3RD(__VA_ARGS__)), nt__a_, nt__n_),  \
		       __VA_ARGS__)

/* The scope guard remembers the end call site so the cleanup needs no lookup. C runs
 * nt_scope_end_ by the cleanup attribute; C++ by the destructor, the idiom that also runs
 * during exception unwinding. */
typedef struct nt_scope_guard_ {
	nt_callsite *end_site;
#ifdef __cplusplus
	~nt_scope_guard_()
	{
		if (end_site != NULL && NT__RECORDING())
			nt_emit_end_(end_site);
	}
#endif
} nt_scope_guard_;
#ifdef __cplusplus
#define NT__SCOPE_CLEANUP
#else
static inline void nt_scope_end_(nt_scope_guard_ *g)
{
	if (g->end_site != NULL && NT__RECORDING())
		nt_emit_end_(g->end_site);
}
#define NT__SCOPE_CLEANUP __attribute__((cleanup(nt_scope_end_), unused)) /* clang: "unused" */
#endif
#define NT__CAT2(a, b) a##b
#define NT__CAT(a, b) NT__CAT2(a, b)
/* (category, name, NT_*() ...) */
#define NT_SCOPE(...)                                                                          \
	static uint16_t NT__CAT(nt__snames_, __LINE__)[1];                                     \
	static nt_callsite NT__CAT(nt__send_, __LINE__) = { 0, __LINE__,                       \
							    NT__LITERAL(NT__1ST(__VA_ARGS__)), \
							    NT__LITERAL(NT__2ND(__VA_ARGS__)), \
							    __FILE__,                          \
							    NT__CAT(nt__snames_, __LINE__),    \
							    0, NULL, 0, 0 };                   \
	NT__SCOPE_CLEANUP nt_scope_guard_ NT__CAT(nt__guard_, __LINE__) = {                    \
		NT__RECORDING() ? &NT__CAT(nt__send_, __LINE__) : NULL                         \
	};                                                                                     \
	NT_BEGIN(__VA_ARGS__)

/* The body of the *_DYN macros: as NT__EVENT_BODY, without a call site of its own (`emit`
 * sees nt__a_ and nt__n_). */
#define NT__EVENT_DYN_BODY(heads, after, emit, ...)                                            \
	do {                                                                                   \
		if (__builtin_expect(NT__RECORDING(), 1)) {                                    \
			enum { nt__n_ = NT__COUNT(__VA_ARGS__) - (heads) };                    \
			NT_STATIC_ASSERT(nt__n_ <= 32, "at most 32 arguments");               \
			NT__ARGS(nt__a_, nt__n_, after, __VA_ARGS__);                          \
			emit;                                                                  \
		}                                                                              \
	} while (0)
#define NT__EVENT_DYN(kind, ...)                                                               \
	NT__EVENT_DYN_BODY(2, NT__AFTER2,                                                      \
			   nt_emit_dynamic_(__FILE__, __LINE__, (kind), (NT__1ST(__VA_ARGS__)), \
					    (NT__2ND(__VA_ARGS__)), nt__a_, nt__n_),           \
			   __VA_ARGS__)
/* (category, name, id, NT_*() ...): the id evaluated once, only while recording. */
#define NT__EMIT_ID(kind, id)                                                                  \
	if (nt__n_ == 0)                                                                       \
		nt_emit_id_(&nt__site_, (kind), (uint64_t)(id));                               \
	else                                                                                   \
		nt_emit_id_args_(&nt__site_, (kind), (uint64_t)(id), nt__a_, nt__n_)
#define NT__EVENT_ID(kind, ...)                                                                \
	NT__EVENT_BODY(3, NT__AFTER3, NT__EMIT_ID(kind, NT__3RD(__VA_ARGS__)), __VA_ARGS__)
#define NT__EVENT_ID_DYN(kind, ...)                                                            \
	NT__EVENT_DYN_BODY(3, NT__AFTER3,                                                      \
			   nt_emit_dynamic_id_(__FILE__, __LINE__, (kind),                     \
					       (NT__1ST(__VA_ARGS__)), (NT__2ND(__VA_ARGS__)), \
					       (uint64_t)(NT__3RD(__VA_ARGS__)), nt__a_,      \
					       nt__n_),                                        \
			   __VA_ARGS__)
#define NT__G(kind) ((kind) | NT_KIND_ID_GLOBAL)
/* Each is (category, name, id, NT_*() ...); see "Async spans and flows" above. */
#define NT_ASYNC_BEGIN(...) NT__EVENT_ID(NT_KIND_ASYNC_BEGIN, __VA_ARGS__)
#define NT_ASYNC_INSTANT(...) NT__EVENT_ID(NT_KIND_ASYNC_INSTANT, __VA_ARGS__)
#define NT_ASYNC_END(...) NT__EVENT_ID(NT_KIND_ASYNC_END, __VA_ARGS__)
#define NT_FLOW_BEGIN(...) NT__EVENT_ID(NT_KIND_FLOW_BEGIN, __VA_ARGS__)
#define NT_FLOW_STEP(...) NT__EVENT_ID(NT_KIND_FLOW_STEP, __VA_ARGS__)
#define NT_FLOW_END(...) NT__EVENT_ID(NT_KIND_FLOW_END, __VA_ARGS__)
#define NT_ASYNC_BEGIN_GLOBAL(...) NT__EVENT_ID(NT__G(NT_KIND_ASYNC_BEGIN), __VA_ARGS__)
#define NT_ASYNC_INSTANT_GLOBAL(...) NT__EVENT_ID(NT__G(NT_KIND_ASYNC_INSTANT), __VA_ARGS__)
#define NT_ASYNC_END_GLOBAL(...) NT__EVENT_ID(NT__G(NT_KIND_ASYNC_END), __VA_ARGS__)
#define NT_FLOW_BEGIN_GLOBAL(...) NT__EVENT_ID(NT__G(NT_KIND_FLOW_BEGIN), __VA_ARGS__)
#define NT_FLOW_STEP_GLOBAL(...) NT__EVENT_ID(NT__G(NT_KIND_FLOW_STEP), __VA_ARGS__)
#define NT_FLOW_END_GLOBAL(...) NT__EVENT_ID(NT__G(NT_KIND_FLOW_END), __VA_ARGS__)
/* Each is (category, name, id, nt_arg_*() ...). */
#define NT_ASYNC_BEGIN_DYN(...) NT__EVENT_ID_DYN(NT_KIND_ASYNC_BEGIN, __VA_ARGS__)
#define NT_ASYNC_INSTANT_DYN(...) NT__EVENT_ID_DYN(NT_KIND_ASYNC_INSTANT, __VA_ARGS__)
#define NT_ASYNC_END_DYN(...) NT__EVENT_ID_DYN(NT_KIND_ASYNC_END, __VA_ARGS__)
#define NT_FLOW_BEGIN_DYN(...) NT__EVENT_ID_DYN(NT_KIND_FLOW_BEGIN, __VA_ARGS__)
#define NT_FLOW_STEP_DYN(...) NT__EVENT_ID_DYN(NT_KIND_FLOW_STEP, __VA_ARGS__)
#define NT_FLOW_END_DYN(...) NT__EVENT_ID_DYN(NT_KIND_FLOW_END, __VA_ARGS__)
#define NT_ASYNC_BEGIN_GLOBAL_DYN(...) NT__EVENT_ID_DYN(NT__G(NT_KIND_ASYNC_BEGIN), __VA_ARGS__)
#define NT_ASYNC_INSTANT_GLOBAL_DYN(...)                                                       \
	NT__EVENT_ID_DYN(NT__G(NT_KIND_ASYNC_INSTANT), __VA_ARGS__)
#define NT_ASYNC_END_GLOBAL_DYN(...) NT__EVENT_ID_DYN(NT__G(NT_KIND_ASYNC_END), __VA_ARGS__)
#define NT_FLOW_BEGIN_GLOBAL_DYN(...) NT__EVENT_ID_DYN(NT__G(NT_KIND_FLOW_BEGIN), __VA_ARGS__)
#define NT_FLOW_STEP_GLOBAL_DYN(...) NT__EVENT_ID_DYN(NT__G(NT_KIND_FLOW_STEP), __VA_ARGS__)
#define NT_FLOW_END_GLOBAL_DYN(...) NT__EVENT_ID_DYN(NT__G(NT_KIND_FLOW_END), __VA_ARGS__)

/* Each is (category, name, nt_arg_*() ...). */
#define NT_INSTANT_DYN(...) NT__EVENT_DYN(NT_KIND_INSTANT, __VA_ARGS__)
#define NT_BEGIN_DYN(...) NT__EVENT_DYN(NT_KIND_BEGIN, __VA_ARGS__)
#define NT_END_DYN(...) NT__EVENT_DYN(NT_KIND_END, __VA_ARGS__)
#define NT_COUNTER_DYN(...) NT__EVENT_DYN(NT_KIND_COUNTER, __VA_ARGS__)

#else /* NTRACE: no code, no reference to the library, arguments not evaluated */

#define NT_INSTANT(...) ((void)0)
#define NT_BEGIN(...) ((void)0)
#define NT_END(...) ((void)0)
#define NT_COUNTER(...) ((void)0)
#define NT_COMPLETE(...) ((void)0)
#define NT_SCOPE(...) ((void)0)
#define NT_INSTANT_DYN(...) ((void)0)
#define NT_BEGIN_DYN(...) ((void)0)
#define NT_END_DYN(...) ((void)0)
#define NT_COUNTER_DYN(...) ((void)0)
#define NT_ASYNC_BEGIN(...) ((void)0)
#define NT_ASYNC_INSTANT(...) ((void)0)
#define NT_ASYNC_END(...) ((void)0)
#define NT_FLOW_BEGIN(...) ((void)0)
#define NT_FLOW_STEP(...) ((void)0)
#define NT_FLOW_END(...) ((void)0)
#define NT_ASYNC_BEGIN_GLOBAL(...) ((void)0)
#define NT_ASYNC_INSTANT_GLOBAL(...) ((void)0)
#define NT_ASYNC_END_GLOBAL(...) ((void)0)
#define NT_FLOW_BEGIN_GLOBAL(...) ((void)0)
#define NT_FLOW_STEP_GLOBAL(...) ((void)0)
#define NT_FLOW_END_GLOBAL(...) ((void)0)
#define NT_ASYNC_BEGIN_DYN(...) ((void)0)
#define NT_ASYNC_INSTANT_DYN(...) ((void)0)
#define NT_ASYNC_END_DYN(...) ((void)0)
#define NT_FLOW_BEGIN_DYN(...) ((void)0)
#define NT_FLOW_STEP_DYN(...) ((void)0)
#define NT_FLOW_END_DYN(...) ((void)0)
#define NT_ASYNC_BEGIN_GLOBAL_DYN(...) ((void)0)
#define NT_ASYNC_INSTANT_GLOBAL_DYN(...) ((void)0)
#define NT_ASYNC_END_GLOBAL_DYN(...) ((void)0)
#define NT_FLOW_BEGIN_GLOBAL_DYN(...) ((void)0)
#define NT_FLOW_STEP_GLOBAL_DYN(...) ((void)0)
#define NT_FLOW_END_GLOBAL_DYN(...) ((void)0)

#endif /* NTRACE */

#ifdef __cplusplus
}
#endif

#endif /* NANOTRACE_H */
