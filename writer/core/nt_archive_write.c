/*
 * nt_archive_write.c - turns the arena into an archive file.
 *
 * Layout written: the ArchiveHeader FlatBuffer, the used part of the durable region, then
 * every chunk present in the rolling halves in sequence order, each cut to its published
 * records. The file is written next to `path` under a fresh random name and renamed over it,
 * so `path` is never a half-written archive.
 *
 * The header is encoded by format/nt_archive_header_encode.h, shared with trace-import.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_internal.h"

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

static void out_flush(out_file *o)
{
	if (!o->err && o->n)
		o->err = nt_write_all(o->fd, o->buf, o->n, NULL);
	o->n = 0;
}

/* Small pieces (chunk headers) are gathered; a piece as large as the buffer goes out as it
 * is. */
static void out_write(out_file *o, const void *data, size_t len)
{
	if (o->n + len > sizeof(o->buf))
		out_flush(o);
	if (o->err)
		return;
	if (len >= sizeof(o->buf)) {
		o->err = nt_write_all(o->fd, data, len, NULL);
		return;
	}
	memcpy(o->buf + o->n, data, len);
	o->n += len;
}

uint64_t nt_arena_event_count(void)
{
	uint64_t events = 0;
	for (uint32_t s = 0; s < nt_S.nslots; s++) {
		const nt_chunk_header *h = nt_chunk_slot(s);
		uint64_t w0 = nt_load_acquire_64((const uint64_t *)(const void *)h);
		uint32_t n = 0;
		if (nt_record_kind(w0) != NT_KIND_CHUNK)
			continue;
		nt_chunk_walk(h, &n);
		events += n;
	}
	return events;
}

int nt_archive_write(const char *path, const nt_archive_info *info_in)
{
	nt_archive_info info = *info_in;
	chunk_ref *refs = malloc(sizeof(*refs) * (nt_S.nslots ? nt_S.nslots : 1));
	out_file *o = malloc(sizeof(*o));
	char *tmp = NULL;
	if (refs == NULL || o == NULL) {
		free(refs), free(o);
		nt_set_error("nt_finish: out of memory writing '%s'", path);
		return NT_ERR_NO_MEMORY;
	}

	uint32_t nchunks = 0;
	uint64_t events = 0;
	for (uint32_t s = 0; s < nt_S.nslots; s++) {
		const nt_chunk_header *h = nt_chunk_slot(s);
		uint64_t w0 = nt_load_acquire_64((const uint64_t *)(const void *)h);
		if (nt_record_kind(w0) != NT_KIND_CHUNK)
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
	info.slot_overwritten_offset = 0; /* a finished archive: events_overwritten is exact */
	info.data_offset = 0;
	size_t hlen = nt_header_encode(&info, header, sizeof(header), NULL);
	info.data_offset = hlen; /* a fixed-width field: the second encoding has the same size */
	hlen = nt_header_encode(&info, header, sizeof(header), NULL);

	o->fd = nt_create_beside(path, &tmp);
	o->n = 0;
	o->err = 0;
	if (o->fd < 0) {
		nt_set_error("nt_finish: cannot create a file beside '%s': %s", path,
			     strerror(errno));
		free(refs), free(o);
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
	/* rename() replaces a link at `path` itself, never its target. */
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
