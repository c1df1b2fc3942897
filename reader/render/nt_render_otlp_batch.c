/*
 * nt_render_otlp_batch.c - the OTLP exporter's bottom: ids, the maps of open ids, and the
 * requests. Each ended span is encoded at once into the batch of its (section, category);
 * when the batch holds OT_BATCH_BYTES it becomes one ExportTraceServiceRequest (a
 * ResourceSpans per section, a ScopeSpans per category) handed to the caller, and the
 * metrics likewise one ExportMetricsServiceRequest. Memory: one batch, whatever the archive.
 */
#include <stdlib.h>
#include <string.h>

#include "reader/common/nt_grow.h"
#include "nt_render_otlp.h"

/* splitmix64's finalizer: a bijection, so distinct inputs give distinct ids. */
uint64_t ot_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static size_t home(const ot_map *m, uint64_t key)
{
	return (size_t)(ot_mix(key) & (m->cap - 1));
}

void *ot_map_get(const ot_map *m, uint64_t key)
{
	if (m->cap == 0)
		return NULL;
	for (size_t i = home(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return m->vals[i];
		if (m->keys[i] == 0)
			return NULL;
	}
}

static void map_insert(ot_map *m, uint64_t key, void *val)
{
	size_t i = home(m, key);
	while (m->keys[i] != 0)
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
}

/* Doubles the table (from 64 slots), rehashing what it holds: a map starts small, since
 * end_open and ot_map_free walk every slot and most archives keep a few ids open. 0: out
 * of memory, the map as it was. */
static int map_grow(ot_map *m)
{
	ot_map g = { .cap = m->cap ? 2 * m->cap : 64 };
	g.keys = calloc(g.cap, sizeof(*g.keys));
	g.vals = calloc(g.cap, sizeof(*g.vals));
	if (g.keys == NULL || g.vals == NULL) {
		ot_map_free(&g);
		return 0;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i] != 0)
			map_insert(&g, m->keys[i], m->vals[i]);
	ot_map_free(m);
	*m = g;
	return 1;
}

/* 1 stored, 0 full (OT_OPEN_IDS_MAX) or out of memory. key must not be in the map. */
int ot_map_put(ot_map *m, uint64_t key, void *val)
{
	if (m->n >= OT_OPEN_IDS_MAX)
		return 0;
	if (2 * (m->n + 1) > m->cap && !map_grow(m)) /* load stays at most 1/2 */
		return 0;
	map_insert(m, key, val);
	return 1;
}

/* Removes key and returns its value (NULL: absent); later entries shift back so that no
 * probe sequence has a hole. */
