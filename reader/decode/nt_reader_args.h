/*
 * nt_reader_args.h - an event's arguments, from its bytes to nt_reader_args: ArgHeaders and
 * their values, and a compact record's values named and typed by its call site's
 * CallSiteArgs record. Static functions in a header of their own so that the visit's record
 * walk (nt_reader_visit.c), which runs them for every event, keeps them inline. Every size
 * and index is checked against the record that holds it.
 */
#ifndef NT_READER_ARGS_H
#define NT_READER_ARGS_H

#include <string.h>

#include "nt_reader_internal.h"

static const char *string_at(const nt_reader *r, uint32_t idx)
{
	return idx < r->nstrings ? r->strings[idx].str : NULL;
}

static const char *decode_args(const nt_reader *r, const uint8_t *p, const uint8_t *end,
			       nt_reader_arg *args, uint32_t *count)
{
	uint32_t n = 0;
	while (p < end) {
		const nt_arg_header *h = (const nt_arg_header *)(const void *)p;
		uint32_t bytes = (uint32_t)h->size_words * 8;
		if (bytes == 0 || bytes > (uint64_t)(end - p))
			return "argument size runs past its event record";
		nt_reader_arg *a = &args[n];
		a->name = string_at(r, h->name);
		if (a->name == NULL)
			return "argument name references a string the archive never defined";
		a->type = h->type;
		switch (h->type) {
		case NT_ARG_INT32:
			a->value.i64 = (int32_t)h->value32;
			break;
		case NT_ARG_UINT32:
		case NT_ARG_BOOL:
			a->value.u64 = h->value32;
			break;
		case NT_ARG_INT64:
		case NT_ARG_UINT64:
		case NT_ARG_DOUBLE:
		case NT_ARG_POINTER:
			if (bytes < 16)
				return "64-bit argument is missing its value word";
			a->value.u64 = nt_load_le64(p + 8);
			break;
		case NT_ARG_STRING:
			if (h->value32 > bytes - 8)
				return "string argument is longer than its record";
			a->value.str.ptr = (const char *)p + 8;
			a->value.str.len = h->value32;
			break;
		case NT_ARG_STRING_LIST: {
			/* Every element must frame inside the argument before anyone walks it. */
			uint32_t pos = 8, count = h->value32;
			for (uint32_t i = 0; i < count; i++) {
				if (bytes - pos < 4)
					return "string list runs past its argument";
				uint32_t len = nt_load_le32(p + pos);
				if (len > bytes - pos - 4)
					return "string list element runs past its argument";
				pos += 4 + len;
			}
			a->value.list.ptr = p + 8;
			a->value.list.count = count;
			a->value.list.bytes = pos - 8;
			break;
		}
		case NT_ARG_JSON: {
			uint32_t len = bytes >= 12 ? nt_load_le32(p + 8) : 0;
			if (bytes < 12 || len > bytes - 12)
				return "JSON value argument runs past its record";
			a->value.json.ptr = (const char *)p + 12;
			a->value.json.len = len;
			a->value.json.position = h->value32;
			break;
		}
		case NT_ARG_STRING_REF: {
			const char *s = string_at(r, h->value32);
			if (s == NULL)
				return "string argument references a string the archive never defined";
			a->value.str.ptr = s;
			a->value.str.len = r->strings[h->value32].len;
			break;
		}
		default:
			p += bytes; /* unknown or None: skipped, kept out of the event */
			continue;
		}
		n++;
		p += bytes;
	}
	*count = n;
	return NULL;
}

/* A compact event's arguments: its `nvalues` 4-byte values at p, named and typed by its
 * call site's CallSiteArgs record (types validated at definition), delivered exactly as the
 * same values in ArgHeaders would be. */
static const char *decode_compact_args(const nt_reader *r, const reader_callsite *cs,
				       const uint8_t *p, uint32_t nvalues, nt_reader_arg *args,
				       uint32_t *count)
{
	if (nvalues != cs->nargs)
		return "compact event's value count differs from its call site's arguments";
	for (uint32_t i = 0; i < nvalues; i++) {
		uint32_t v = nt_load_le32(p + 4 * i);
		nt_reader_arg *a = &args[i];
		a->name = r->strings[cs->arg_names[i]].str;
		switch (cs->arg_types[i]) {
		case NT_ARG_INT32:
		case NT_ARG_INT64:
			a->type = NT_ARG_INT32;
			a->value.i64 = (int32_t)v;
			break;
		case NT_ARG_BOOL:
			a->type = NT_ARG_BOOL;
			a->value.u64 = v != 0;
			break;
		default: /* UInt32, UInt64 */
			a->type = NT_ARG_UINT32;
			a->value.u64 = v;
			break;
		}
	}
	*count = nvalues;
	return NULL;
}

#endif /* NT_READER_ARGS_H */
