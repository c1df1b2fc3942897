/*
 * nt_render_otlp_part.c - the OTLP exporter's state across parts: nt_otlp_exporter_*, and
 * nt_otlp_export as one part.
 *
 * A part is a reader of the next piece of the same processes (a live shipper's: a
 * streaming section's saved records so far). The state the visit keeps (nt_render_otlp.c)
 * is by section, by thread place and by Trace2 process; each part's reader may define more
 * of them (its durable records grew), so before a part is visited the tables grow and the
 * new threads get the next places, while a known thread (by its index, which a section
 * keeps) keeps its place and its open spans. After the visit, what outlives the part's
 * reader is made its own: the names of the spans still open are copied into the span
 * (ot_span.own), every Resource's fields are built (they read the part's section), and the
 * complete spans are sent.
 */
#define _GNU_SOURCE /* secure_getenv */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reader/common/nt_grow.h"
#include "nt_render_otlp.h"

struct nt_otlp_exporter {
	ot_ctx c;
	nt_render_options opt;
	int ended; /* finished, or a part failed: adds refused */
};

/* The section's parent context: the TRACEPARENT its process was started with (the header's,
 * format 2.4), else the exporting program's own, as an SDK reads it. A header's value is
 * checked again: a section's header is as untrusted as the rest. */
static void traceparent(ot_tp *t, const nt_archive_info *info)
{
	t->has = info && nt_traceparent_parse(info->traceparent, &t->tp);
	if (!t->has)
		t->has = nt_traceparent_parse(secure_getenv("TRACEPARENT"), &t->tp);
}

/* Section i's header into *hdr, or NULL when it could not be opened. A closed section of a
 * bundle stays closed (nt_reader_section_at would open it for the reader's life). */
static const nt_archive_info *header_of(const nt_reader *r, uint32_t i, nt_archive_info *hdr)
{
	return nt_reader_section_header(r, i, hdr) == 0 ? hdr : NULL;
}

static uint64_t salt_of(uint32_t pid, const nt_archive_info *info)
{
	return ot_mix(pid) ^ (info ? ot_mix(info->start_realtime_ns) : 0);
}

/* *arr made n elements of `elem` bytes, those from `old` zeroed (old <= n). 0: out of
 * memory, *arr as it was. */
static int grow_zeroed(void *arr, size_t old, size_t n, size_t elem)
{
	char **p = arr, *q = realloc(*p, n * elem);
	if (q == NULL)
		return 0;
	memset(q + old * elem, 0, (n - old) * elem);
	*p = q;
	return 1;
}

/* *arr of old + 1 elements (the last one: an event of no section's) made n + 1, the last
 * one moved to its new place, the new ones zeroed. 0: out of memory. */
static int grow_sections(void *arr, uint32_t old, uint32_t n, size_t elem)
{
	char **p = arr;
	int fresh = *p == NULL;
	if (!grow_zeroed(arr, fresh ? 0 : (size_t)old + 1, (size_t)n + 1, elem))
		return 0;
	if (!fresh && n > old) {
		memmove(*p + (size_t)n * elem, *p + (size_t)old * elem, elem);
		memset(*p + (size_t)old * elem, 0, elem);
	}
	return 1;
}

/* The part's sections: new ones added; a known one must be the same process (its salt). */
static int add_sections(ot_ctx *c, nt_reader *r)
{
	uint32_t n = nt_reader_section_count(r), old = c->nsections;
	nt_archive_info hdr;
	for (uint32_t i = 0; i < old && i < n; i++)
		if (c->sec_salt[i] !=
		    salt_of(nt_reader_section_peek(r, i)->pid, header_of(r, i, &hdr)))
			return EINVAL;
	if (n <= old && c->sec_salt != NULL)
		return 0;
	if (!grow_sections(&c->sec_salt, old, n, sizeof(*c->sec_salt)) ||
	    !grow_sections(&c->sec_ordinal, old, n, sizeof(*c->sec_ordinal)) ||
	    !grow_sections(&c->sec_pid, old, n, sizeof(*c->sec_pid)) ||
	    !grow_sections(&c->last_wall, old, n, sizeof(*c->last_wall)) ||
	    !grow_sections(&c->gap_events, old, n, sizeof(*c->gap_events)) ||
	    !grow_sections(&c->tp, old, n, sizeof(*c->tp)))
		return ENOMEM;
	for (uint32_t i = old; i < n; i++) {
		const nt_reader_section *s = nt_reader_section_peek(r, i);
		const nt_archive_info *info = header_of(r, i, &hdr);
		c->sec_salt[i] = salt_of(s->pid, info);
		c->sec_pid[i] = s->pid;
		if (info)
			c->last_wall[i] = (int64_t)info->start_realtime_ns;
		traceparent(&c->tp[i], info);
	}
	c->nsections = n;
	return 0;
}

