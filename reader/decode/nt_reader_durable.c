/*
 * nt_reader_durable.c - durable records (strings, threads, processes, call sites and their
 * compact arguments) into the reader's tables, each reference checked against what was
 * defined before it, as the format requires (nt_reader_open.c walks the records).
 */
#include <stdlib.h>
#include <string.h>

#include "reader/common/nt_grow.h"
#include "nt_reader_internal.h"

#define MAX_THREAD_INDEX (1u << 20) /* bounds the thread table a corrupt index could demand */

static durable_result damaged(const char **why, const char *what)
{
	*why = what;
	return DURABLE_DAMAGED;
}

/* The pool's first size: a small process's names in one allocation (doubling from 16
 * bytes took four reallocs an open, and a bundle opens each section twice). */
#define POOL_FIRST_BYTES 512u

/* Copy bytes into the NUL-terminated pool; returns the pool offset or -1. */
static long pool_add(nt_reader *r, const uint8_t *s, uint32_t len)
{
	size_t need = r->pool_len + len + 1;
	if (!nt_grow(&r->pool, &r->pool_cap, need > POOL_FIRST_BYTES ? need : POOL_FIRST_BYTES, 1))
		return -1;
	long at = (long)r->pool_len;
	memcpy(r->pool + at, s, len);
	r->pool[at + len] = '\0';
	r->pool_len += len + 1;
	return at;
}

static durable_result durable_string(nt_reader *r, const uint8_t *p, uint64_t size,
				     pending_names *pn, const char **why)
{
	const nt_string_record *s = (const void *)p;
	if (s->length > size - 8)
		return damaged(why, "string record is shorter than its length");
	if (s->index == 0 || s->index > NT_MAX_STRING_INDEX)
		return damaged(why, "string record index is out of range");
	if (!nt_grow(&r->strings, &r->nstrings, (size_t)s->index + 1, sizeof(*r->strings)) ||
	    !nt_grow(&pn->string_defs, &pn->string_defs_cap, pn->nstring_defs + 1,
		     sizeof(*pn->string_defs)))
		return DURABLE_NO_MEMORY;
	long at = pool_add(r, p + 8, s->length);
	if (at < 0)
		return DURABLE_NO_MEMORY;
	pn->string_defs[pn->nstring_defs++] = (struct pending_name){ s->index, at };
	if (s->index >= pn->string_limit)
		pn->string_limit = s->index + 1;
	r->strings[s->index].len = s->length;
	/* Strings defined, not records: a killed streaming process's saved stream repeats its
	 * arena's (the records are counted by kind elsewhere). */
	if (r->strings[s->index].str == NULL)
		r->summary.strings++;
	r->strings[s->index].str = ""; /* defined; pointer fixed after the walk */
	return DURABLE_OK;
}

static durable_result durable_thread(nt_reader *r, const uint8_t *p, uint64_t size,
				     pending_names *pn, const char **why)
{
	const nt_thread_record *t = (const void *)p;
	if (size < sizeof(*t) || t->name_length > size - sizeof(*t))
		return damaged(why, "thread record is shorter than its name");
	if (t->index == 0 || t->index >= MAX_THREAD_INDEX)
		return damaged(why, "thread record index is out of range");
	int first = t->index >= r->nthreads || r->threads[t->index].name == NULL;
	if (!nt_grow(&r->threads, &r->nthreads, (size_t)t->index + 1, sizeof(*r->threads)) ||
	    !nt_grow(&pn->thread_defs, &pn->thread_defs_cap, pn->nthread_defs + 1,
		     sizeof(*pn->thread_defs)) ||
	    (first && !nt_grow(&r->thread_order, &pn->order_cap, (size_t)r->summary.threads + 1,
			       sizeof(*r->thread_order))))
		return DURABLE_NO_MEMORY;
	long at = pool_add(r, p + sizeof(*t), t->name_length);
	if (at < 0)
		return DURABLE_NO_MEMORY;
	if (first)
		r->thread_order[r->summary.threads++] = t->index;
	if (t->index >= r->thread_limit)
		r->thread_limit = t->index + 1;
	pn->thread_defs[pn->nthread_defs++] = (struct pending_name){ t->index, at };
	r->threads[t->index] = (nt_reader_thread){ t->index, t->pid, t->tid, "", t->process, 0 };
	if (t->name_length > r->max_name_len)
		r->max_name_len = t->name_length;
	return DURABLE_OK;
}

static durable_result durable_process(nt_reader *r, const uint8_t *p, uint64_t size,
				      const char **why)
{
	const nt_process_record *pr = (const void *)p;
	if (size < sizeof(*pr) || pr->sid_length > size - sizeof(*pr))
		return damaged(why, "process record is shorter than its SID");
	if (pr->index >= NT_MAX_PROCESS_INDEX)
		return damaged(why, "process record index is out of range");
	if (!nt_grow(&r->processes, &r->nprocesses, (size_t)pr->index + 1, sizeof(*r->processes)))
		return DURABLE_NO_MEMORY;
	nt_reader_process *dst = &r->processes[pr->index];
	char *sid = malloc((size_t)pr->sid_length + 1);
	if (sid == NULL)
		return DURABLE_NO_MEMORY;
	memcpy(sid, p + sizeof(*pr), pr->sid_length);
	sid[pr->sid_length] = '\0';
	free((char *)(uintptr_t)dst->sid);
	*dst = (nt_reader_process){ .index = pr->index, .pid = pr->pid, .flags = pr->flags,
				    .start_ticks = pr->start_ticks, .utc_offset = pr->utc_offset,
				    .sid = sid, .sid_len = pr->sid_length, .defined = 1 };
	return DURABLE_OK;
}

