/*
 * nt_render_perfetto_seq.c - the Perfetto renderer's packet sequences: one per thread,
 * with its interning tables and its incremental clock, and the packets that frame events.
 *
 * Perfetto's rules, as perfetto_trace.proto (TracePacket) states them:
 * - a sequence is the packets of one trusted_packet_sequence_id; interned data (event
 *   names, categories, annotation names), TracePacketDefaults and sequence-scoped clocks
 *   are valid only on it;
 * - its first packet sets SEQ_INCREMENTAL_STATE_CLEARED (and first_packet_on_sequence: no
 *   loss before it) and carries the defaults (the thread's track, timestamps on clock 64)
 *   and a ClockSnapshot of clock 64 (incremental) against CLOCK_MONOTONIC; every later
 *   packet sets SEQ_NEEDS_INCREMENTAL_STATE;
 * - a name is interned the first time the sequence uses it, in the packet that uses it;
 *   iids count from 1 per kind and sequence. State is never cleared mid-sequence: a reader
 *   of the file loses no packet.
 * - a packet's timestamp on clock 64 is the delta from the sequence's previous one; an
 *   event earlier than that (a Complete, stamped at its start, recorded at its end) takes
 *   an absolute CLOCK_MONOTONIC timestamp instead (timestamp_clock_id 3), which leaves
 *   clock 64 where it was.
 * Memory: per thread, its distinct names and counter tracks; never per event.
 */
#include <stdlib.h>
#include <string.h>

#include "nt_render_perfetto.h"

/* ---- strings ---------------------------------------------------------------------------- */

/* A string field as valid UTF-8 (protobuf strings must be): a byte that starts no valid
 * sequence becomes U+FFFD, as nt_json_write_string shows it. */
void pf_string(nt_pb *b, uint32_t field, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < n && u[i] < 0x80)
		i++;
	if (i == n) { /* the common case: ASCII */
		nt_pb_bytes(b, field, s, n);
		return;
	}
	size_t at = nt_pb_open(b, field);
	for (i = 0; i < n;) {
		size_t len = u[i] < 0x80 ? 1 : nt_utf8_seq(u + i, n - i);
		uint8_t *p = nt_pb_room(b, 4);
		if (p == NULL)
			return;
		if (len == 0) {
			memcpy(p, "\xEF\xBF\xBD", 3);
			b->len += 3;
			i++;
		} else {
			memcpy(p, u + i, len);
			b->len += len;
			i += len;
		}
	}
	nt_pb_close(b, at);
}

/* ---- interning: per sequence, by content -------------------------------------------------- */

static uint64_t pf_hash(const char *s, size_t n, uint32_t kind)
{
	uint64_t h = 0x9E3779B97F4A7C15ull ^ (kind * 0xFF51AFD7ED558CCDull) ^ n;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xC2B2AE3D27D4EB4Full;
		h ^= h >> 29;
	}
	uint64_t w = 0;
	memcpy(&w, s + i, n - i);
	h = (h ^ w) * 0xC2B2AE3D27D4EB4Full;
	return h ^ (h >> 32);
}

static int pf_table_grow(pf_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	pf_entry *e = calloc(cap, sizeof(*e));
	if (e == NULL)
		return 0;
	for (size_t i = 0; i < t->cap; i++) {
		if (t->e[i].s == NULL)
			continue;
		size_t j = t->e[i].hash & (cap - 1);
		while (e[j].s != NULL)
			j = (j + 1) & (cap - 1);
		e[j] = t->e[i];
	}
	free(t->e);
	t->e = e;
	t->cap = cap;
	return 1;
}

/* The entry of n bytes at s, or 0 (nothing added). */
static int pf_table_find_only(const pf_table *t, uint32_t kind, const char *s, size_t n,
			      pf_entry **entry)
{
	if (t->cap == 0)
		return 0;
	uint64_t h = pf_hash(s, n, kind);
	for (size_t j = h & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
		pf_entry *e = &t->e[j];
		if (e->s == NULL)
			return 0;
		if (e->hash == h && e->kind == kind && e->len == n && memcmp(e->s, s, n) == 0) {
			*entry = e;
			return 1;
		}
	}
}

int pf_table_find(pf_table *t, uint32_t kind, const char *s, size_t n, pf_entry **entry)
{
	*entry = NULL;
	if ((t->n + 1) * 4 > t->cap * 3 && !pf_table_grow(t))
		return -1;
	uint64_t h = pf_hash(s, n, kind);
	size_t j = h & (t->cap - 1);
	for (;; j = (j + 1) & (t->cap - 1)) {
		pf_entry *e = &t->e[j];
		if (e->s == NULL)
			break;
		if (e->hash == h && e->kind == kind && e->len == n && memcmp(e->s, s, n) == 0) {
			*entry = e;
			return 1;
		}
	}
	char *copy = malloc(n + 1);
	if (copy == NULL)
		return -1;
	memcpy(copy, s, n);
	copy[n] = '\0';
	t->e[j] = (pf_entry){ .hash = h, .s = copy, .len = (uint32_t)n, .kind = kind };
	t->n++;
	*entry = &t->e[j];
	return 0;
}

void pf_table_free(pf_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->e[i].s);
	free(t->e);
	*t = (pf_table){ 0 };
}

