/*
 * nanotrace_trace2.h - Git's Trace2 API, recorded in nanotrace's binary format.
 *
 * QUICK START
 *
 *     int main(int argc, const char **argv) {
 *         NT_T2_INITIALIZE("1.2.3");           // reads NANOTRACE from the environment
 *         NT_T2_CMD_START(argv);
 *         NT_T2_CMD_NAME("build");
 *         NT_T2_REGION_ENTER("index", "read", -1);
 *         ...
 *         NT_T2_REGION_LEAVE("index", "read", -1);
 *         NT_T2_DATA_INTMAX("index", -1, "entries", n);
 *         return NT_T2_CMD_EXIT(0);
 *     }
 *
 *     $ NANOTRACE=/tmp/traces ./prog            # a directory: one archive per process
 *     $ trace-dump --format normal /tmp/traces  # or perf, or event: exactly as Git's targets
 *
 * Every message Git's Trace2 has is here, with Git's meaning (Documentation/technical/
 * api-trace2.adoc); each macro records the caller's file and line as its call site, like
 * Git's *_fl functions; the messages nanotrace writes itself (atexit, signal, cmd_ancestry,
 * timer and counter reports) name its source file alone ("nt_trace2.c:107"), never the
 * library build's path, as Git's own name "trace2.c". The renderings of
 * `trace-dump --format normal|perf|event` are Git's, byte for byte, so tools written for
 * Git's Trace2 output read them. Run times (t_rel of child_exit, child_ready, thread_exit)
 * are recorded in clock ticks and converted by the reader from the clock readings taken at
 * start and finish, so they do not depend on the TSC rate measured at start-up.
 *
 * ENABLING (read once, by NT_T2_INITIALIZE)
 *   NANOTRACE=<absolute path>   record this process. An existing directory gets one archive
 *                               per process, named after the last SID component (created
 *                               with O_EXCL, retried as .1 ... .9); any other path is the
 *                               archive itself (a second process given the same file writes
 *                               "<file>.<SID component>" beside it instead of replacing it).
 *                               The archive is a file-backed arena (mode 0600): a process
 *                               killed at any moment leaves a readable trace.
 *   NANOTRACE_EVENT=af_unix:[stream:|dgram:]<absolute path>
 *                               Git's GIT_TRACE2_EVENT socket target: each Trace2 message
 *                               goes to the Unix socket as the line `trace-dump --format
 *                               event` renders for it, one line per write (per datagram on a
 *                               dgram socket); no type tries stream, then dgram, as git
 *                               does. The archive of NANOTRACE records as ever; with
 *                               NANOTRACE_EVENT alone the process records into a private
 *                               arena (circular, 1 MiB or NANOTRACE_BUFFER_SIZE, in a fresh
 *                               0700 directory under $XDG_RUNTIME_DIR, $TMPDIR or /tmp whose
 *                               file is unlinked once opened and which is removed at exit).
 *                               The lines are made by libnanotrace-reader, which is loaded
 *                               with dlopen() (beside libnanotrace, else by its soname
 *                               libnanotrace-reader.so.0) and runs one thread that follows
 *                               the arena every 200 ms and at exit, where it gets up to 1 s
 *                               to send the last lines. A fork() child sends its own lines;
 *                               exec'd children read the variable again. A value that is not
 *                               af_unix:[stream:|dgram:]<absolute path>, a missing library,
 *                               a socket that cannot be reached, a listener that goes away
 *                               or stops reading for a second: one line "nanotrace:
 *                               NANOTRACE_EVENT='<value>': ..." and no more lines are sent;
 *                               recording and the exit status are untouched. Under a trace
 *                               manager (NANOTRACE_MANAGER) it is not used (one line). A
 *                               program killed by a signal sends what the last poll took.
 *   NANOTRACE_MAX_FILES=<n>     directory targets: when the directory holds n entries or
 *                               more (counting . and ..), the trace goes to the sentinel
 *                               "nanotrace-discard" (with a too_many_files message), and once
 *                               that exists later processes record nothing.
 *   NANOTRACE_MODE=oneshot|circular|streaming, NANOTRACE_BUFFER_SIZE=<bytes>[K|M|G],
 *   NANOTRACE_CATEGORIES=<patterns>, NANOTRACE_CLOCK=auto|monotonic|tsc
 *                               as in nt_config (categories: low-level NT_* events only;
 *                               Trace2 messages are always recorded). These are the
 *                               variables nt_start_from_env() reads (nanotrace.h), which a
 *                               program without Trace2 calls instead.
 *   NANOTRACE_CONFIG_PARAMS=<patterns>, NANOTRACE_ENV_VARS=<names>: what NT_T2_LIST_CONFIG
 *                               and NT_T2_LIST_ENV_VARS report as def_param.
 *   NANOTRACE_REDACT=0          keep URL passwords (by default user:pass@ in argv and
 *                               def_param values is recorded as user:<REDACTED>@); unset,
 *                               empty or 1 redact, anything else prints one line and
 *                               redacts.
 *   NANOTRACE_MANAGER=<socket> the process registered with a trace manager (nanotrace.h,
 *                               AUTOMATIC REGISTRATION), as every process under
 *                               `trace-record -- COMMAND` is: NANOTRACE and the variables
 *                               above are then not read; the manager's trace records the
 *                               Trace2 messages (and the process's section says how it ended).
 *   NANOTRACE_PARENT_SID, NANOTRACE_PARENT_NAME
 *                               set by nanotrace for child processes: the SID is
 *                               "<parent SID>/<own>", the command hierarchy "<parent>/<name>";
 *                               a value too long to add this process's own part to (the SID:
 *                               NT_MAX_SID_LENGTH bytes; the hierarchy: 1023) prints one line
 *                               and this process starts a chain of its own.
 *   fork() without exec      the child of a recording process records into its own archive
 *                               from its first message (nanotrace.h, FORK) with a new SID
 *                               "<parent SID>/<own>", passed on in NANOTRACE_PARENT_SID; in a
 *                               directory target its file is named by its last component,
 *                               beside a file target "<file>.<pid>" (nanotrace.h's rule).
 *   A bad value prints one line "nanotrace: ..." on stderr naming the variable (the value
 *   shown with control and non-ASCII bytes as \xNN, at most 64 bytes of it) and leaves
 *   tracing off (NANOTRACE_COMPRESSION, NANOTRACE_BLOCKING_TIMEOUT, NANOTRACE_REDACT and
 *   NANOTRACE_REGISTER_TIMEOUT:
 *   the default is used instead); the program itself never fails because of tracing.
 *   tests/writer/test_env_garbage.py holds the table. In a set-user-ID or set-group-ID
 *   program NANOTRACE is ignored (secure_getenv), and with it every variable above. When the program already records
 *   (nt_start), NT_T2_INITIALIZE adds Trace2 to that session instead.
 *
 * COST
 *   Disabled: every macro is one load and one branch. Enabled: NT_T2_REGION_ENTER/LEAVE
 *   without a repository are 8-byte records on the event fast path (bench: ns_trace2_region);
 *   the other messages format their arguments and take a few hundred ns. Nothing allocates;
 *   a thread's first message (and a call site's first use) takes a lock to register it.
 *   NANOTRACE_EVENT adds nothing to a message's path: the JSON is made by the forwarder's
 *   thread from the arena (CPU time per message on the calling thread 1.01-1.04x of an
 *   archive alone: bench/nt_bench_t2event); that thread costs a copy and read of the arena
 *   per poll (about 0.1-0.6% of a core for a quiet program), and per line the EVENT
 *   rendering trace-dump does (bench/PERFORMANCE.md) and one send. With
 *   NANOTRACE_MODE=streaming a poll reads the whole file saved so far, so a long-running
 *   streaming program's polls grow with its file: oneshot or circular suit the target.
 *
 * THREADS
 *   The thread calling NT_T2_INITIALIZE is "main". NT_T2_THREAD_START("name") names the
 *   calling thread "thNN:name" (NN counts threads, truncated to 24 characters like Git); a
 *   thread that records without it is "thNN:unknown". Regions nest per thread.
 *
 * BAD ARGUMENTS
 *   NULL strings are recorded as "" (argv: as an empty list); a repository id < 0 means
 *   none. Strings longer than a record (2040 bytes with everything else) are truncated.
 *   The category, label and key of regions and data are kept by the call site: they must be
 *   string literals (anything else is a compile error).
 *
 * C++ AND NTRACE
 *   The macros compile as C++11 and later (g++, clang++), as in C. With NTRACE defined they
 *   compile out, to their value where they have one (see the end of this header).
 */