static durable_result durable_callsite(nt_reader *r, const uint8_t *p, uint64_t size,
				       pending_names *pn, const char **why)
{
	const nt_callsite_record *c = (const void *)p;
	if (size < sizeof(*c))
		return damaged(why, "call-site record is too short");
	if (c->index == 0)
		return damaged(why, "call-site record index is 0");
	uint32_t refs[3] = { c->category, c->name, c->file };
	for (int i = 0; i < 3; i++)
		if (refs[i] == 0 || refs[i] >= r->nstrings || r->strings[refs[i]].str == NULL)
			return damaged(why, "call site references a string the archive never "
					    "defined");
	int first = c->index >= r->ncallsites || !r->callsites[c->index].defined;
	if (!nt_grow(&r->callsites, &r->ncallsites, (size_t)c->index + 1, sizeof(*r->callsites)) ||
	    (first && !nt_grow(&pn->callsite_defs, &pn->callsite_defs_cap, pn->ncallsite_defs + 1,
			       sizeof(*pn->callsite_defs))))
		return DURABLE_NO_MEMORY;
	reader_callsite *cs = &r->callsites[c->index];
	if (first) {
		r->summary.callsites++;
		pn->callsite_defs[pn->ncallsite_defs++] = c->index;
		if (c->index >= pn->callsite_limit)
			pn->callsite_limit = c->index + 1;
	}
	/* Its CallSiteArgs record, if any, follows it: a new definition forgets the old one's.
	 * The same definition again keeps them: a killed streaming process's saved stream
	 * repeats its arena's durable records, and a save may have taken the CallSite record
	 * before its CallSiteArgs was published, with no save after it (the arena's copy of both
	 * came first, and its compact events need them). */
	if (cs->defined && cs->category == c->category && cs->name == c->name &&
	    cs->file == c->file && cs->line == c->line && cs->repo == c->repo)
		return DURABLE_OK;
	*cs = (reader_callsite){ c->category, c->name, c->file, c->line, c->repo, 1, 0, { 0 }, { 0 } };
	if (r->strings[c->category].len > r->max_category_len)
		r->max_category_len = r->strings[c->category].len;
	return DURABLE_OK;
}

/* The types a compact record's 4-byte value can have (nt_format.h: nt_arg_slot). */
static int compact_type_ok(uint8_t type)
{
	return type == NT_ARG_INT32 || type == NT_ARG_INT64 || type == NT_ARG_UINT32 ||
	       type == NT_ARG_UINT64 || type == NT_ARG_BOOL;
}

static durable_result durable_callsite_args(nt_reader *r, const uint8_t *p, uint64_t size,
					    const char **why)
{
	nt_callsite_args_record a;
	memcpy(&a, p, sizeof(a));
	if (a.count == 0 || a.count > NT_MAX_CALLSITE_ARGS)
		return damaged(why, "call-site arguments record has 0 or more than 7 arguments");
	if (size < sizeof(a) + (uint64_t)a.count * sizeof(nt_arg_slot))
		return damaged(why, "call-site arguments record is too short for its count");
	if (a.callsite == 0 || a.callsite >= r->ncallsites || !r->callsites[a.callsite].defined)
		return damaged(why, "call-site arguments record names a call site not defined "
				    "before it");
	reader_callsite *cs = &r->callsites[a.callsite];
	reader_callsite parsed = *cs;
	for (uint32_t i = 0; i < a.count; i++) {
		nt_arg_slot slot;
		memcpy(&slot, p + sizeof(a) + i * sizeof(slot), sizeof(slot));
		if (slot.name == 0 || slot.name >= r->nstrings || r->strings[slot.name].str == NULL)
			return damaged(why, "call-site argument name references a string the archive "
					    "never defined");
		if (!compact_type_ok(slot.type))
			return damaged(why, "call-site argument has a type no compact value can have");
		parsed.arg_names[i] = slot.name;
		parsed.arg_types[i] = slot.type;
	}
	parsed.nargs = a.count;
	*cs = parsed;
	return DURABLE_OK;
}

durable_result nt_durable_record(nt_reader *r, uint64_t off, uint64_t size,
				     pending_names *pn, const char **why)
{
	const uint8_t *p = r->data + off;
	switch (p[0]) {
	case NT_KIND_STRING: return durable_string(r, p, size, pn, why);
	case NT_KIND_THREAD: return durable_thread(r, p, size, pn, why);
	case NT_KIND_PROCESS: return durable_process(r, p, size, why);
	case NT_KIND_CALLSITE: return durable_callsite(r, p, size, pn, why);
	case NT_KIND_CALLSITE_ARGS: return durable_callsite_args(r, p, size, why);
	default: return DURABLE_OK;
	}
}