/* The part's threads: a new index gets the next place; place_of spans the part's index
 * limit (what the reader bounds). */
static int add_threads(ot_ctx *c, nt_reader *r)
{
	uint32_t lim = nt_reader_thread_index_limit(r), n = nt_reader_thread_count(r);
	if (lim > c->nindices || c->place_of == NULL) {
		if (!grow_zeroed(&c->place_of, c->nindices, (size_t)lim + 1, sizeof(*c->place_of)))
			return ENOMEM;
		c->nindices = lim;
	}
	for (uint32_t i = 0; i < n; i++) {
		const nt_reader_thread *t = nt_reader_thread_at(r, i);
		if (t == NULL || t->index >= c->nindices || c->place_of[t->index])
			continue;
		if (!nt_grow(&c->threads, &c->threads_cap, c->nthreads + 1, sizeof(*c->threads)) ||
		    !nt_grow(&c->res_of, &c->res_of_cap, c->nthreads + 1, sizeof(*c->res_of)))
			return ENOMEM;
		c->threads[c->nthreads].section = t->section;
		c->place_of[t->index] = ++c->nthreads;
	}
	/* res_of has a slot for the stray thread too (read, never written: res_of()) */
	if (!nt_grow(&c->res_of, &c->res_of_cap, c->nthreads + 1, sizeof(*c->res_of)))
		return ENOMEM;
	uint32_t np = nt_reader_process_count(r);
	if (np > c->nprocs || c->procs == NULL) {
		if (!grow_zeroed(&c->procs, c->nprocs, (size_t)np + 1, sizeof(*c->procs)))
			return ENOMEM;
		c->nprocs = np;
	}
	return 0;
}

/* s's name and category copied into s (they may already be there). */
static void keep_names(ot_ctx *c, ot_span *s)
{
	size_t ln = strlen(s->name) + 1, lc = strlen(s->cat) + 1;
	char *own = malloc(ln + lc);
	if (own == NULL) {
		c->oom = 1;
		return;
	}
	memcpy(own, s->name, ln);
	memcpy(own + ln, s->cat, lc);
	free(s->own);
	s->own = own;
	s->own_cap = ln + lc;
	s->name = own;
	s->cat = own + ln;
}

/* What must outlive the part's reader: the open spans' names, the Resources' fields (every
 * section's, for its losses span; made again from each part's header, whose loss counts a
 * later part may have grown, but a Trace2 process's, made once while its process record
 * was there); then what is complete is sent. */
static void end_part(ot_ctx *c)
{
	for (uint32_t i = 0; i <= c->nthreads; i++) {
		ot_thread *t = ot_thread_at(c, i);
		for (uint32_t d = 0; d < t->depth && d < OT_DEPTH_MAX; d++)
			keep_names(c, &t->stack[d]);
	}
	for (size_t i = 0; i < c->open_ids.cap; i++)
		if (c->open_ids.vals[i])
			keep_names(c, c->open_ids.vals[i]);
	for (uint32_t i = 0; i < c->nsections; i++)
		ot_res_find(c, i, c->sec_pid[i], NULL);
	for (size_t i = 0; i < c->nres; i++) {
		ot_res *res = &c->res[i];
		if (res->pb.len == 0 || !res->of_t2) { /* this part's header: its latest counts */
			res->pb.len = 0;
			res->of_t2 = res->t2 != NULL;
			ot_resource(&res->pb, c->r, res->section, res->pid, res->t2);
		}
		if (res->pb.oom)
			c->oom = 1;
		res->t2 = NULL;
	}
	ot_flush(c);
}

