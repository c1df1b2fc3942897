/*
 * nt_archive_write.c - turns the arena into an archive file.
 *
 * Layout written: the ArchiveHeader FlatBuffer, the used part of the durable region, then
 * every chunk present in the rolling halves in sequence order, each cut to its published
 * records. The file is written next to `path` under a temporary name and renamed over it, so
 * `path` is never a half-written archive.
 *
 * The header encoder is hand-written: the writer is C, flatcc is not in Debian, and the
 * table is one fixed set of scalars and two strings. Fields are laid out widest first so
 * every scalar is naturally aligned, and every field is written (defaults too), so a later
 * in-place update of a counter never needs a new layout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_internal.h"

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

size_t nt_header_encode(const nt_archive_info *in, uint8_t *out, size_t cap,
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
			put32(p, (uint32_t)(pos - field_pos[f]));
			put32(out + pos, (uint32_t)len);
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

	put32(out, (uint32_t)(pos - 4));         /* size prefix */
	put32(out + 4, (uint32_t)(table - 4));   /* root offset, relative to the buffer start */
	memcpy(out + 8, NT_FILE_IDENTIFIER, 4);
	put16(out + vtable, (uint16_t)(4 + 2 * NT_HDR_FIELD_COUNT));
	put16(out + vtable + 2, (uint16_t)(table_end - table));
	for (int f = 0; f < NT_HDR_FIELD_COUNT; f++)
		put16(out + vtable + 4 + 2 * f, (uint16_t)(field_pos[f] - table));
	put32(out + table, (uint32_t)(int32_t)(table - vtable)); /* soffset to the vtable */
	if (field_offsets != NULL)
		for (int f = 0; f < NT_HDR_FIELD_COUNT; f++)
			field_offsets[f] = (uint32_t)field_pos[f];
	return pos;
}

/* ---- the record stream ---------------------------------------------------------------- */

typedef struct chunk_ref {
	uint64_t sequence;
	uint32_t slot;
	uint32_t used;   /* payload bytes of published records */
	uint32_t events; /* events among them */
} chunk_ref;

static int by_sequence(const void *a, const void *b)
{
	const chunk_ref *x = a, *y = b;
	return x->sequence < y->sequence ? -1 : x->sequence > y->sequence;
}

typedef struct out_file {
	int fd;
	uint8_t buf[1 << 16];
	size_t n;
	int err;
} out_file;

static void out_write(out_file *o, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len > 0 && !o->err) {
		if (o->n == sizeof(o->buf) || len >= sizeof(o->buf)) {
			const uint8_t *src = o->n ? o->buf : p;
			size_t cnt = o->n ? o->n : len;
			ssize_t w = write(o->fd, src, cnt);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				o->err = w < 0 ? errno : EIO;
				return;
			}
			if (o->n) {
				memmove(o->buf, o->buf + w, o->n - (size_t)w);
				o->n -= (size_t)w;
			} else {
				p += w;
				len -= (size_t)w;
			}
			continue;
		}
		size_t take = sizeof(o->buf) - o->n < len ? sizeof(o->buf) - o->n : len;
		memcpy(o->buf + o->n, p, take);
		o->n += take;
		p += take;
		len -= take;
	}
}

static void out_flush(out_file *o)
{
	size_t off = 0;
	while (off < o->n && !o->err) {
		ssize_t w = write(o->fd, o->buf + off, o->n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			o->err = w < 0 ? errno : EIO;
		else
			off += (size_t)w;
	}
	o->n = 0;
}

int nt_archive_write(const char *path, const nt_archive_info *info_in)
{
	nt_archive_info info = *info_in;
	chunk_ref *refs = malloc(sizeof(*refs) * (nt_S.nslots ? nt_S.nslots : 1));
	out_file *o = malloc(sizeof(*o));
	char *tmp = malloc(strlen(path) + 32);
	if (refs == NULL || o == NULL || tmp == NULL) {
		free(refs), free(o), free(tmp);
		nt_set_error("nt_finish: out of memory writing '%s'", path);
		return NT_ERR_NO_MEMORY;
	}

	uint32_t nchunks = 0;
	uint64_t events = 0;
	for (uint32_t s = 0; s < nt_S.nslots; s++) {
		const nt_chunk_header *h = nt_chunk_slot(s);
		uint64_t w0 = nt_load_acquire_64((const uint64_t *)(const void *)h);
		if ((w0 & 0xff) != NT_KIND_CHUNK)
			continue;
		chunk_ref *r = &refs[nchunks++];
		r->slot = s;
		r->sequence = nt_claim_sequence(nt_load_64(&h->claim));
		r->used = nt_chunk_walk(h, &r->events);
		events += r->events;
	}
	qsort(refs, nchunks, sizeof(*refs), by_sequence);
	info.events_written = events + info.events_overwritten;

	uint8_t header[1024];
	info.layout = NT_LAYOUT_STREAM;
	info.data_offset = 0;
	size_t hlen = nt_header_encode(&info, header, sizeof(header), NULL);
	info.data_offset = hlen; /* a fixed-width field: the second encoding has the same size */
	hlen = nt_header_encode(&info, header, sizeof(header), NULL);

	snprintf(tmp, strlen(path) + 32, "%s.tmp.%d", path, (int)getpid());
	o->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	o->n = 0;
	o->err = 0;
	if (o->fd < 0) {
		nt_set_error("nt_finish: cannot create '%s': %s", tmp, strerror(errno));
		free(refs), free(o), free(tmp);
		return NT_ERR_IO;
	}
	out_write(o, header, hlen);

	/* No durable record is half-written while the lock is held. */
	pthread_mutex_lock(&nt_S.intern_lock);
	uint64_t dlen = nt_load_64(&nt_S.durable_head);
	out_write(o, nt_S.durable, dlen < nt_S.durable_size ? dlen : nt_S.durable_size);
	pthread_mutex_unlock(&nt_S.intern_lock);

	for (uint32_t i = 0; i < nchunks; i++) {
		const nt_chunk_header *h = nt_chunk_slot(refs[i].slot);
		nt_chunk_header copy = *h;
		copy.kind = NT_KIND_CHUNK;
		copy.size_words = 0;
		copy.size_bytes = (uint32_t)sizeof(copy) + refs[i].used;
		copy.event_count = refs[i].events;
		out_write(o, &copy, sizeof(copy));
		out_write(o, h + 1, refs[i].used);
	}
	out_flush(o);
	int err = o->err;
	if (!err && fsync(o->fd) != 0 && errno != EINVAL)
		err = errno;
	if (close(o->fd) != 0 && !err)
		err = errno;
	if (!err && rename(tmp, path) != 0) {
		err = errno;
		nt_set_error("nt_finish: cannot rename '%s' to '%s': %s", tmp, path, strerror(err));
	} else if (err) {
		nt_set_error("nt_finish: writing '%s': %s", tmp, strerror(err));
	}
	if (err)
		unlink(tmp);
	free(refs), free(o), free(tmp);
	return err ? NT_ERR_IO : NT_OK;
}