void *ot_map_del(ot_map *m, uint64_t key)
{
	if (m->cap == 0)
		return NULL;
	size_t mask = m->cap - 1, i = home(m, key);
	while (m->keys[i] != key) {
		if (m->keys[i] == 0)
			return NULL;
		i = (i + 1) & mask;
	}
	void *val = m->vals[i];
	for (size_t j = (i + 1) & mask; m->keys[j] != 0; j = (j + 1) & mask) {
		size_t h = home(m, m->keys[j]);
		/* j's entry may move to i when its home is not in (i, j] */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = 0;
	m->vals[i] = NULL;
	m->n--;
	return val;
}

void ot_map_free(ot_map *m)
{
	free(m->keys);
	free(m->vals);
	*m = (ot_map){ 0 };
}

void ot_put_id(nt_pb *b, uint32_t field, uint64_t hi, uint64_t lo, int n)
{
	uint8_t id[16];
	for (int i = 0; i < 8; i++) {
		id[i] = (uint8_t)(hi >> (56 - 8 * i));
		id[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
	}
	nt_pb_bytes(b, field, n == 16 ? id : id + 8, (size_t)n);
}

uint32_t ot_res_find(ot_ctx *c, uint32_t section, uint32_t pid,
		     const nt_reader_process *t2)
{
	/* newest first: a section's threads are met together, so the search is short */
	for (size_t i = c->nres; i-- > 0;)
		if (c->res[i].section == section && c->res[i].pid == pid)
			return (uint32_t)i;
	if (!nt_grow(&c->res, &c->res_cap, c->nres + 1, sizeof(*c->res))) {
		c->oom = 1;
		return 0;
	}
	c->res[c->nres].section = section;
	c->res[c->nres].pid = pid;
	c->res[c->nres].t2 = t2;
	return (uint32_t)c->nres++;
}

static uint64_t cat_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

/* The batch's scope of (res, cat), added when new (the batch sent first when its index is
 * half full); NULL when memory runs out. */
static ot_scope *scope_find(ot_ctx *c, uint32_t res, const char *cat)
{
	if (c->scope_index == NULL &&
	    (c->scope_index = calloc(OT_SCOPE_INDEX, sizeof(*c->scope_index))) == NULL) {
		c->oom = 1;
		return NULL;
	}
	size_t mask = OT_SCOPE_INDEX - 1, i = (size_t)ot_mix(cat_hash(cat) ^ res) & mask;
	for (; c->scope_index[i]; i = (i + 1) & mask) {
		ot_scope *s = &c->scopes[c->scope_index[i] - 1];
		if (s->res == res && strcmp(s->cat, cat) == 0)
			return s;
	}
	if (c->nscopes >= OT_SCOPE_INDEX / 2) {
		ot_flush(c);
		return c->oom ? NULL : scope_find(c, res, cat);
	}
	if (!nt_grow(&c->scopes, &c->scopes_cap, c->nscopes + 1, sizeof(*c->scopes))) {
		c->oom = 1;
		return NULL;
	}
	char *copy = strdup(cat);
	if (copy == NULL) {
		c->oom = 1;
		return NULL;
	}
	ot_scope *s = &c->scopes[c->nscopes++];
	s->res = res;
	s->cat = copy;
	s->spans.len = s->metrics.len = 0;
	c->scope_index[i] = (uint16_t)c->nscopes;
	return s;
}

ot_scope *ot_scope_of(ot_ctx *c, uint32_t res, const char *cat)
{
	return scope_find(c, res, cat);
}

void ot_span_emit(ot_ctx *c, ot_span *s, int64_t end)
{
	ot_scope *sc = scope_find(c, s->res, s->cat);
	if (sc == NULL)
		return;
	nt_pb *b = &sc->spans;
	size_t before = b->len, at = nt_pb_open(b, OT_SS_SPANS);
	ot_put_id(b, OT_SPAN_TRACE_ID, s->trace_hi, s->trace_lo, 16);
	ot_put_id(b, OT_SPAN_SPAN_ID, 0, s->id, 8);
	if (s->parent)
		ot_put_id(b, OT_SPAN_PARENT, 0, s->parent, 8);
	const char *name = s->name;
	pf_string(b, OT_SPAN_NAME, name, strlen(name));
	nt_pb_varint(b, OT_SPAN_KIND, s->t2_process ? OT_SPAN_KIND_SERVER : OT_SPAN_KIND_INTERNAL);
	nt_pb_fixed64(b, OT_SPAN_START, (uint64_t)s->start);
	nt_pb_fixed64(b, OT_SPAN_END, (uint64_t)(end < s->start ? s->start : end));
	uint8_t *p = nt_pb_room(b, s->body.len);
	if (p && s->body.len) {
		memcpy(p, s->body.p, s->body.len);
		b->len += s->body.len;
	}
	if (s->dropped_events)
		nt_pb_varint(b, OT_SPAN_DROPPED_EVENTS, s->dropped_events);
	if (s->dropped_links)
		nt_pb_varint(b, OT_SPAN_DROPPED_LINKS, s->dropped_links);
	nt_pb_close(b, at);
	if (b->oom || s->body.oom)
		c->oom = 1;
	c->batch_spans += b->len - before;
	ot_batch_maybe_flush(c);
}

static const nt_pb *resource_of(ot_ctx *c, uint32_t res)
{
	nt_pb *b = &c->res[res].pb;
	if (b->len == 0 && c->r) { /* between parts every Resource is built (end_part) */
		ot_resource(b, c->r, c->res[res].section, c->res[res].pid, c->res[res].t2);
		if (b->oom)
			c->oom = 1;
	}
	return b;
}

static void raw(nt_pb *b, const nt_pb *from)
{
	uint8_t *p = nt_pb_room(b, from->len);
	if (p && from->len) {
		memcpy(p, from->p, from->len);
		b->len += from->len;
	}
}

/* One request of `metrics` or spans: a Resource* per Resource with something, in it a
 * Scope* per category. */
static void send(ot_ctx *c, int metrics)
{
	nt_pb *b = &c->req;
	b->len = 0;
	for (size_t i = 0; i < c->nscopes; i++) {
		ot_scope *first = &c->scopes[i];
		nt_pb *items = metrics ? &first->metrics : &first->spans;
		if (items->len == 0)
			continue;
		size_t rs = nt_pb_open(b, metrics ? OT_METRICS_REQ_RM : OT_TRACE_REQ_RS);
		size_t res = nt_pb_open(b, metrics ? OT_RM_RESOURCE : OT_RS_RESOURCE);
		raw(b, resource_of(c, first->res));
		nt_pb_close(b, res);
		for (size_t j = i; j < c->nscopes; j++) {
			ot_scope *s = &c->scopes[j];
			nt_pb *it = metrics ? &s->metrics : &s->spans;
			if (s->res != first->res || it->len == 0)
				continue;
			size_t ss = nt_pb_open(b, metrics ? OT_RM_SCOPE_METRICS : OT_RS_SCOPE_SPANS);
			size_t sc = nt_pb_open(b, metrics ? OT_SM_SCOPE : OT_SS_SCOPE);
			pf_string(b, OT_SCOPE_NAME, s->cat, strlen(s->cat));
			nt_pb_close(b, sc);
			raw(b, it);
			nt_pb_close(b, ss);
			it->len = 0;
		}
		nt_pb_close(b, rs);
	}
	if (b->oom || c->oom) {
		c->oom = 1;
		return;
	}
	if (b->len && !c->stopped &&
	    c->emit(c->emit_ctx, metrics ? NT_OTLP_METRICS : NT_OTLP_TRACES, b->p, b->len))
		c->stopped = 1;
}

void ot_flush(ot_ctx *c)
{
	if (c->batch_spans)
		send(c, 0);
	if (c->batch_metrics)
		send(c, 1);
	c->batch_spans = c->batch_metrics = 0;
	/* the buffers go too: a bundle of many processes and categories would otherwise keep
	 * one grown buffer per (process, category) it ever saw */
	for (size_t i = 0; i < c->nscopes; i++) {
		free(c->scopes[i].spans.p);
		free(c->scopes[i].metrics.p);
		free(c->scopes[i].cat);
		c->scopes[i].spans = c->scopes[i].metrics = (nt_pb){ 0 };
		c->scopes[i].cat = NULL;
	}
	c->nscopes = 0;
	if (c->scope_index)
		memset(c->scope_index, 0, OT_SCOPE_INDEX * sizeof(*c->scope_index));
}

void ot_batch_maybe_flush(ot_ctx *c)
{
	if (c->batch_spans + c->batch_metrics >= OT_BATCH_BYTES)
		ot_flush(c);
}
