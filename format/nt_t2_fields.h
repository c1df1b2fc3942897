/*
 * nt_t2_fields.h - the one table of Git Trace2 message fields: which keys each message of
 * NT_T2_EVENTS has after the common ones, in Git's EVENT order (git/git
 * trace2/tr2_tgt_event.c), with each key's type, where an archive keeps it and when Git
 * writes it.
 *
 * Everything else derives from it: the writer's argument names, positions and counts
 * (NT_T2_NAME, NT_T2_AT, NT_T2_NARGS), the reader's model (one argument slot per field), the
 * EVENT renderer (a loop over the rows), the names the NORMAL and PERF renderers may ask
 * for (NT_T2_F_<MSG>_<key>: a key a message lacks does not compile), and the importer's
 * key lists. Adding a key to a message is one row here, plus its test (and, for a key the
 * writer records, the value its API call gives).
 *
 * A row is F(msg, key, type, store, when):
 *   key    Git's key, as an identifier; its text is the key and the argument name.
 *   type   what the value is:
 *            STR string          INT integer        BOOL true/false   LIST array of strings
 *            JSON raw JSON text, written verbatim (data_json's value)
 *            TEXT a string, or an integer Git writes as its decimal string (data's value)
 *            SECS microseconds, written as seconds "%.6f" (t_abs, t_rel)
 *            NSECS nanoseconds, written as seconds "%.6f" (timer totals)
 *            NEST the open-region count
 *   store  where an archive keeps it:
 *            ARG      an argument named as the key (the writer and the importer record it)
 *            RUNTIME  a run time (t_rel of children and threads): the writer records it in
 *                     ticks as NT_T2_ARG_T_REL_TICKS, an import as an argument named as the
 *                     key (microseconds)
 *            T_ABS, T_REL, NESTING  derived by the reader (from the clock and a per-thread
 *                     stack of open regions, as Git's trace2/tr2_tls.c); an import records
 *                     Git's own value as an argument named as the key, which wins
 *            CATEGORY, LABEL  the call site's category and name (an import keeps a present
 *                     but empty one as an argument NT_T2_ARG_CATEGORY / NT_T2_ARG_LABEL)
 *   when   when Git writes it; every renderer writes a key only when the archive has it:
 *            REQ      always (the writer always records it)
 *            OPT      only when the caller gave it (the writer records a None argument, so
 *                     a call site's argument names stay in place)
 *            NONEMPTY only when not empty (the writer records it always)
 *            t_abs is written in EVENT only when exact (recorded, or from the clock).
 *
 * The common keys come first in every message, in the order of NT_T2_COMMON_KEYS; "repo"
 * among them is the call site's (CallSiteRecord.repo), or an argument NT_T2_ARG_REPO. The
 * writer's arguments are the ARG and RUNTIME rows in table order; a repository argument
 * goes before them (def_repo, region printf) or after them (data). Region enter and leave
 * without a message record no argument: they stay 8-byte records.
 *
 * Every message of NT_T2_EVENTS has a list, empty when it has no keys of its own: one
 * without NT_T2_FIELDS_<MSG> does not compile (the lists are expanded for each message
 * below). Messages Git gives identical keys share one list (atexit = exit, th_timer =
 * timer, th_counter = counter).
 */
#ifndef NT_T2_FIELDS_H
#define NT_T2_FIELDS_H

#include "nt_format.h"

/* The keys every EVENT line starts with (an unknown event has only the first three). */
#define NT_T2_COMMON_KEYS(C) C(event) C(sid) C(thread) C(time) C(file) C(line) C(repo)

/* Argument names an archive uses besides the rows' own. */
#define NT_T2_ARG_REPO "repo"         /* the repository, when not the call site's */
#define NT_T2_ARG_CATEGORY "category" /* a present but empty category (import) */
#define NT_T2_ARG_LABEL "label"       /* a present but empty label, key or name (import) */
#define NT_T2_ARG_EVENT "event"       /* an unknown event's Git name (import) */

/* In brief mode Git writes "time" on these messages only. */
#define NT_T2_TIMED_WHEN_BRIEF(t) ((t) == NT_T2E_VERSION || (t) == NT_T2E_ATEXIT)

