/*
 * nt_archive_header_decode.c - verifies and decodes the ArchiveHeader FlatBuffer
 * (nt_archive_header_decode.h): shared by the reader and the trace manager.
 *
 * Written by hand instead of with flatc's C++ Verifier because the reader is a C library;
 * it performs the Verifier's checks on every access: the table, its vtable and each field or
 * string lie inside the size-prefixed buffer, are aligned, and strings are NUL-terminated.
 * tests/format/layout_test.cpp runs flatc's own Verifier on writer-made headers for comparison.
 */
#include <stdio.h>
#include <string.h>

#include "nt_archive_header_decode.h"
#include "nt_format.h"
#include "nt_unaligned.h"

typedef struct fb_view {
	const uint8_t *buf; /* start of the size-prefixed buffer (the size field) */
	uint64_t end;       /* 4 + size prefix */
	uint64_t table, vtable;
	uint16_t vt_size, table_size;
} fb_view;

static uint64_t fail(char *why, size_t whylen, uint64_t *where, uint64_t at, const char *msg)
{
	snprintf(why, whylen, "%s", msg);
	*where = at;
	return 0;
}

/* Offset of field `f` inside the buffer, or 0 when the table does not have it. */
static uint64_t field_at(const fb_view *v, unsigned f, unsigned width, int *bad)
{
	unsigned slot = 4 + 2 * f;
	if (slot + 2 > v->vt_size)
		return 0;
	uint16_t off = nt_load_le16(v->buf + v->vtable + slot);
	if (off == 0)
		return 0;
	/* (widths are 1, 2, 4 and 8: a mask, not a division per field of every header) */
	if ((uint64_t)off + width > v->table_size || ((v->table + off) & (width - 1)) != 0) {
		*bad = 1;
		return 0;
	}
	return v->table + off;
}

static int read_string(const fb_view *v, uint64_t at, char *out, size_t cap)
{
	uint64_t s = at + nt_load_le32(v->buf + at);
	if (s % 4 != 0 || s + 4 > v->end)
		return 0;
	uint64_t len = nt_load_le32(v->buf + s);
	if (len > v->end || s + 4 + len + 1 > v->end || v->buf[s + 4 + len] != 0)
		return 0;
	size_t n = len < cap - 1 ? (size_t)len : cap - 1;
	memcpy(out, v->buf + s + 4, n);
	out[n] = '\0';
	return 1;
}

/* Where each field the table has lies and where it goes: what checking the vtable found.
 * The fields' bounds and alignment depend only on the vtable's bytes, the table's size and
 * the table's offset mod 8, so the plan of one header serves every header laid out alike,
 * which is every header one writer made: a bundle's 20,000 sections were 20,000 walks of
 * the same vtable (the decode was the largest function of trace-dump --stats). Each thread
 * keeps the plan of the last vtable it checked; a header with another is checked in full. */
typedef struct field_plan {
	uint16_t at;     /* offset in the table */
	uint16_t member; /* offset in nt_archive_info */
	uint8_t width;   /* 1, 2, 4, 8; 0: a string */
} field_plan;

#define PLAN_VTABLE_MAX (4 + 2 * NT_HDR_FIELD_COUNT) /* the vtable bytes the fields read */

typedef struct header_plan {
	int valid;
	uint16_t vt_size, table_size;
	uint8_t table_mod8;
	uint8_t vtable[PLAN_VTABLE_MAX];
	unsigned nfields;
	field_plan field[NT_HDR_FIELD_COUNT];
} header_plan;

static _Thread_local header_plan last_plan;

/* The first bytes of the vtable that fields can read. */
static unsigned vtable_key_len(const fb_view *v)
{
	return v->vt_size < PLAN_VTABLE_MAX ? v->vt_size : PLAN_VTABLE_MAX;
}

static int plan_fits(const header_plan *p, const fb_view *v)
{
	return p->valid && p->vt_size == v->vt_size && p->table_size == v->table_size &&
	       p->table_mod8 == (v->table & 7) &&
	       memcmp(p->vtable, v->buf + v->vtable, vtable_key_len(v)) == 0;
}

/* Checks every field's place in the table into *p; 0 when one is out of bounds or
 * misaligned. */
