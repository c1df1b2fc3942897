/* nt_render_perfetto.h - what the Perfetto renderer's two files share (not installed):
 * nt_render_perfetto.c turns events into TrackEvents, nt_render_perfetto_seq.c owns the
 * sequences (interning, incremental clock) and the packets that frame them. */
#ifndef NT_RENDER_PERFETTO_H
#define NT_RENDER_PERFETTO_H

#include <stddef.h>
#include <stdint.h>

#include "nt_pb.h"
#include "nt_render_ids.h"
#include "nt_render_util.h"

/* Track uuids: the kind of track in the low 3 bits, its number above, so no two tracks
 * share one and the uuids a packet carries (counter tracks) stay short varints. */
#define PF_UUID(kind, n) (((uint64_t)(n) << 3) | (kind))
#define PF_UUID_PROCESS 1u /* n: the section's index */
#define PF_UUID_THREAD 2u  /* n: the thread's index */
#define PF_UUID_COUNTER 3u /* n: the counter track's number, in order of first use */
#define PF_UUID_CHILD 4u   /* n: the thread's index << 32 | the Trace2 child_id */
#define PF_UUID_ASYNC 5u   /* n: the span's nt_id_key >> 3 (an async span's own track) */

/* Async tracks whose descriptor is written and whose span is open: a later event of the
 * span needs no descriptor. Bounded (PF_ASYNC_OPEN_MAX): a span not remembered gets its
 * descriptor again (the same one, which trace_processor accepts), never a wrong one. */
#define PF_ASYNC_OPEN_MAX (1u << 16)
typedef struct pf_uuid_set {
	uint64_t *slot; /* 0: free */
	size_t cap, n;
} pf_uuid_set;

/* Sequences: 1 holds the clock snapshot, the process and thread descriptors and the loss
 * summary (no interning, absolute timestamps); thread i's events are sequence 2 + i. */
#define PF_SEQ_GLOBAL 1u
#define PF_SEQ_THREAD_BASE 2u

/* Interned kinds, per sequence; PF_COUNTER_TRACK maps a counter's name to its track.
 * String argument values are interned too, while short and while the sequence holds few:
 * a value of at most PF_VALUE_MAX bytes, up to PF_VALUES_MAX values per sequence (later
 * ones are written whole), so memory stays bounded whatever the values are. */
enum { PF_NAME, PF_CATEGORY, PF_ANNOTATION, PF_STRING_VALUE, PF_INTERNED_KINDS,
       PF_COUNTER_TRACK = PF_INTERNED_KINDS };
#define PF_VALUE_MAX 64
#define PF_VALUES_MAX 1024

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

/* The last string seen at an address, per kind: a hit skips the hash table. An address
 * keeps its text for the whole rendering: every name an event or argument carries is the
 * reader's durable string table's (built at open; a visit never changes the reader) or a
 * static string (Trace2 message names, the renderer's own), never a visit's buffer. */
#define PF_CACHE 64 /* 2^6: pf_intern takes the top 6 bits of a hash */
typedef struct pf_cached {
	const char *ptr;  /* the caller's string */
	uint64_t iid;
} pf_cached;