#ifndef NANOTRACE_TRACE2_H
#define NANOTRACE_TRACE2_H

#include <stdint.h>

#include "nanotrace.h"
#include "nt_t2_fields.h" /* the keys of each message: argument names and counts */

#ifdef __cplusplus
extern "C" {
#endif

/* Nonzero while Trace2 messages are recorded. Cost: one load (none with NTRACE: 0). */
#ifndef NTRACE
extern int nt_trace2_enabled_;
static inline int nt_trace2_is_enabled(void)
{
	return __atomic_load_n(&nt_trace2_enabled_, __ATOMIC_RELAXED);
}
#else
static inline int nt_trace2_is_enabled(void)
{
	return 0;
}
#endif

/* ---- call sites (used by the macros) -------------------------------------------------- */

/* Positional initializers (valid C and C++), in nt_callsite's order: state, line, category,
 * name, file, arg_names, arg_count, next_registered, always, repo. Category and name must
 * be literals. */
#define NT__T2_SITE(var, cat, nm, nargs)                                                       \
	static uint16_t var##_names_[(nargs) + 1];                                             \
	static nt_callsite var = { 0, __LINE__, NT__LITERAL(cat), NT__LITERAL(nm), __FILE__,   \
				   var##_names_, (nargs), NULL, 1, 0 }

void nt_t2_emit_(nt_callsite *site, unsigned kind);
void nt_t2_emit_args_(nt_callsite *site, unsigned kind, const nt_arg *args, uint32_t n);
int nt_t2_initialize_(nt_callsite *site, const char *version);
void nt_t2_initialize_clock_(void);
void nt_t2_cmd_start_(nt_callsite *site, const char *const *argv);
void nt_t2_cmd_ancestry_(nt_callsite *site, const char *const *names);
int nt_t2_cmd_exit_(nt_callsite *site, int code);
void nt_t2_cmd_error_(nt_callsite *site, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void nt_t2_string_(nt_callsite *site, unsigned kind, const char *name, const char *value);
void nt_t2_cmd_name_(nt_callsite *site, const char *name);
void nt_t2_cmd_alias_(nt_callsite *site, const char *alias, const char *const *argv);
void nt_t2_def_param_(nt_callsite *site, const char *scope, const char *param,
		      const char *value);
void nt_t2_list_config_(nt_callsite *site, const char *scope, const char *const *keys,
			const char *const *values, unsigned n);
void nt_t2_list_env_vars_(nt_callsite *site);
void nt_t2_def_repo_(nt_callsite *site, int repo, const char *worktree);

/* A child process: NT_T2_CHILD_START fills it; pass it to NT_T2_CHILD_EXIT / _READY. */
typedef struct nt_trace2_child {
	int id;
	uint64_t start_ticks;
} nt_trace2_child;
void nt_t2_child_start_(nt_callsite *site, nt_trace2_child *child, const char *child_class,
			const char *hook_name, const char *cd, int use_shell, int git_cmd,
			const char *const *argv);
void nt_t2_child_end_(nt_callsite *site, unsigned kind, nt_trace2_child *child, int pid,
		      int code, const char *ready);
int nt_t2_exec_(nt_callsite *site, const char *exe, const char *const *argv);
void nt_t2_exec_result_(nt_callsite *site, int exec_id, int code);
void nt_t2_thread_start_(nt_callsite *site, nt_callsite *main_site, const char *name);
void nt_t2_thread_exit_(nt_callsite *site, nt_callsite *main_site);
void nt_t2_region_printf_(nt_callsite *site, unsigned kind, int repo, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void nt_t2_data_(nt_callsite *site, unsigned kind, int repo, const char *value);
void nt_t2_data_intmax_(nt_callsite *site, unsigned kind, int repo, int64_t value);
void nt_t2_printf_(nt_callsite *site, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define NT__T2_KIND(ev) (NT_KIND_T2_FIRST + NT_T2E_##ev)
#define NT__T2_CALL(ev, cat, nm, nargs, call)                                                  \
	do {                                                                                   \
		if (__builtin_expect(nt_trace2_is_enabled(), 0)) {                             \
			NT__T2_SITE(nt__t2s_, cat, nm, nargs);                                 \
			call;                                                                  \
		}                                                                              \
	} while (0)

/* ---- process --------------------------------------------------------------------------- */

/* Start the Trace2 clock: t_abs counts from here. Call first thing in main() (optional;
 * otherwise NT_T2_INITIALIZE starts it). Cost: two clock reads. */
#define NT_T2_INITIALIZE_CLOCK() nt_t2_initialize_clock_()

/* Read the environment (see ENABLING), start recording if asked, and record "version"
 * (evt "4", exe = `version`, or nanotrace's when NULL). Registers the atexit message and,
 * with a file target, the fatal-signal message. Returns nonzero when Trace2 is enabled.
 * Call once, from the main thread; later calls return the first result. */
#define NT_T2_INITIALIZE(version)                                                              \
	__extension__({                                                                        \
		NT__T2_SITE(nt__t2s_, "", "", NT_T2_NARGS(VERSION));                           \
		nt_t2_initialize_(&nt__t2s_, (version));                                       \
	})

/* start: the command line (NULL-terminated; URL passwords redacted), then cmd_ancestry
 * from /proc (the parent process names, nearest first), as Git does on Linux. */
#define NT_T2_CMD_START(argv) NT__T2_CALL(START, "", "", NT_T2_NARGS(START), nt_t2_cmd_start_(&nt__t2s_, (const char *const *)(argv)))
/* cmd_ancestry with caller-supplied names (NULL-terminated, nearest parent first). */
#define NT_T2_CMD_ANCESTRY(names) NT__T2_CALL(CMD_ANCESTRY, "", "", NT_T2_NARGS(CMD_ANCESTRY), nt_t2_cmd_ancestry_(&nt__t2s_, (const char *const *)(names)))
/* exit: records the code (atexit reports it again) and evaluates to it:
 * `return NT_T2_CMD_EXIT(code);` */
#define NT_T2_CMD_EXIT(code)                                                                   \
	__extension__({                                                                        \
		NT__T2_SITE(nt__t2s_, "", "", NT_T2_NARGS(EXIT));                              \
		nt_t2_cmd_exit_(&nt__t2s_, (code));                                            \
	})
/* error: the formatted message and the format string itself. */
#define NT_T2_CMD_ERROR(...) NT__T2_CALL(ERROR, "", "", NT_T2_NARGS(ERROR), nt_t2_cmd_error_(&nt__t2s_, __VA_ARGS__))
#define NT_T2_CMD_PATH(cmd_path) NT__T2_CALL(CMD_PATH, "", "", NT_T2_NARGS(CMD_PATH), nt_t2_string_(&nt__t2s_, NT__T2_KIND(CMD_PATH), NT_T2_NAME(CMD_PATH, path), (cmd_path)))
/* cmd_name: the hierarchy is the parent's (NANOTRACE_PARENT_NAME) + "/" + name, and is
 * passed on to child processes. */
#define NT_T2_CMD_NAME(name) NT__T2_CALL(CMD_NAME, "", "", NT_T2_NARGS(CMD_NAME), nt_t2_cmd_name_(&nt__t2s_, (name)))
#define NT_T2_CMD_MODE(mode) NT__T2_CALL(CMD_MODE, "", "", NT_T2_NARGS(CMD_MODE), nt_t2_string_(&nt__t2s_, NT__T2_KIND(CMD_MODE), NT_T2_NAME(CMD_MODE, name), (mode)))
#define NT_T2_CMD_ALIAS(alias, argv) NT__T2_CALL(ALIAS, "", "", NT_T2_NARGS(ALIAS), nt_t2_cmd_alias_(&nt__t2s_, (alias), (const char *const *)(argv)))
/* def_param: a setting that affects the command; value NULL = valueless. */
#define NT_T2_DEF_PARAM(scope, param, value) NT__T2_CALL(DEF_PARAM, "", "", NT_T2_NARGS(DEF_PARAM), nt_t2_def_param_(&nt__t2s_, (scope), (param), (value)))
/* def_param for each of the n (key, value) pairs whose key matches a pattern of
 * NANOTRACE_CONFIG_PARAMS (comma-separated shell globs, case-insensitive). */
#define NT_T2_LIST_CONFIG(scope, keys, values, n) NT__T2_CALL(DEF_PARAM, "", "", NT_T2_NARGS(DEF_PARAM), nt_t2_list_config_(&nt__t2s_, (scope), (keys), (values), (n)))
/* def_param (scope "command") for each variable named in NANOTRACE_ENV_VARS that is set
 * and non-empty. */
#define NT_T2_LIST_ENV_VARS() NT__T2_CALL(DEF_PARAM, "", "", NT_T2_NARGS(DEF_PARAM), nt_t2_list_env_vars_(&nt__t2s_))
/* def_repo: repository `repo` (an id >= 0 of the caller's choosing) and its worktree (the
 * repository is recorded as an argument first). */
#define NT_T2_DEF_REPO(repo, worktree) NT__T2_CALL(DEF_REPO, "", "", 1 + NT_T2_NARGS(DEF_REPO), nt_t2_def_repo_(&nt__t2s_, (repo), (worktree)))

/* ---- child processes and exec ----------------------------------------------------------- */

/* child_start: `child` gets the next child id and the start time. child_class NULL = "?";
 * hook_name non-NULL makes the class "hook"; cd NULL = none; git_cmd prepends "git" to argv. */
#define NT_T2_CHILD_START(child, child_class, hook_name, cd, use_shell, git_cmd, argv)          \
	NT__T2_CALL(CHILD_START, "", "", NT_T2_NARGS(CHILD_START),                                                    \
		    nt_t2_child_start_(&nt__t2s_, (child), (child_class), (hook_name), (cd),   \
				       (use_shell), (git_cmd), (const char *const *)(argv)))
/* child_exit: pid (-1 when the spawn failed), exit code, and the child's run time. */
#define NT_T2_CHILD_EXIT(child, pid, code) NT__T2_CALL(CHILD_EXIT, "", "", NT_T2_NARGS(CHILD_EXIT), nt_t2_child_end_(&nt__t2s_, NT__T2_KIND(CHILD_EXIT), (child), (pid), (code), NULL))
/* child_ready: a background child reports "ready", "timeout" or "error". */
#define NT_T2_CHILD_READY(child, pid, ready) NT__T2_CALL(CHILD_READY, "", "", NT_T2_NARGS(CHILD_READY), nt_t2_child_end_(&nt__t2s_, NT__T2_KIND(CHILD_READY), (child), (pid), 0, (ready)))
/* exec: about to exec `exe` (may be NULL) with argv; evaluates to the exec id. */
#define NT_T2_EXEC(exe, argv)                                                                  \
	__extension__({                                                                        \
		NT__T2_SITE(nt__t2s_, "", "", NT_T2_NARGS(EXEC));                              \
		nt_t2_exec_(&nt__t2s_, (exe), (const char *const *)(argv));                    \
	})
/* exec_result: the exec failed with errno `code`. */
#define NT_T2_EXEC_RESULT(exec_id, code) NT__T2_CALL(EXEC_RESULT, "", "", NT_T2_NARGS(EXEC_RESULT), nt_t2_exec_result_(&nt__t2s_, (exec_id), (code)))

/* ---- threads ---------------------------------------------------------------------------- */

/* On a new thread: names it "thNN:<name>" and records thread_start. On the main thread it
 * becomes region_enter "thread-proc on main: <name>", as in Git. */
#define NT_T2_THREAD_START(name)                                                               \
	NT__T2_CALL(THREAD_START, "", "", NT_T2_NARGS(THREAD_START),                          \
		    NT__T2_SITE(nt__t2m_, "", "", 1 + NT_T2_NARGS(REGION_ENTER));             \
		    nt_t2_thread_start_(&nt__t2s_, &nt__t2m_, (name)))
/* Before the thread returns: its per-thread timers and counters, then thread_exit with its
 * run time. On the main thread: region_leave "thread-proc on main". */
#define NT_T2_THREAD_EXIT()                                                                    \
	NT__T2_CALL(THREAD_EXIT, "", "", NT_T2_NARGS(THREAD_EXIT),                            \
		    NT__T2_SITE(nt__t2m_, "", "", 1 + NT_T2_NARGS(REGION_LEAVE));             \
		    nt_t2_thread_exit_(&nt__t2s_, &nt__t2m_))

/* ---- regions and data ------------------------------------------------------------------- */

/* The repository of a message is a property of its call site (CallSiteRecord.repo), as it
 * is in practice: the first repository a site sees is cached there, so the message stays
 * 8 bytes; a site that later sees another repository records it as an argument. Three
 * sites per use: no repository, the cached one, and an explicit argument. */
static inline int nt_t2_site_has_repo_(nt_callsite *site, int repo)
{
	uint32_t want = (uint32_t)repo + 1, have = 0;
	if (__atomic_compare_exchange_n(&site->repo, &have, want, 0, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		return 1;
	return have == want;
}
#define NT__T2_SITES3(cat, nm, nargs)                                                          \
	NT__T2_SITE(nt__t2s0_, cat, nm, (nargs));                                              \
	NT__T2_SITE(nt__t2s1_, cat, nm, (nargs));                                              \
	NT__T2_SITE(nt__t2s2_, cat, nm, (nargs) + 1)
#define NT__T2_PICK(repo, plain, explicit_repo)                                                \
	do {                                                                                   \
		int nt__repo_ = (repo);                                                        \
		nt_callsite *nt__site_ = nt__repo_ < 0 ? &nt__t2s0_ : &nt__t2s1_;               \
		if (nt__repo_ < 0 || nt_t2_site_has_repo_(&nt__t2s1_, nt__repo_)) {            \
			plain;                                                                 \
		} else {                                                                       \
			nt__site_ = &nt__t2s2_;                                                \
			explicit_repo;                                                         \
		}                                                                              \
	} while (0)

/* region_enter / region_leave of (category, label) on this thread; repo < 0: none. The
 * category and label must be literals (kept by the call site). The 8-byte fast path. */
#define NT__T2_REGION(ev, cat, label, repo)                                                    \
	do {                                                                                   \
		if (__builtin_expect(nt_trace2_is_enabled(), 0)) {                             \
			NT__T2_SITES3(cat, label, 0);                                          \
			NT__T2_PICK(repo, nt_t2_emit_(nt__site_, NT__T2_KIND(ev)), {           \
				nt_arg nt__a_ = NT_U32(NT_T2_ARG_REPO, (uint32_t)nt__repo_);           \
				nt_t2_emit_args_(nt__site_, NT__T2_KIND(ev), &nt__a_, 1);      \
			});                                                                    \
		}                                                                              \
	} while (0)
#define NT_T2_REGION_ENTER(cat, label, repo) NT__T2_REGION(REGION_ENTER, cat, label, repo)
#define NT_T2_REGION_LEAVE(cat, label, repo) NT__T2_REGION(REGION_LEAVE, cat, label, repo)
/* The same with a printf-formatted message. */
#define NT_T2_REGION_ENTER_PRINTF(cat, label, repo, ...) NT__T2_CALL(REGION_ENTER, cat, label, 1 + NT_T2_NARGS(REGION_ENTER), nt_t2_region_printf_(&nt__t2s_, NT__T2_KIND(REGION_ENTER), (repo), __VA_ARGS__))
#define NT_T2_REGION_LEAVE_PRINTF(cat, label, repo, ...) NT__T2_CALL(REGION_LEAVE, cat, label, 1 + NT_T2_NARGS(REGION_LEAVE), nt_t2_region_printf_(&nt__t2s_, NT__T2_KIND(REGION_LEAVE), (repo), __VA_ARGS__))

/* data: (category, key) = value, inside the current region; value is a string, an integer
 * (recorded as its decimal string, as Git does) or JSON text (data_json, kept verbatim). */
#define NT__T2_DATA(cat, key, repo, value, kind, fn)                                          \
	do {                                                                                   \
		if (__builtin_expect(nt_trace2_is_enabled(), 0)) {                             \
			NT__T2_SITES3(cat, key, NT_T2_NARGS(DATA));                                            \
			NT__T2_PICK(repo, fn(nt__site_, kind, -1, value),                      \
				    fn(nt__site_, kind, nt__repo_, value));                    \
		}                                                                              \
	} while (0)
#define NT_T2_DATA_STRING(cat, repo, key, value)                                               \
	NT__T2_DATA(cat, key, repo, (value), NT__T2_KIND(DATA), nt_t2_data_)
/* Recorded as a number (8 bytes when it fits 32 bits); rendered as its decimal string. */
#define NT_T2_DATA_INTMAX(cat, repo, key, value)                                               \
	NT__T2_DATA(cat, key, repo, (int64_t)(value), NT__T2_KIND(DATA), nt_t2_data_intmax_)
#define NT_T2_DATA_JSON(cat, repo, key, json)                                                  \
	NT__T2_DATA(cat, key, repo, (json), NT__T2_KIND(DATA_JSON), nt_t2_data_)
/* printf: a free-form message. */
#define NT_T2_PRINTF(...) NT__T2_CALL(PRINTF, "", "", NT_T2_NARGS(PRINTF), nt_t2_printf_(&nt__t2s_, __VA_ARGS__))

/* ---- timers and counters ---------------------------------------------------------------- */
/*
 * Stopwatch timers and counters accumulate per thread without locks and are reported at
 * exit: "timer" / "counter" with the process totals, and, for the ones defined per_thread,
 * "th_timer" / "th_counter" for each thread that used them (at its NT_T2_THREAD_EXIT, and
 * for the main thread at exit). At most 64 timers and 64 counters per process; more are
 * ignored. Nested starts of one timer on one thread count once (Git's rule).
 */
typedef struct nt_trace2_timer {
	const char *category, *name; /* literals */
	int per_thread;
	int id_; /* 0 until first used */
} nt_trace2_timer;
typedef struct nt_trace2_counter {
	const char *category, *name;
	int per_thread;
	int id_;
} nt_trace2_counter;
#define NT_T2_TIMER_DEFINE(var, cat, name, per_thread) nt_trace2_timer var = { cat, name, per_thread, 0 }
#define NT_T2_COUNTER_DEFINE(var, cat, name, per_thread) nt_trace2_counter var = { cat, name, per_thread, 0 }
/* Cost: one clock read and a few TLS stores; nothing when Trace2 is off. */
void nt_trace2_timer_start(nt_trace2_timer *t);
void nt_trace2_timer_stop(nt_trace2_timer *t);
void nt_trace2_counter_add(nt_trace2_counter *c, uint64_t value);

/* ---- NTRACE ------------------------------------------------------------------------------
 * With NTRACE every macro above expands to nothing (no argument is evaluated, nothing of
 * the library is referenced) or, where it has a value, to that value: NT_T2_INITIALIZE to 0
 * (Trace2 is off), NT_T2_CMD_EXIT(code) to code (evaluated), NT_T2_EXEC to exec id 0. The
 * definitions are replaced here, in one place, rather than split per macro above. */
#ifdef NTRACE
#undef NT_T2_INITIALIZE_CLOCK
#define NT_T2_INITIALIZE_CLOCK() ((void)0)
#undef NT_T2_CMD_START
#define NT_T2_CMD_START(argv) ((void)0)
#undef NT_T2_CMD_ANCESTRY
#define NT_T2_CMD_ANCESTRY(names) ((void)0)
#undef NT_T2_CMD_ERROR
#define NT_T2_CMD_ERROR(...) ((void)0)
#undef NT_T2_CMD_PATH
#define NT_T2_CMD_PATH(cmd_path) ((void)0)
#undef NT_T2_CMD_NAME
#define NT_T2_CMD_NAME(name) ((void)0)
#undef NT_T2_CMD_MODE
#define NT_T2_CMD_MODE(mode) ((void)0)
#undef NT_T2_CMD_ALIAS
#define NT_T2_CMD_ALIAS(alias, argv) ((void)0)
#undef NT_T2_DEF_PARAM
#define NT_T2_DEF_PARAM(scope, param, value) ((void)0)
#undef NT_T2_LIST_CONFIG
#define NT_T2_LIST_CONFIG(scope, keys, values, n) ((void)0)
#undef NT_T2_LIST_ENV_VARS
#define NT_T2_LIST_ENV_VARS() ((void)0)
#undef NT_T2_DEF_REPO
#define NT_T2_DEF_REPO(repo, worktree) ((void)0)
#undef NT_T2_CHILD_START
#define NT_T2_CHILD_START(child, child_class, hook_name, cd, use_shell, git_cmd, argv) ((void)0)
#undef NT_T2_CHILD_EXIT
#define NT_T2_CHILD_EXIT(child, pid, code) ((void)0)
#undef NT_T2_CHILD_READY
#define NT_T2_CHILD_READY(child, pid, ready) ((void)0)
#undef NT_T2_EXEC_RESULT
#define NT_T2_EXEC_RESULT(exec_id, code) ((void)0)
#undef NT_T2_THREAD_START
#define NT_T2_THREAD_START(name) ((void)0)
#undef NT_T2_THREAD_EXIT
#define NT_T2_THREAD_EXIT() ((void)0)
#undef NT_T2_REGION_ENTER
#define NT_T2_REGION_ENTER(cat, label, repo) ((void)0)
#undef NT_T2_REGION_LEAVE
#define NT_T2_REGION_LEAVE(cat, label, repo) ((void)0)
#undef NT_T2_REGION_ENTER_PRINTF
#define NT_T2_REGION_ENTER_PRINTF(cat, label, repo, ...) ((void)0)
#undef NT_T2_REGION_LEAVE_PRINTF
#define NT_T2_REGION_LEAVE_PRINTF(cat, label, repo, ...) ((void)0)
#undef NT_T2_DATA_STRING
#define NT_T2_DATA_STRING(cat, repo, key, value) ((void)0)
#undef NT_T2_DATA_INTMAX
#define NT_T2_DATA_INTMAX(cat, repo, key, value) ((void)0)
#undef NT_T2_DATA_JSON
#define NT_T2_DATA_JSON(cat, repo, key, json) ((void)0)
#undef NT_T2_PRINTF
#define NT_T2_PRINTF(...) ((void)0)
#undef NT_T2_INITIALIZE
#define NT_T2_INITIALIZE(version) (0)
#undef NT_T2_CMD_EXIT
#define NT_T2_CMD_EXIT(code) ((int)(code))
#undef NT_T2_EXEC
#define NT_T2_EXEC(exe, argv) (0)
#endif /* NTRACE */

/* The SID of this process ("" before NT_T2_INITIALIZE). */
const char *nt_trace2_sid(void);

#ifdef __cplusplus
}
#endif

#endif /* NANOTRACE_TRACE2_H */
