/*
 * nt_archive_header_encode.h - encode an ArchiveHeader FlatBuffer (size-prefixed, "NTRC").
 *
 * Shared by the writer and trace-import, so both produce the same bytes. Hand-written: the
 * libraries are C, flatcc is not in Debian, and the table is one fixed set of scalars and
 * two strings. Fields are laid out widest first so every scalar is naturally aligned, and
 * every field is written (defaults too), so a later in-place update of a counter never
 * needs a new layout. tests/format/layout_test.cpp runs flatc's Verifier over its output.
 */
#ifndef NT_ARCHIVE_HEADER_ENCODE_H
#define NT_ARCHIVE_HEADER_ENCODE_H

#include <string.h>

#include "nt_archive_header.h"

static inline void nt_hdr_put16_(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static inline void nt_hdr_put32_(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline size_t nt_header_encode(const nt_archive_info *in, uint8_t *out, size_t cap,
			uint32_t *field_offsets)
{
	const uint8_t *members = (const uint8_t *)in;
	const char *strings[NT_HDR_FIELD_COUNT] = { 0 };
	for (int f = 0; f < NT_HDR_FIELD_COUNT; f++)
		if (nt_header_field_width[f] == 0)
			strings[f] = (const char *)(members + nt_header_field_member[f]);

	/* Size: prefix, root offset, identifier, vtable, table (<= 8 bytes per field), strings. */
	size_t need = 12 + 4 + 2 * NT_HDR_FIELD_COUNT + 8 + 8 * NT_HDR_FIELD_COUNT + 16;
	for (int f = 0; f < NT_HDR_FIELD_COUNT; f++)
		if (strings[f])
			need += 4 + strnlen(strings[f], NT_HDR_MAX_STRING) + 1 + 3;
	if (cap < need)
		return 0;
	memset(out, 0, need);

	const size_t vtable = 12;
	size_t table = vtable + 4 + 2 * NT_HDR_FIELD_COUNT;
	while (table % 8 != 4) /* so the first 8-byte field, right after the soffset, is aligned */
		table++;
	size_t pos = table + 4;
	size_t field_pos[NT_HDR_FIELD_COUNT];
	for (int width = 8; width >= 1; width /= 2) {
		for (int f = 0; f < NT_HDR_FIELD_COUNT; f++) {
			int w = nt_header_field_width[f] ? nt_header_field_width[f] : 4;
			if (w != width)
				continue;
			field_pos[f] = pos;
			pos += (size_t)w;
		}
	}
	while (pos % 4)
		pos++;
	size_t table_end = pos;

	for (int f = 0; f < NT_HDR_FIELD_COUNT; f++) {
		uint8_t *p = out + field_pos[f];
		if (strings[f]) {
			size_t len = strnlen(strings[f], NT_HDR_MAX_STRING);
			nt_hdr_put32_(p, (uint32_t)(pos - field_pos[f]));
			nt_hdr_put32_(out + pos, (uint32_t)len);
			memcpy(out + pos + 4, strings[f], len);
			pos += 4 + len + 1; /* NUL terminator, zeroed by the memset */
			while (pos % 4)
				pos++;
			continue;
		}
		/* Same width, both little-endian (nt_archive_header.h checks the widths). */
		memcpy(p, members + nt_header_field_member[f], nt_header_field_width[f]);
	}
	while (pos % 8)
		pos++;

	nt_hdr_put32_(out, (uint32_t)(pos - 4));         /* size prefix */
	nt_hdr_put32_(out + 4, (uint32_t)(table - 4));   /* root offset, relative to the buffer start */
	memcpy(out + 8, NT_FILE_IDENTIFIER, 4);
	nt_hdr_put16_(out + vtable, (uint16_t)(4 + 2 * NT_HDR_FIELD_COUNT));
	nt_hdr_put16_(out + vtable + 2, (uint16_t)(table_end - table));
	for (int f = 0; f < NT_HDR_FIELD_COUNT; f++)
		nt_hdr_put16_(out + vtable + 4 + 2 * f, (uint16_t)(field_pos[f] - table));
	nt_hdr_put32_(out + table, (uint32_t)(int32_t)(table - vtable)); /* soffset to the vtable */
	if (field_offsets != NULL)
		for (int f = 0; f < NT_HDR_FIELD_COUNT; f++)
			field_offsets[f] = (uint32_t)field_pos[f];
	return pos;
}

/* The header of a compact Stream-layout archive whose records follow it at once, as the
 * writer's nt_finish() and the manager's finished sections write it: layout Stream, no slot
 * counters (events_overwritten is exact once recording stopped), data_offset = the header's
 * own length. Returns that length, or 0 when cap is too small. Every field has a fixed width,
 * so re-encoding with other counts gives the same length. */
static inline size_t nt_header_encode_stream(nt_archive_info *info, uint8_t *out, size_t cap)
{
	info->layout = NT_LAYOUT_STREAM;
	info->slot_overwritten_offset = 0;
	info->stream_offset = 0;
	info->stream_end = 0;
	info->data_offset = 0;
	size_t len = nt_header_encode(info, out, cap, NULL);
	info->data_offset = len;
	return len == 0 ? 0 : nt_header_encode(info, out, cap, NULL);
}

#endif /* NT_ARCHIVE_HEADER_ENCODE_H */
