/*
 * nt_archive_write.c - turns the arena into an archive file.
 *
 * Layout written: the ArchiveHeader FlatBuffer, the used part of the durable region, then
 * every chunk present in the rolling halves in sequence order, each cut to its published
 * records. The records are what one save of format/nt_arena_saver.c makes of the stopped
 * arena (the one way an arena becomes archive bytes, shared with streaming mode and the
 * trace manager); the header, written first with a placeholder count, is written again at
 * the start once the saver has counted the events. The file is written next to `path`
 * under a fresh random name and renamed over it, so `path` is never a half-written archive.
 *
 * The header is encoded by format/nt_archive_header_encode.h, shared with trace-import.
 * Chunks are compressed by the saver at the session's level (nt_config.compression_level),
 * here in nt_finish()'s thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_arena_saver.h"
#include "nt_internal.h"

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

/* The saver's output (nt_saver_output.append). */
static int out_append(void *ctx, const void *data, size_t len)
{
	out_write(ctx, data, len);
	return ((out_file *)ctx)->err;
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

/* Header encoded for `info` (data_offset: right after it) into header[1024]; its length. */
static size_t encode_header(nt_archive_info *info, uint8_t *header)
{
	return nt_header_encode_stream(info, header, 1024);
}

/* The records: one save of the stopped arena, after the header. Returns the errno of a
 * failed write, or ENOMEM. */
static int write_records(out_file *o, uint64_t start, uint64_t *events)
{
	nt_arena_saver *saver = nt_arena_saver_new(nt_S.map, &nt_S.layout, start);
	if (saver == NULL)
		return ENOMEM;
	/* ENOMEM here leaves the chunks uncompressed, which every reader reads. */
	(void)nt_arena_saver_set_compression(saver, nt_S.compression_level, 0);
	static const nt_saver_output out_fns = { out_append, NULL, NULL };
	nt_saver_output out = out_fns;
	out.ctx = o;
	/* The saved-claim words mean something only to streaming mode's claims; a saver skips
	 * a chunk its word marks, so they are cleared before (another saver of this arena, a
	 * failed nt_finish() before this one, may have set them) and after. */
	const size_t words = (size_t)nt_S.nslots * sizeof(uint64_t);
	memset(nt_S.saved_claim, 0, words);
	/* No durable record is half-written while the lock is held. */
	pthread_mutex_lock(&nt_S.intern_lock);
	int err = nt_arena_saver_save(saver, &out, events);
	pthread_mutex_unlock(&nt_S.intern_lock);
	nt_arena_saver_free(saver);
	memset(nt_S.saved_claim, 0, words);
	out_flush(o);
	return err ? err : o->err;
}

int nt_archive_write(const char *path, const nt_archive_info *info_in)
{
	nt_archive_info info = *info_in;
	out_file *o = malloc(sizeof(*o));
	char *tmp = NULL;
	if (o == NULL) {
		nt_set_error("nt_finish: out of memory writing '%s'", path);
		return NT_ERR_NO_MEMORY;
	}
	uint8_t header[1024];
	info.events_written = 0; /* fixed width: the final count encodes to the same size */
	size_t hlen = encode_header(&info, header);

	o->fd = nt_create_beside(path, &tmp);
	o->n = 0;
	o->err = 0;
	if (o->fd < 0) {
		nt_set_error("nt_finish: cannot create a file beside '%s': %s", path,
			     strerror(errno));
		free(o);
		return NT_ERR_IO;
	}
	out_write(o, header, hlen);
	uint64_t events = 0;
	int err = write_records(o, hlen, &events);
	if (!err) {
		info.events_written = events + info.events_overwritten;
		uint64_t at = 0;
		err = nt_write_all(o->fd, header, encode_header(&info, header), &at);
	}
	if (!err && fsync(o->fd) != 0 && errno != EINVAL)
		err = errno;
	if (close(o->fd) != 0 && !err)
		err = errno;
	/* A link at `path` is refused, never followed or replaced (nt_file_publish). */
	if (!err && nt_file_publish(tmp, path) != 0) {
		err = errno;
		nt_set_error("nt_finish: cannot write '%s': %s", path, nt_file_strerror(err));
	} else if (err) {
		nt_set_error("nt_finish: writing '%s': %s", tmp, strerror(err));
	}
	if (err)
		unlink(tmp);
	free(o), free(tmp);
	return err == ENOMEM ? NT_ERR_NO_MEMORY : err ? NT_ERR_IO : NT_OK;
}