/* The InternedData field and the entry fields of each kind. */
static const struct {
	uint32_t list, iid, name;
} pf_kinds[PF_INTERNED_KINDS] = {
	[PF_NAME] = { PF_ID_EVENT_NAMES, PF_IN_IID, PF_IN_NAME },
	[PF_CATEGORY] = { PF_ID_EVENT_CATEGORIES, PF_IC_IID, PF_IC_NAME },
	[PF_ANNOTATION] = { PF_ID_ANNOTATION_NAMES, PF_IA_IID, PF_IA_NAME },
	[PF_STRING_VALUE] = { PF_ID_STRING_VALUES, PF_IS_IID, PF_IS_STR },
};

/* The iid of n bytes at str. */
static uint64_t intern(pf_ctx *c, pf_seq *s, uint32_t kind, const char *str, size_t n)
{
	pf_entry *e;
	int found = pf_table_find(&s->tab, kind, str, n, &e);
	if (found < 0) {
		c->pkt.oom = 1;
		return 0;
	}
	if (found)
		return e->val;
	uint64_t iid = e->val = ++s->next_iid[kind];
	nt_pb *in = &c->interned;
	size_t at = nt_pb_open(in, pf_kinds[kind].list);
	nt_pb_varint(in, pf_kinds[kind].iid, iid);
	pf_string(in, pf_kinds[kind].name, str, n);
	nt_pb_close(in, at);
	return iid;
}

uint64_t pf_intern_slow(pf_ctx *c, pf_seq *s, uint32_t kind, const char *str, pf_cached *k)
{
	uint64_t iid = intern(c, s, kind, str, strlen(str));
	if (iid)
		*k = (pf_cached){ .ptr = str, .iid = iid };
	return iid;
}

uint64_t pf_intern_value(pf_ctx *c, pf_seq *s, const char *str, size_t n)
{
	if (n > PF_VALUE_MAX)
		return 0;
	if (s->next_iid[PF_STRING_VALUE] >= PF_VALUES_MAX) { /* full: only what it holds */
		pf_entry *e;
		return pf_table_find_only(&s->tab, PF_STRING_VALUE, str, n, &e) ? e->val : 0;
	}
	int oom = c->pkt.oom;
	uint64_t iid = intern(c, s, PF_STRING_VALUE, str, n);
	if (iid == 0)
		c->pkt.oom = oom; /* no memory for the table: the value is written whole instead */
	return iid;
}

/* ---- packets ---------------------------------------------------------------------------- */

/* A sequence's first packet: state cleared, the defaults, clock 64 at ts. */
void pf_seq_start(pf_ctx *c, const nt_reader_thread *t, pf_seq *s, uint64_t ts)
{
	nt_pb *b = &c->aux;
	b->len = 0;
	nt_pb_varint(b, PF_PKT_TIMESTAMP, ts);
	nt_pb_varint(b, PF_PKT_TIMESTAMP_CLOCK_ID, PF_CLOCK_MONOTONIC);
	nt_pb_varint(b, PF_PKT_SEQUENCE_ID, PF_SEQ_THREAD_BASE + t->index);
	nt_pb_varint(b, PF_PKT_SEQUENCE_FLAGS, PF_SEQ_INCREMENTAL_STATE_CLEARED);
	nt_pb_varint(b, PF_PKT_FIRST_ON_SEQUENCE, 1);
	size_t d = nt_pb_open(b, PF_PKT_DEFAULTS);
	nt_pb_varint(b, PF_DEF_TIMESTAMP_CLOCK_ID, PF_CLOCK_SEQUENCE);
	size_t te = nt_pb_open(b, PF_DEF_TRACK_EVENT);
	nt_pb_varint(b, PF_TED_TRACK_UUID, pf_thread_uuid(t));
	nt_pb_close(b, te);
	nt_pb_close(b, d);
	size_t cs = nt_pb_open(b, PF_PKT_CLOCK_SNAPSHOT);
	size_t k = nt_pb_open(b, PF_CS_CLOCKS);
	nt_pb_varint(b, PF_CLK_ID, PF_CLOCK_SEQUENCE);
	nt_pb_varint(b, PF_CLK_TIMESTAMP, ts);
	nt_pb_varint(b, PF_CLK_INCREMENTAL, 1);
	nt_pb_close(b, k);
	k = nt_pb_open(b, PF_CS_CLOCKS);
	nt_pb_varint(b, PF_CLK_ID, PF_CLOCK_MONOTONIC);
	nt_pb_varint(b, PF_CLK_TIMESTAMP, ts);
	nt_pb_close(b, k);
	nt_pb_close(b, cs);
	pf_emit(c, b);
	s->started = 1;
	s->last_ts = ts;
}

/* A TrackDescriptor packet on sequence `seq` (aux buffer): uuid, parent (0: none), name
 * (NULL: none); the caller adds process, thread or counter through `body` fields after it. */
size_t pf_track_begin(pf_ctx *c, uint32_t seq, uint64_t uuid, uint64_t parent, const char *name,
		      size_t name_len)
{
	nt_pb *b = &c->aux;
	b->len = 0;
	nt_pb_varint(b, PF_PKT_SEQUENCE_ID, seq);
	size_t td = nt_pb_open(b, PF_PKT_TRACK_DESCRIPTOR);
	nt_pb_varint(b, PF_TD_UUID, uuid);
	if (parent)
		nt_pb_varint(b, PF_TD_PARENT_UUID, parent);
	if (name)
		pf_string(b, PF_TD_NAME, name, name_len);
	return td;
}

void pf_track_end(pf_ctx *c, size_t td)
{
	nt_pb_close(&c->aux, td);
	pf_emit(c, &c->aux);
}
