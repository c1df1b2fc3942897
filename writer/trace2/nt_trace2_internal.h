/* nt_trace2_internal.h - state shared by the Trace2 layer's files (not installed). */
#ifndef NT_TRACE2_INTERNAL_H
#define NT_TRACE2_INTERNAL_H

#include <nanotrace/nanotrace_trace2.h>
#include "writer/core/nt_core.h"
#include "format/nt_t2_fields.h"

#define NT_T2_THREAD_NAME_MAX 24 /* Git's TR2_MAX_THREAD_NAME */

/* The file of nanotrace's own call sites (atexit, signal, cmd_ancestry, timer and counter
 * reports): its bare name, as Git's own messages name "trace2.c". __FILE__ would put this
 * build's directory ("../writer/...") into every user's trace. GCC before 12 lacks
 * __FILE_NAME__ but folds the fallback to a constant. */
#ifdef __FILE_NAME__
#define NT_T2_SELF_FILE __FILE_NAME__
#else
#define NT_T2_SELF_FILE (__builtin_strrchr("/" __FILE__, '/') + 1)
#endif

typedef struct nt_t2_thread {
	int named;             /* has its Trace2 name ("main", "thNN:...") */
	int is_main;
	uint64_t start_ticks;  /* thread_start (main: the process start) */
} nt_t2_thread;

typedef struct nt_t2_process {
	int initialized, enabled, started_session;
	uint64_t start_ticks;  /* the Trace2 clock's zero */
	int clock_started;
	int exit_code;
	int redact;
	char sid[NT_MAX_SID_LENGTH + 1];
	char hierarchy[1024];
	uint32_t next_thread_id; /* "thNN": main is 0 */
	uint32_t next_child_id, next_exec_id;
} nt_t2_process;

extern nt_t2_process nt_T2;

/* Initializers of a message's arguments, each at its place in the field table
 * (format/nt_t2_fields.h) and named by it: `nt_arg a[NT_T2_NARGS(msg)] = { T2_A(...), ... }`.
 * ctor is nt_arg_str, nt_arg_i64, ... (name first). T2_A1 places it after a leading repo argument. */
#define T2_A(msg, key, ctor, ...) [NT_T2_AT(msg, key)] = ctor(NT_T2_NAME(msg, key), ##__VA_ARGS__)
#define T2_A1(msg, key, ctor, ...)                                                             \
	[1 + NT_T2_AT(msg, key)] = ctor(NT_T2_NAME(msg, key), ##__VA_ARGS__)
/* The run time's argument (a RUNTIME row, see nt_t2_t_rel_since) at its place. */
#define T2_RUNTIME(msg, arg) [NT_T2_AT(msg, t_rel)] = (arg)
/* The same as a statement, for a value known later. */
#define T2_SET(a, msg, key, ctor, ...) ((a)[NT_T2_AT(msg, key)] = ctor(NT_T2_NAME(msg, key), ##__VA_ARGS__))

/* The run time of a child or thread, recorded as NT_T2_ARG_T_REL_TICKS: the reader converts
 * it, from the archive's clock pairs, where the writer only knows the start-up rate. */
static inline nt_arg nt_t2_t_rel_since(uint64_t start_ticks)
{
	uint64_t now = nt_now();
	return nt_arg_u64(NT_T2_ARG_T_REL_TICKS, now > start_ticks ? now - start_ticks : 0);
}

/* The calling thread's Trace2 state; names the thread "thNN:unknown" on first use. */
nt_t2_thread *nt_t2_self(void);

/* Rewrites http(s)://user:pass@host as user:<REDACTED>@host into buf (when redaction is
 * on); returns s itself when nothing is redacted. */
const char *nt_t2_redact(const char *s, char *buf, size_t cap);

/* nt_trace2_env.c: read the NANOTRACE* variables and start the session. Returns 1 when
 * recording, with *too_many_files set when the trace went to the discard sentinel. */
int nt_t2_env_start(int *too_many_files);
/* The SID of this process, composed once: "<parent>/<ts>-H<host>-P<pid>". */
void nt_t2_make_sid(char *out, size_t cap);
/* The core's fork_child_path hook: a new SID for a fork() child, and its file named by it
 * where the parent's was named by the parent's SID. */
void nt_t2_fork_child_path(char *path, size_t cap);

/* nt_trace2_forward.c: NANOTRACE_EVENT. _wanted: 1 when it names a usable af_unix target and
 * the reader library loaded (else 0, after one warning for a bad value or a missing
 * library; 0 silently when unset). _begin: starts the forwarder for the session's arena
 * file (1 when it runs; a problem is one warning). _end: the last poll, sent within about a
 * second, at exit. */
int nt_t2_forward_wanted(void);
int nt_t2_forward_begin(void);
void nt_t2_forward_end(void);

/* nt_trace2_timer.c: emit this thread's per-thread timers and counters, merge them into
 * the process totals; with `final`, also emit the totals (atexit). */
void nt_t2_timers_thread_exit(void);
void nt_t2_timers_atexit(void);

#endif /* NT_TRACE2_INTERNAL_H */