nt_otlp_exporter *nt_otlp_exporter_new(const nt_render_options *opt, nt_otlp_emit emit,
				       void *ctx)
{
	if (emit == NULL) {
		errno = EINVAL;
		return NULL;
	}
	nt_otlp_exporter *x = calloc(1, sizeof(*x));
	if (x == NULL)
		return NULL;
	if (nt_render_options_in(opt, &x->opt, "nt_otlp_exporter_new") != 0) {
		free(x);
		return NULL;
	}
	x->c.opt = &x->opt;
	x->c.emit = emit;
	x->c.emit_ctx = ctx;
	return x;
}

/* errno for a failed step: ENOMEM, or what emit left when it stopped the export. */
static int failed(nt_otlp_exporter *x, int err)
{
	x->ended = 1;
	errno = x->c.oom ? ENOMEM : err;
	return -1;
}

/* The visit of part; `stays`: the part's reader lives until finish (nt_otlp_export's one
 * part), so nothing need be copied and the last batch waits for the ends. */
static int add(nt_otlp_exporter *x, nt_reader *part, int stays)
{
	if (x == NULL || part == NULL || x->ended) {
		errno = EINVAL;
		return -1;
	}
	ot_ctx *c = &x->c;
	int err = add_sections(c, part);
	if (err == 0)
		err = add_threads(c, part);
	if (err == EINVAL) {
		errno = EINVAL; /* another process's part: refused, the exporter as it was */
		return -1;
	}
	if (err)
		c->oom = 1;
	int rc = -1;
	c->r = part;
	c->part++;
	if (!c->oom) {
		rc = ot_visit(c);
		if (!c->oom && !c->stopped && !stays)
			end_part(c);
	}
	err = errno;
	if (!stays)
		c->r = NULL;
	return c->oom || c->stopped ? failed(x, err) : rc;
}

int nt_otlp_exporter_add(nt_otlp_exporter *x, nt_reader *part)
{
	return add(x, part, 0);
}

int nt_otlp_exporter_finish(nt_otlp_exporter *x)
{
	if (x == NULL || x->ended) {
		errno = EINVAL;
		return -1;
	}
	x->ended = 1;
	ot_end(&x->c);
	return x->c.oom || x->c.stopped ? failed(x, errno) : 0;
}

static void free_thread(ot_thread *t)
{
	for (size_t k = 0; k < t->cap; k++) {
		free(t->stack[k].body.p);
		free(t->stack[k].own);
	}
	free(t->stack);
}

void nt_otlp_exporter_free(nt_otlp_exporter *x)
{
	if (x == NULL)
		return;
	ot_ctx *c = &x->c;
	for (uint32_t i = 0; i <= c->nthreads; i++)
		free_thread(ot_thread_at(c, i));
	for (size_t i = 0; i < c->nres; i++)
		free(c->res[i].pb.p);
	for (size_t i = 0; i < c->scopes_cap; i++) {
		free(c->scopes[i].spans.p);
		free(c->scopes[i].metrics.p);
		free(c->scopes[i].cat);
	}
	for (size_t i = 0; i < sizeof(c->damage) / sizeof(c->damage[0]); i++)
		free(c->damage[i]);
	for (size_t i = 0; i < c->open_ids.cap; i++)
		if (c->open_ids.vals[i])
			ot_span_free(c->open_ids.vals[i]);
	ot_map_free(&c->open_ids);
	for (size_t i = 0; i < c->flows.cap; i++)
		free(c->flows.vals[i]);
	ot_map_free(&c->flows);
	free(c->scopes);
	free(c->scope_index);
	free(c->req.p);
	free(c->res);
	free(c->place_of);
	free(c->res_of);
	free(c->last_wall);
	free(c->gap_events);
	free(c->threads);
	free(c->procs);
	free(c->tp);
	free(c->sec_salt);
	free(c->sec_ordinal);
	free(c->sec_pid);
	free(x);
}

int nt_otlp_export(nt_reader *r, const nt_render_options *opt, nt_otlp_emit emit, void *ctx)
{
	if (r == NULL || emit == NULL) {
		errno = EINVAL;
		return -1;
	}
	nt_render_options in;
	if (nt_render_options_in(opt, &in, "nt_otlp_export") != 0)
		return -1;
	nt_otlp_exporter *x = nt_otlp_exporter_new(&in, emit, ctx);
	if (x == NULL)
		return -1;
	int rc = add(x, r, 1);
	if (!x->ended && nt_otlp_exporter_finish(x) != 0)
		rc = -1;
	int err = errno;
	nt_otlp_exporter_free(x);
	errno = err;
	return rc;
}