#define NT_T2_FIELDS_VERSION(F, m) F(m, evt, STR, ARG, REQ) F(m, exe, STR, ARG, REQ)
#define NT_T2_FIELDS_TOO_MANY_FILES(F, m)
#define NT_T2_FIELDS_START(F, m) F(m, t_abs, SECS, T_ABS, REQ) F(m, argv, LIST, ARG, REQ)
#define NT_T2_FIELDS_EXIT(F, m) F(m, t_abs, SECS, T_ABS, REQ) F(m, code, INT, ARG, REQ)
#define NT_T2_FIELDS_SIGNAL(F, m) F(m, t_abs, SECS, T_ABS, REQ) F(m, signo, INT, ARG, REQ)
#define NT_T2_FIELDS_ATEXIT(F, m) NT_T2_FIELDS_EXIT(F, m)
#define NT_T2_FIELDS_ERROR(F, m) F(m, msg, STR, ARG, OPT) F(m, fmt, STR, ARG, OPT)
#define NT_T2_FIELDS_CMD_PATH(F, m) F(m, path, STR, ARG, REQ)
#define NT_T2_FIELDS_CMD_ANCESTRY(F, m) F(m, ancestry, LIST, ARG, REQ)
#define NT_T2_FIELDS_CMD_NAME(F, m) F(m, name, STR, ARG, REQ) F(m, hierarchy, STR, ARG, NONEMPTY)
#define NT_T2_FIELDS_CMD_MODE(F, m) F(m, name, STR, ARG, REQ)
#define NT_T2_FIELDS_ALIAS(F, m) F(m, alias, STR, ARG, REQ) F(m, argv, LIST, ARG, REQ)
#define NT_T2_FIELDS_CHILD_START(F, m)                                                         \
	F(m, child_id, INT, ARG, REQ) F(m, child_class, STR, ARG, REQ)                         \
	F(m, hook_name, STR, ARG, OPT) F(m, cd, STR, ARG, OPT) F(m, use_shell, BOOL, ARG, REQ) \
	F(m, argv, LIST, ARG, REQ)
#define NT_T2_FIELDS_CHILD_EXIT(F, m)                                                          \
	F(m, child_id, INT, ARG, REQ) F(m, pid, INT, ARG, REQ) F(m, code, INT, ARG, REQ)       \
	F(m, t_rel, SECS, RUNTIME, REQ)
#define NT_T2_FIELDS_CHILD_READY(F, m)                                                         \
	F(m, child_id, INT, ARG, REQ) F(m, pid, INT, ARG, REQ) F(m, ready, STR, ARG, REQ)      \
	F(m, t_rel, SECS, RUNTIME, REQ)
#define NT_T2_FIELDS_THREAD_START(F, m)
#define NT_T2_FIELDS_THREAD_EXIT(F, m) F(m, t_rel, SECS, RUNTIME, REQ)
#define NT_T2_FIELDS_EXEC(F, m)                                                                \
	F(m, exec_id, INT, ARG, REQ) F(m, exe, STR, ARG, OPT) F(m, argv, LIST, ARG, REQ)
#define NT_T2_FIELDS_EXEC_RESULT(F, m) F(m, exec_id, INT, ARG, REQ) F(m, code, INT, ARG, REQ)
#define NT_T2_FIELDS_DEF_PARAM(F, m)                                                           \
	F(m, scope, STR, ARG, REQ) F(m, param, STR, ARG, REQ) F(m, value, STR, ARG, OPT)
#define NT_T2_FIELDS_DEF_REPO(F, m) F(m, worktree, STR, ARG, REQ)
#define NT_T2_FIELDS_REGION_ENTER(F, m)                                                        \
	F(m, nesting, NEST, NESTING, REQ) F(m, category, STR, CATEGORY, OPT)                   \
	F(m, label, STR, LABEL, OPT) F(m, msg, STR, ARG, OPT)
#define NT_T2_FIELDS_REGION_LEAVE(F, m)                                                        \
	F(m, t_rel, SECS, T_REL, REQ) NT_T2_FIELDS_REGION_ENTER(F, m)
#define NT_T2_FIELDS_DATA(F, m)                                                                \
	F(m, t_abs, SECS, T_ABS, REQ) F(m, t_rel, SECS, T_REL, REQ)                            \
	F(m, nesting, NEST, NESTING, REQ) F(m, category, STR, CATEGORY, REQ)                   \
	F(m, key, STR, LABEL, REQ) F(m, value, TEXT, ARG, REQ)
#define NT_T2_FIELDS_DATA_JSON(F, m)                                                           \
	F(m, t_abs, SECS, T_ABS, REQ) F(m, t_rel, SECS, T_REL, REQ)                            \
	F(m, nesting, NEST, NESTING, REQ) F(m, category, STR, CATEGORY, REQ)                   \
	F(m, key, STR, LABEL, REQ) F(m, value, JSON, ARG, REQ)
#define NT_T2_FIELDS_PRINTF(F, m) F(m, t_abs, SECS, T_ABS, REQ) F(m, msg, STR, ARG, OPT)
#define NT_T2_FIELDS_TIMER(F, m)                                                               \
	F(m, category, STR, CATEGORY, REQ) F(m, name, STR, LABEL, REQ)                         \
	F(m, intervals, INT, ARG, REQ) F(m, t_total, NSECS, ARG, REQ)                          \
	F(m, t_min, NSECS, ARG, REQ) F(m, t_max, NSECS, ARG, REQ)
