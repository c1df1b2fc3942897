/*
 * nt_trace2.h - Trace2 messages as the renderers see them (not installed).
 *
 * nt_trace2_model.c turns each Trace2 record of an archive into a t2_msg with every field
 * Git's targets print resolved: values recorded explicitly (an imported EVENT log carries
 * t_abs, t_rel and nesting as Git computed them) win; otherwise they are computed the way
 * trace2/tr2_tls.c does, from the ticks, the process start and a per-thread stack of open
 * regions. nt_render_trace2*.c print a t2_msg as Git's NORMAL, PERF or EVENT line.
 */
#ifndef NT_TRACE2_H
#define NT_TRACE2_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <nanotrace/nanotrace_reader.h>

#include "format/nt_t2_fields.h"

/* A row of the Trace2 field table (format/nt_t2_fields.h), as values, and each message's
 * rows (t2_fields[type]), built from the table in nt_trace2_model.c. */
typedef struct t2_field {
	const char *key;
	nt_t2_type type;
	nt_t2_store store;
	nt_t2_when when;
} t2_field;
typedef struct t2_field_list {
	const t2_field *row;
	uint32_t n;
} t2_field_list;
extern const t2_field_list t2_fields[NT_T2_EVENT_COUNT];
/* The message's row kept in `store` (its category or label), or NULL. */
const t2_field *t2_field_stored(nt_t2_event t, nt_t2_store store);

/* Arguments the model reads whatever the message: the repository, an import's empty
 * category or label, an unknown event's name, and the recorded values of what the reader
 * otherwise derives. */
enum { T2_X_REPO, T2_X_CATEGORY, T2_X_LABEL, T2_X_EVENT, T2_X_T_ABS, T2_X_T_REL,
       T2_X_T_REL_TICKS, T2_X_NESTING, T2_NX };

/* The last second broken down, per kind of clock (local, or UTC shifted by an offset):
 * messages come many to a second, and localtime_r / gmtime_r cost more than the rest of a
 * line. Owned by the model, one per archive. */
typedef struct t2_clock {
	int valid;
	int local;
	int32_t offset;
	int64_t secs;
	struct tm tm;
} t2_clock;

typedef struct t2_msg {
	nt_t2_event type;
	const nt_reader_event *ev;
	const char *sid;       /* "" when the thread has no process record */
	uint32_t depth;        /* '/' in the SID */
	const char *thread;
	const char *file;      /* NULL: none (brief capture, or not recorded) */
	uint32_t line;
	int has_time;
	int64_t time_us;       /* UTC microseconds since the epoch */
	int has_repo;
	int64_t repo;
	int has_t_abs, t_abs_exact; /* exact: recorded or computed from the clock; else an
	                               estimate from the start event's time (PERF only) */
	uint64_t t_abs_us;
	int has_t_rel;
	uint64_t t_rel_us;
	uint32_t nesting;      /* region_*, data*: Git's "nesting" */
	uint32_t dots;         /* PERF indentation: (open regions - 1) * 2 */
	const char *category;  /* NULL: none */
	const char *label;     /* region label, data key, timer/counter name; NULL: none */
	int brief_capture;     /* the process was recorded brief */
	int utc_known;
	int32_t utc_offset;
	t2_clock *clock_local; /* caches for t2_split_time (may be NULL: none) */
	t2_clock *clock_utc;
	/* The arguments of the message's ARG rows, by row (T2_ARG), and the model's own (by
	 * T2_X_*); NULL when not recorded. The first argument of a name wins; a key kept
	 * without being understood (NT_ARG_JSON) is never one: it is only written back in
	 * EVENT. */
	const nt_reader_arg *arg[NT_T2_MAX_FIELDS];
	const nt_reader_arg *x[T2_NX];
} t2_msg;

/* Per-archive state of the model: one per reader being rendered. */
typedef struct t2_model t2_model;
t2_model *t2_model_new(nt_reader *r);
void t2_model_free(t2_model *m);
/* The same model over a later reader of the same archive (a live follow's next copy, with
 * the same threads and processes and maybe more): the state of each thread and process is
 * kept. Returns 0 when memory runs out (the model is unchanged). */
int t2_model_rebind(t2_model *m, nt_reader *r);
/* Fills *out from a Trace2 event; returns 0 for events that are not Trace2 messages. */
int t2_model_decode(t2_model *m, const nt_reader_event *e, t2_msg *out);

/* The argument of field `key` of message type `msg` (a key the table does not give that
 * message does not compile), or NULL. */