static int make_plan(header_plan *p, const fb_view *v)
{
	p->valid = 0;
	p->nfields = 0;
	for (unsigned f = 0; f < NT_HDR_FIELD_COUNT; f++) {
		unsigned w = nt_header_field_width[f] ? nt_header_field_width[f] : 4;
		int bad = 0;
		uint64_t at = field_at(v, f, w, &bad);
		if (bad)
			return 0;
		if (at != 0)
			p->field[p->nfields++] = (field_plan){ (uint16_t)(at - v->table),
							      nt_header_field_member[f],
							      nt_header_field_width[f] };
	}
	p->vt_size = v->vt_size;
	p->table_size = v->table_size;
	p->table_mod8 = (uint8_t)(v->table & 7);
	memcpy(p->vtable, v->buf + v->vtable, vtable_key_len(v));
	p->valid = 1;
	return 1;
}

uint64_t nt_header_decode(const uint8_t *data, size_t size, nt_archive_info *out, char *why,
			  size_t whylen, uint64_t *where)
{
	fb_view v = { .buf = data };
	if (size < 12)
		return fail(why, whylen, where, 0, "file too short for an archive header");
	if (memcmp(data + 8, NT_FILE_IDENTIFIER, 4) != 0)
		return fail(why, whylen, where, 8, "not a nanotrace archive (file identifier is not NTRC)");
	uint64_t prefix = nt_load_le32(data);
	if (prefix < 8 || prefix > size - 4)
		return fail(why, whylen, where, 0, "header size prefix exceeds the file (truncated?)");
	v.end = 4 + prefix;
	v.table = 4 + (uint64_t)nt_load_le32(data + 4);
	if (v.table % 4 != 0 || v.table + 4 > v.end)
		return fail(why, whylen, where, 4, "header root table offset out of bounds");
	int32_t soff = (int32_t)nt_load_le32(data + v.table);
	int64_t vt = (int64_t)v.table - soff;
	if (vt < 4 || vt % 2 != 0 || (uint64_t)vt + 4 > v.end)
		return fail(why, whylen, where, v.table, "header vtable offset out of bounds");
	v.vtable = (uint64_t)vt;
	v.vt_size = nt_load_le16(data + v.vtable);
	v.table_size = nt_load_le16(data + v.vtable + 2);
	if (v.vt_size < 4 || v.vt_size % 2 != 0 || v.vtable + v.vt_size > v.end)
		return fail(why, whylen, where, v.vtable, "header vtable size out of bounds");
	if (v.table_size < 4 || v.table + v.table_size > v.end)
		return fail(why, whylen, where, v.vtable, "header table size out of bounds");

	header_plan *plan = &last_plan;
	if (!plan_fits(plan, &v) && !make_plan(plan, &v))
		return fail(why, whylen, where, v.table, "header field out of bounds or misaligned");
	memset(out, 0, sizeof(*out));
	out->format_major = 1; /* schema default */
	for (unsigned i = 0; i < plan->nfields; i++) {
		const field_plan *f = &plan->field[i];
		uint64_t at = v.table + f->at;
		uint8_t *member = (uint8_t *)out + f->member;
		/* Same width, both little-endian (nt_archive_header.h checks the widths). A copy
		 * of a constant size each: one of width w was a `rep movs` per field. */
		switch (f->width) {
		case 0:
			if (!read_string(&v, at, (char *)member, NT_HDR_MAX_STRING + 1))
				return fail(why, whylen, where, at,
					    "header string out of bounds or unterminated");
			break;
		case 1: memcpy(member, data + at, 1); break;
		case 2: memcpy(member, data + at, 2); break;
		case 4: memcpy(member, data + at, 4); break;
		default: memcpy(member, data + at, 8); break;
		}
	}
	if (out->format_major < NT_FORMAT_MAJOR_OLDEST || out->format_major > NT_FORMAT_MAJOR) {
		snprintf(why, whylen,
			 "unsupported format version %u.%u (this reader reads %u.x to %u.x)",
			 out->format_major, out->format_minor, NT_FORMAT_MAJOR_OLDEST, NT_FORMAT_MAJOR);
		*where = 0;
		return 0;
	}
	if (out->ticks_per_second == 0)
		return fail(why, whylen, where, v.table, "header ticks_per_second is 0");
	return (v.end + 7) & ~(uint64_t)7;
}
