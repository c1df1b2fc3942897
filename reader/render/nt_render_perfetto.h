/* nt_render_perfetto.h - what the Perfetto renderer's two files share (not installed):
 * nt_render_perfetto.c turns events into TrackEvents, nt_render_perfetto_seq.c owns the
 * sequences (interning, incremental clock) and the packets that frame them. */
#ifndef NT_RENDER_PERFETTO_H
#define NT_RENDER_PERFETTO_H

#include <stddef.h>
#include <stdint.h>

#include "nt_pb.h"
#include "nt_render_util.h"

/* Track uuids: one range per kind of track, so no two tracks share one. */
#define PF_UUID_PROCESS (1ull << 56)  /* + section index */
#define PF_UUID_PID (2ull << 56)      /* + thread index: a pid no section names */
#define PF_UUID_THREAD (3ull << 56)   /* + thread index */
#define PF_UUID_COUNTER (4ull << 56)  /* + n: a counter track, in order of first use */
#define PF_UUID_CHILD (5ull << 56)    /* | thread index << 32 | Trace2 child_id */
/* ASYNC SPANS AND FLOWS (issue 26) go here: async tracks take uuids from PF_UUID_ASYNC on,
 * and flow ids go into TrackEvent.flow_ids / terminating_flow_ids (fixed64, fields 47 and
 * 48 of the vendored schema) of the slices they bind, written in pf_slice_event(). */
#define PF_UUID_ASYNC (6ull << 56)

/* Sequences: 1 holds the clock snapshot, the process and thread descriptors and the loss
 * summary (no interning, absolute timestamps); thread i's events are sequence 2 + i. */
#define PF_SEQ_GLOBAL 1u
#define PF_SEQ_THREAD_BASE 2u

/* Interned kinds, per sequence; PF_COUNTER_TRACK maps a counter's name to its track. */
enum { PF_NAME, PF_CATEGORY, PF_ANNOTATION, PF_INTERNED_KINDS, PF_COUNTER_TRACK = 3 };

typedef struct pf_entry {
	uint64_t hash;
	char *s; /* a NUL-terminated copy; NULL: free slot */
	uint32_t len, kind;
	uint64_t val; /* iid or uuid */
} pf_entry;

typedef struct pf_table {
	pf_entry *e;
	size_t cap, n;
} pf_table;

typedef struct pf_seq {
	int started;
	uint64_t last_ts; /* clock 64: the sequence's previous timestamp */
	uint64_t next_iid[PF_INTERNED_KINDS];
	pf_table tab;
	uint32_t t2_processes; /* Trace2 process slices open ("start" without "atexit") */
	uint64_t *children;    /* Trace2 child_ids whose child_start opened a slice */
	size_t nchildren, children_cap;
} pf_seq;

typedef struct pf_ctx {
	nt_out out;
	nt_reader *r;
	const nt_render_options *opt;
	nt_pb pkt;      /* the event packet being built */
	nt_pb interned; /* its InternedData entries, appended at its end */
	nt_pb aux;      /* descriptor and sequence-start packets */
	pf_seq *seq;    /* by thread index */
	uint32_t nthreads;
	nt_balance balance;
	int64_t last_ns;
	uint64_t counters; /* counter tracks made */
	uint64_t packets;
	uint64_t clamped;      /* times before 0, written as 0 (a hostile archive only) */
	uint64_t gap_events;   /* events lost in gaps, over every gap */
	uint64_t damaged;      /* damaged places reported */
	uint64_t non_numeric;  /* counter arguments with no number (strings): not plotted */
	char *damage[100];     /* the first of them, "offset N: message" */
	int oom;
} pf_ctx;

/* nt_render_perfetto_seq.c */
void pf_string(nt_pb *b, uint32_t field, const char *s, size_t n);
/* -1 out of memory; 1 found (*val); 0 added (*slot: set its val). */
int pf_table_find(pf_table *t, uint32_t kind, const char *s, size_t n, uint64_t *val,
		  pf_entry **slot);
void pf_table_free(pf_table *t);
/* The iid of `str` on sequence s, interned into c->interned when new. */
uint64_t pf_intern(pf_ctx *c, pf_seq *s, uint32_t kind, const char *str, size_t n);
void pf_emit(pf_ctx *c, nt_pb *b);
uint64_t pf_thread_uuid(const nt_reader_thread *t);
uint64_t pf_ts(pf_ctx *c, int64_t ns);
/* The thread's sequence, started (its first packet written) at ts if it was not. */
pf_seq *pf_seq_of(pf_ctx *c, const nt_reader_thread *t, uint64_t ts);
/* An event packet on t's sequence at ts: returns the open TrackEvent, closed (and the
 * packet written) by pf_packet_end. */
size_t pf_packet_begin(pf_ctx *c, const nt_reader_thread *t, uint64_t ts, pf_seq **s);
void pf_packet_end(pf_ctx *c, size_t track_event);
size_t pf_track_begin(pf_ctx *c, uint32_t seq, uint64_t uuid, uint64_t parent, const char *name,
		      size_t name_len);
void pf_track_end(pf_ctx *c, size_t td);

#endif /* NT_RENDER_PERFETTO_H */
