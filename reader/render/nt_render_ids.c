/* nt_render_ids.c - async spans and flows tallied by key (nt_render_ids.h). */
#include <stdlib.h>
#include <string.h>

#include "nt_render_ids.h"

typedef struct nt_id_entry {
	uint64_t hash; /* 0: empty slot */
	uint64_t id;
	uint32_t pid;  /* 0 for a global id */
	uint8_t flow;  /* 1: a flow, 0: an async span */
	uint8_t scope; /* NT_ID_PROCESS or NT_ID_GLOBAL */
	const char *category, *name;
	uint64_t begins, ends, steps;
} nt_id_entry;

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdu;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3u;
	return mix(h, 0);
}

static int same(const nt_id_entry *a, const nt_id_entry *b)
{
	return a->hash == b->hash && a->id == b->id && a->pid == b->pid && a->flow == b->flow &&
	       a->scope == b->scope &&
	       strcmp(a->category, b->category) == 0 && strcmp(a->name, b->name) == 0;
}

static nt_id_entry *find(nt_id_entry *slots, uint32_t cap, const nt_id_entry *key)
{
	uint32_t i = (uint32_t)(key->hash ^ (key->hash >> 32)) & (cap - 1);
	while (slots[i].hash != 0 && !same(&slots[i], key))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int grow(nt_id_tally *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 1024;
	nt_id_entry *slots = cap > t->cap ? calloc(cap, sizeof(*slots)) : NULL;
	if (slots == NULL) {
		t->oom = 1;
		return 0;
	}
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->slots[i].hash != 0)
			*find(slots, cap, &t->slots[i]) = t->slots[i];
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 1;
}

int nt_id_tally_admit(nt_id_tally *t, const nt_reader_event *e)
{
	if (e->id_scope == NT_ID_NONE || t->oom)
		return !t->oom;
	unsigned base = nt_kind_id_base(e->kind);
	nt_id_entry key = { 0 };
	key.id = e->id;
	key.pid = e->id_scope == NT_ID_PROCESS ? e->thread->pid : 0;
	key.flow = base >= NT_KIND_FLOW_BEGIN;
	key.scope = e->id_scope;
	key.category = e->category;
	key.name = e->name;
	uint64_t h = mix(mix(hash_str(hash_str(key.id, key.category), key.name), key.pid),
			 key.flow + 2u * e->id_scope);
	key.hash = h ? h : 1;
	if ((t->used + 1) * 4 > t->cap * 3 && !grow(t))
		return 0;
	nt_id_entry *s = find(t->slots, t->cap, &key);
	if (s->hash == 0) {
		*s = key;
		t->used++;
	}
	if (base == NT_KIND_ASYNC_BEGIN || base == NT_KIND_FLOW_BEGIN)
		s->begins++;
	else if (base == NT_KIND_ASYNC_END || base == NT_KIND_FLOW_END)
		s->ends++;
	else if (base == NT_KIND_FLOW_STEP)
		s->steps++;
	return 1;
}

static nt_id_counts *counts_of(nt_id_counts **all, uint32_t *n, uint32_t *cap, const char *cat)
{
	for (uint32_t i = 0; i < *n; i++)
		if (strcmp((*all)[i].category, cat) == 0)
			return &(*all)[i];
	if (*n == *cap) {
		uint32_t c = *cap ? *cap * 2 : 8;
		nt_id_counts *grown = realloc(*all, c * sizeof(**all));
		if (grown == NULL)
			return NULL;
		*all = grown;
		*cap = c;
	}
	nt_id_counts *k = &(*all)[(*n)++];
	memset(k, 0, sizeof(*k));
	k->category = cat;
	return k;
}

nt_id_counts *nt_id_tally_counts(const nt_id_tally *t, uint32_t *n)
{
	nt_id_counts *all = NULL;
	uint32_t cap = 0;
	*n = 0;
	for (uint32_t i = 0; i < t->cap; i++) {
		const nt_id_entry *s = &t->slots[i];
		if (s->hash == 0)
			continue;
		/* A flow's steps without a begin count as never begun too. */
		uint64_t unbegun = s->ends > s->begins ? s->ends - s->begins : 0;
		uint64_t unended = s->begins > s->ends ? s->begins - s->ends : 0;
		if (s->flow && s->begins == 0 && s->ends == 0)
			unbegun = s->steps != 0;
		if (unbegun == 0 && unended == 0)
			continue;
		nt_id_counts *k = counts_of(&all, n, &cap, s->category);
		if (k == NULL) {
			free(all);
			*n = 0;
			return NULL;
		}
		if (s->flow) {
			k->flow_unfinished += unended;
			k->flow_unbegun += unbegun;
		} else {
			k->async_unended += unended;
			k->async_unbegun += unbegun;
		}
	}
	return all;
}

uint64_t nt_id_tally_keys(const nt_id_tally *t, uint64_t *async_keys, uint64_t *flow_keys)
{
	*async_keys = *flow_keys = 0;
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->slots[i].hash != 0)
			++*(t->slots[i].flow ? flow_keys : async_keys);
	return *async_keys + *flow_keys;
}

uint32_t nt_id_tally_totals(nt_id_tally *t, nt_id_counts *sum)
{
	uint32_t n;
	nt_id_counts *k = nt_id_tally_counts(t, &n);
	memset(sum, 0, sizeof(*sum));
	for (uint32_t i = 0; i < n; i++) {
		sum->async_unended += k[i].async_unended;
		sum->async_unbegun += k[i].async_unbegun;
		sum->flow_unfinished += k[i].flow_unfinished;
		sum->flow_unbegun += k[i].flow_unbegun;
	}
	free(k);
	return n;
}

uint64_t nt_id_trace_wide(const nt_reader_event *e)
{
	if (e->id_scope == NT_ID_GLOBAL)
		return e->id;
	uint64_t z = e->id ^ ((uint64_t)e->thread->pid * 0x9e3779b97f4a7c15u + 0x632be59bd9b4e019u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

uint64_t nt_id_key(const nt_reader_event *e)
{
	unsigned flow = nt_kind_id_base(e->kind) >= NT_KIND_FLOW_BEGIN;
	uint64_t h = mix(hash_str(hash_str(nt_id_trace_wide(e), e->category), e->name),
			 flow + 2u * e->id_scope);
	return h ? h : 1;
}

void nt_id_tally_free(nt_id_tally *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->used = 0;
}