typedef struct pf_seq {
	int started;
	pf_cached cache[PF_ANNOTATION + 1][PF_CACHE]; /* names, by address */
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
	pf_seq *seq;    /* one per thread the archive defines */
	uint32_t nthreads;
	uint32_t *seq_of; /* by thread index: 1 + its sequence's place, 0 = none (an archive
			   * defining one thread of index 1<<20 costs 4 MiB here, not a pf_seq
			   * per index below it) */
	uint32_t nindices;
	nt_balance balance;
	nt_id_tally ids;         /* async spans and flows, for the losses' unpaired counts */
	pf_uuid_set async_open;  /* open async spans' tracks, described */
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
/* -1 out of memory; 1 found, 0 added (then set its val): *entry is it. */
int pf_table_find(pf_table *t, uint32_t kind, const char *s, size_t n, pf_entry **entry);
void pf_table_free(pf_table *t);
/* The miss path of pf_intern: the hash table, the entry interned when new, the cache. */
uint64_t pf_intern_slow(pf_ctx *c, pf_seq *s, uint32_t kind, const char *str, pf_cached *k);
/* The iid of a string argument's value, or 0: write it whole (too long, or the sequence
 * interned PF_VALUES_MAX values already, or no memory for the table). */
uint64_t pf_intern_value(pf_ctx *c, pf_seq *s, const char *str, size_t n);
/* A sequence's first packet: state cleared, the defaults, clock 64 at ts. */
void pf_seq_start(pf_ctx *c, const nt_reader_thread *t, pf_seq *s, uint64_t ts);

/* The hot steps, inline: one of each per event. */

/* The iid of the NUL-terminated `str` on sequence s, interned into c->interned when new. */
static inline uint64_t pf_intern(pf_ctx *c, pf_seq *s, uint32_t kind, const char *str)
{
	/* every bit of the address counts: names two bytes apart must not share an entry */
	pf_cached *k = &s->cache[kind][((uint64_t)(uintptr_t)str * 0x9E3779B97F4A7C15ull) >> 58];
	if (__builtin_expect(k->ptr == str, 1))
		return k->iid;
	return pf_intern_slow(c, s, kind, str, k);
}

/* b as one `packet` of the Trace message, into the output. */
static inline void pf_emit(pf_ctx *c, nt_pb *b)
{
	if (b->oom) {
		c->oom = 1;
		return;
	}
	uint8_t *p = (uint8_t *)nt_out_room(&c->out, 12);
	p[0] = (PF_TRACE_PACKET << 3) | NT_PF_WIRE_L;
	nt_out_commit(&c->out, 1 + nt_pb_put_varint(p + 1, b->len));
	nt_out_bytes(&c->out, b->p, b->len);
	c->packets++;
}

static inline uint64_t pf_thread_uuid(const nt_reader_thread *t)
{
	return PF_UUID(PF_UUID_THREAD, t->index);
}

/* The thread's sequence, started (its first packet written) at ts if it was not. */
static inline pf_seq *pf_seq_of(pf_ctx *c, const nt_reader_thread *t, uint64_t ts)
{
	uint32_t k = t->index < c->nindices ? c->seq_of[t->index] : 0;
	pf_seq *s = &c->seq[k ? k - 1 : 0];
	if (__builtin_expect(!s->started, 0))
		pf_seq_start(c, t, s, ts);
	return s;
}

/* An event time as a packet timestamp: CLOCK_MONOTONIC ns, never negative. */
static inline uint64_t pf_ts(pf_ctx *c, int64_t ns)
{
	if (__builtin_expect(ns < 0, 0)) {
		c->clamped++;
		return 0;
	}
	if (ns > c->last_ns)
		c->last_ns = ns;
	return (uint64_t)ns;
}

/* An event packet on t's sequence at ts: returns the open TrackEvent, closed (and the
 * packet written) by pf_packet_end. A time before the sequence's previous one (a Complete,
 * stamped at its start) is absolute on CLOCK_MONOTONIC, leaving clock 64 as it was. */
static inline size_t pf_packet_begin(pf_ctx *c, const nt_reader_thread *t, uint64_t ts,
				     pf_seq **sp)
{
	pf_seq *s = pf_seq_of(c, t, ts);
	*sp = s;
	nt_pb *b = &c->pkt;
	b->len = 0;
	c->interned.len = 0;
	uint8_t *p = nt_pb_room(b, 80);
	if (p == NULL)
		return 0;
	if (__builtin_expect(ts >= s->last_ts, 1)) {
		p = nt_pb_raw_varint(p, PF_PKT_TIMESTAMP, ts - s->last_ts);
		s->last_ts = ts;
	} else {
		p = nt_pb_raw_varint(p, PF_PKT_TIMESTAMP, ts);
		p = nt_pb_raw_varint(p, PF_PKT_TIMESTAMP_CLOCK_ID, PF_CLOCK_MONOTONIC);
	}
	p = nt_pb_raw_varint(p, PF_PKT_SEQUENCE_ID, PF_SEQ_THREAD_BASE + t->index);
	p = nt_pb_raw_varint(p, PF_PKT_SEQUENCE_FLAGS, PF_SEQ_NEEDS_INCREMENTAL_STATE);
	nt_pb_raw_end(b, p);
	return nt_pb_open(b, PF_PKT_TRACK_EVENT);
}

static inline void pf_packet_end(pf_ctx *c, size_t track_event)
{
	nt_pb *b = &c->pkt;
	nt_pb_close(b, track_event);
	if (__builtin_expect(c->interned.len != 0, 0)) {
		nt_pb_bytes(b, PF_PKT_INTERNED_DATA, c->interned.p, c->interned.len);
		if (c->interned.oom)
			b->oom = 1;
	}
	pf_emit(c, b);
}

/* A TrackDescriptor packet on sequence `seq` (aux buffer): uuid, parent (0: none), name
 * (NULL: none); the caller adds process, thread or counter fields before pf_track_end. */
size_t pf_track_begin(pf_ctx *c, uint32_t seq, uint64_t uuid, uint64_t parent, const char *name,
		      size_t name_len);
void pf_track_end(pf_ctx *c, size_t td);

#endif /* NT_RENDER_PERFETTO_H */