#define T2_ARG(m, msg, key) ((m)->arg[NT_T2_F_##msg##_##key])
/* A string argument (or NULL) and its length. */
const char *t2_str(const nt_reader_arg *a, uint32_t *len);
/* An integer argument, or `dflt` when absent or not an integer. */
int64_t t2_int(const nt_reader_arg *a, int64_t dflt);
#define T2_STR(m, msg, key, len) t2_str(T2_ARG(m, msg, key), (len))
#define T2_INT(m, msg, key) t2_int(T2_ARG(m, msg, key), 0)
/* data's value as text: a string argument, or an integer one (NT_T2_DATA_INTMAX) printed
 * in decimal into buf (which needs 24 bytes), as Git's trace2_data_intmax does. */
const char *t2_value_text(const nt_reader_arg *a, char *buf, uint32_t *len);

/* ---- Output helpers shared by the three formats (nt_render_trace2_text.c) ------------ */

/* A growable line: every Git message is built whole, then written once. */
typedef struct t2_buf {
	char *p;
	size_t len, cap;
	int oom;
} t2_buf;
/* Room for n more bytes and the NUL, growing the line; 0 when memory ran out (oom set). */
int t2_grow(t2_buf *b, size_t n);
/* Every byte of output passes here: the common case (room left) is one comparison and a
 * copy, inline. */
static inline void t2_put(t2_buf *b, const char *s, size_t n)
{
	if (__builtin_expect(b->oom || n >= b->cap - b->len, 0) && !t2_grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}
static inline void t2_puts(t2_buf *b, const char *s)
{
	t2_put(b, s, strlen(s));
}
void t2_printf(t2_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void t2_pad(t2_buf *b, size_t col); /* spaces up to column col */
/* Numbers as Git's printf formats write them: "%" PRIu64 / PRId64 ("%u", "%d" of values
 * in range), and "%.6f" of us / 1e6 (nt_fmt_us_as_secs). */
void t2_put_u64(t2_buf *b, uint64_t v);
void t2_put_i64(t2_buf *b, int64_t v);
void t2_put_secs(t2_buf *b, uint64_t us);
/* Microseconds since the epoch as broken-down time (local: the reader's TZ; else UTC shifted
 * by offset seconds), through `cache` when not NULL; returns the microseconds within the
 * second. */
long t2_split_time(int64_t us, int local, int32_t offset, struct tm *tm, t2_clock *cache);
/* Git's sq_quote_buf_pretty (quote.c). */
void t2_sq_pretty(t2_buf *b, const char *s, size_t n);
/* Git's sq_append_quote_argv_pretty over a StringList argument. */
void t2_sq_argv(t2_buf *b, const nt_reader_arg *list);
/* Git's json-writer string escaping: raw bytes >= 0x80 pass through. */
void t2_json_str(t2_buf *b, const char *s, size_t n);

/* NORMAL writes no regions, data, thread events or too_many_files; PERF no too_many_files;
 * neither writes an event only a newer Git knows (Git's own text targets would not). */
int t2_normal_writes(nt_t2_event t);
int t2_perf_writes(nt_t2_event t);
void t2_format_normal(t2_buf *b, const t2_msg *m, int brief);
void t2_format_perf(t2_buf *b, const t2_msg *m, int brief);
/* Returns 0 when the EVENT target does not write this message (nesting filter). */
int t2_format_event(t2_buf *b, const t2_msg *m, int brief, int nesting);

/* nt_trace2_socket.c: an af_unix target as a FILE, one message per line (the public
 * nt_trace2_socket_open), with *sink (may be NULL) for its owner: t2_sink_say warns once per
 * sink ("<who>='<target>': ..."), t2_sink_warned says whether it did, t2_sink_abandon makes
 * every later write fail at once (a blocked send too: the socket is shut down), and
 * t2_sink_forget closes a fork() child's copy of the socket and nothing else. */
typedef struct t2_sink t2_sink;
FILE *t2_sink_open(const char *target, const char *who, t2_sink **sink);
void t2_sink_say(t2_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int t2_sink_warned(t2_sink *s);
void t2_sink_abandon(t2_sink *s);
void t2_sink_forget(t2_sink *s);

/* nt_render_trace2_follow with the loop's wait between polls taken by pause(arg,
 * interval_ms) (nt_follow_loop_paced; NULL: nanosleep): the Trace2 forwarder
 * (nt_trace2_forward.c) wakes its loop for a last poll at exit. */
int t2_follow_paced(nt_follower *f, FILE *out, const nt_trace2_options *opt,
		    unsigned interval_ms, int (*keep_going)(void *arg),
		    int (*pause)(void *arg, unsigned interval_ms), void *arg);

#endif /* NT_TRACE2_H */