#define NT_T2_FIELDS_TH_TIMER(F, m) NT_T2_FIELDS_TIMER(F, m)
#define NT_T2_FIELDS_COUNTER(F, m)                                                             \
	F(m, category, STR, CATEGORY, REQ) F(m, name, STR, LABEL, REQ) F(m, count, INT, ARG, REQ)
#define NT_T2_FIELDS_TH_COUNTER(F, m) NT_T2_FIELDS_COUNTER(F, m)
/* An event only a newer Git knows: every key it has is kept as written (trace-import). */
#define NT_T2_FIELDS_UNKNOWN(F, m)

/* ---- derived: what each row is, as values ------------------------------------------------ */

typedef enum nt_t2_type {
	NT_T2_TYPE_STR, NT_T2_TYPE_INT, NT_T2_TYPE_BOOL, NT_T2_TYPE_LIST, NT_T2_TYPE_JSON,
	NT_T2_TYPE_TEXT, NT_T2_TYPE_SECS, NT_T2_TYPE_NSECS, NT_T2_TYPE_NEST
} nt_t2_type;
typedef enum nt_t2_store {
	NT_T2_STORE_ARG, NT_T2_STORE_RUNTIME, NT_T2_STORE_T_ABS, NT_T2_STORE_T_REL,
	NT_T2_STORE_NESTING, NT_T2_STORE_CATEGORY, NT_T2_STORE_LABEL
} nt_t2_store;
typedef enum nt_t2_when { NT_T2_WHEN_REQ, NT_T2_WHEN_OPT, NT_T2_WHEN_NONEMPTY } nt_t2_when;

/* NT_T2_F_<MSG>_<key>: the key's position among the message's rows; NT_T2_NFIELDS_<MSG>
 * their number. Expanding NT_T2_FIELDS_<MSG> for every message is the check that each has
 * a list. */
#define NT_T2_F_ROW_(m, key, type, store, when) NT_T2_F_##m##_##key,
#define NT_T2_F_MSG_(id, name) enum { NT_T2_FIELDS_##id(NT_T2_F_ROW_, id) NT_T2_NFIELDS_##id };
NT_T2_EVENTS(NT_T2_F_MSG_)
#undef NT_T2_F_MSG_
#undef NT_T2_F_ROW_

/* The most rows a message has: what a reader reserves per message. */
#define NT_T2_MAX_FIELDS 8
#define NT_T2_F_MAX_(id, name)                                                                 \
	NT_STATIC_ASSERT(NT_T2_NFIELDS_##id <= NT_T2_MAX_FIELDS, "NT_T2_MAX_FIELDS: " name);
NT_T2_EVENTS(NT_T2_F_MAX_)
#undef NT_T2_F_MAX_

/* NT_T2_AT_<MSG>_<key>: the argument's position among what the writer records (the ARG and
 * RUNTIME rows); NT_T2_NARGS_<MSG> their number. */
#define NT_T2_AT_ARG_(m, key) NT_T2_AT_##m##_##key,
#define NT_T2_AT_RUNTIME_(m, key) NT_T2_AT_##m##_##key,
#define NT_T2_AT_T_ABS_(m, key)
#define NT_T2_AT_T_REL_(m, key)
#define NT_T2_AT_NESTING_(m, key)
#define NT_T2_AT_CATEGORY_(m, key)
#define NT_T2_AT_LABEL_(m, key)
#define NT_T2_AT_ROW_(m, key, type, store, when) NT_T2_AT_##store##_(m, key)
#define NT_T2_AT_MSG_(id, name) enum { NT_T2_FIELDS_##id(NT_T2_AT_ROW_, id) NT_T2_NARGS_##id };
NT_T2_EVENTS(NT_T2_AT_MSG_)
#undef NT_T2_AT_MSG_
#undef NT_T2_AT_ROW_
#undef NT_T2_AT_ARG_
#undef NT_T2_AT_RUNTIME_
#undef NT_T2_AT_T_ABS_
#undef NT_T2_AT_T_REL_
#undef NT_T2_AT_NESTING_
#undef NT_T2_AT_CATEGORY_
#undef NT_T2_AT_LABEL_

/* For code that names a field: each fails to compile when the message has no such key. */
#define NT_T2_NARGS(msg) NT_T2_NARGS_##msg
#define NT_T2_AT(msg, key) NT_T2_AT_##msg##_##key
#define NT_T2_NAME(msg, key) (&(#key)[0 * (int)NT_T2_F_##msg##_##key])
#define NT_T2_COMMON_KEY_(key) NT_T2_COMMON_##key,
enum { NT_T2_COMMON_KEYS(NT_T2_COMMON_KEY_) NT_T2_NCOMMON };
#undef NT_T2_COMMON_KEY_
#define NT_T2_COMMON_NAME(key) (&(#key)[0 * (int)NT_T2_COMMON_##key])

#endif /* NT_T2_FIELDS_H */
