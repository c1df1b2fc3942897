/* nt_render_ids.h - async spans and flows by their id, for --stats, Chrome's otherData and
 * the Perfetto renderer (not installed). */
#ifndef NT_RENDER_IDS_H
#define NT_RENDER_IDS_H

#include <stdint.h>

#include <nanotrace/nanotrace_reader.h>

/* Per category: async spans begun and never ended, async ends whose begin is not in the
 * trace, flows begun and never ended, flow steps and ends whose begin is not in the trace. */
typedef struct nt_id_counts {
	const char *category; /* owned by the tally */
	uint64_t async_unended, async_unbegun, flow_unfinished, flow_unbegun;
} nt_id_counts;

/* Events of an async span or a flow by key: the scope, the process for a process-scoped id
 * (a global one is the same in every process of a bundle), category, name and id. Counts
 * begins and ends per key, so the order events come in does not matter (a stream-order
 * visit gives one thread's chunks before another's). Memory: one entry per key, grown by
 * doubling; a key's strings are the reader's, valid while it is open. */
typedef struct nt_id_tally {
	struct nt_id_entry *slots;
	uint32_t cap, used;
	int oom;
} nt_id_tally;

/* Admits an event: does nothing for one without an id. 0 when memory ran out (the tally
 * stops counting and says so in ->oom). */
int nt_id_tally_admit(nt_id_tally *t, const nt_reader_event *e);
/* The counts per category (only categories with something to count, in first-seen order of
 * the table; *n set), or NULL with *n = 0 when there are none or memory ran out. Free the
 * array with free() (the strings stay the tally's). */
nt_id_counts *nt_id_tally_counts(const nt_id_tally *t, uint32_t *n);
/* Spans and flows seen (keys with a begin or an end). */
uint64_t nt_id_tally_keys(const nt_id_tally *t, uint64_t *async_keys, uint64_t *flow_keys);
void nt_id_tally_free(nt_id_tally *t);
/* The counts summed over every category into *sum; returns how many categories had some
 * (0: nothing unpaired, or memory ran out: then t->oom is set too). */
uint32_t nt_id_tally_totals(nt_id_tally *t, nt_id_counts *sum);

/* An event's id as one value for the whole trace: a global id as it is; a process-scoped
 * one mixed with its pid (a bijection for each process), so that no two ids of one process
 * merge and the same id in two processes stays two. Chrome JSON's flow "id" and the base of
 * nt_id_key. Constant time; an event without an id gives its (0) id mixed likewise. */
uint64_t nt_id_trace_wide(const nt_reader_event *e);
/* A 64-bit key of an async span or flow: nt_id_trace_wide, the scope, span or flow, the
 * category and the name (hashed: two keys share one with chance 2^-64 per pair); never 0.
 * The Perfetto renderer's flow ids and async track uuids. Cost: the strings' length. */
uint64_t nt_id_key(const nt_reader_event *e);

#endif /* NT_RENDER_IDS_H */
