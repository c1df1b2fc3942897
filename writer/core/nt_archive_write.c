/*
 * nt_archive_write.c - turns the arena into an archive file.
 *
 * Layout written: the ArchiveHeader FlatBuffer, the used part of the durable region, then
 * every chunk present in the rolling halves in sequence order, each cut to its published
 * records. The records are what one save of runtime/nt_arena_saver.c makes of the stopped
 * arena (the one way an arena becomes archive bytes, shared with streaming mode and the
 * trace manager); the header, written first with a placeholder count, is written again at
 * the start once the saver has counted the events. The file is written next to `path`
 * under a fresh random name and renamed over it, so `path` is never a half-written archive.
 *
 * The header is encoded by format/nt_archive_header_encode.h, shared with trace-import.
 * Chunks are compressed by the saver at the session's level (nt_config.compression_level),
 * here in nt_finish()'s thread.
 *
 * A write that fails (a full disk, EFBIG past RLIMIT_FSIZE, EIO) still leaves an archive
 * that says so. A file-backed arena is kept as recorded (it holds every event) and its
 * mapped header records the reason (SAVE_ERRNO). An arena in memory has only this file: it
 * is cut at the last record boundary known to be on disk, its header is rewritten in place
 * (a block the file already has: this normally succeeds on a full file system) with the
 * reason and the events not saved counted as dropped (DROPPED_UNSAVED), and it is renamed
 * into place, so the reader's account stays exact. If even that fails, nothing is left.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/nt_arena_saver.h"
#include "nt_internal.h"

/* A record boundary in the output: its offset, and the events saved before it. */
typedef struct out_mark {
	uint64_t end, events;
} out_mark;

#define OUT_MARKS 2048 /* boundaries kept per buffer (a piece is 32 bytes or more) */

typedef struct out_file {
	int fd;
	uint8_t buf[1 << 16];
	size_t n;
	int err;
	const nt_arena_saver *saver; /* whose event count describes each append's start */
	uint64_t appended;           /* bytes handed to out_write, the header included */
	out_mark good;               /* a boundary with every byte before it written */
	out_mark mark[OUT_MARKS];    /* boundaries inside the buffer, in order */
	uint32_t nmark;
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

/* The saver's output (nt_saver_output.append). Each append is whole records (the durable
 * ones, or one chunk piece), and the saver counts a piece's events once it is appended: so
 * an append's start is a record boundary with the saver's count of events before it. When
 * the buffer is empty there, everything before is on disk (o->good); otherwise the
 * boundary is marked, for a write that fails part way (out_last_whole). */
static int out_append(void *ctx, const void *data, size_t len)
{
	out_file *o = ctx;
	out_mark here = { o->appended, nt_arena_saver_events(o->saver) };
	if (o->n + len > sizeof(o->buf))
		out_flush(o);
	if (!o->err && o->n == 0) {
		o->good = here;
		o->nmark = 0;
	} else if (!o->err && o->nmark < OUT_MARKS) {
		o->mark[o->nmark++] = here;
	}
	out_write(o, data, len);
	o->appended += len;
	return o->err;
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
	o->saver = saver;
	o->appended = start;
	o->good = (out_mark){ start, 0 };
	o->nmark = 0;
	/* The saved-claim words mean something only to streaming mode's claims; a saver skips
	 * a chunk its word marks, so they are cleared before (another saver of this arena, a
	 * failed nt_finish() before this one, may have set them) and after. */
	const size_t words = (size_t)nt_S.nslots * sizeof(uint64_t);
	memset(nt_S.saved_claim, 0, words);
	/* No durable record is half-written while the lock is held. */
	pthread_mutex_lock(&nt_S.intern_lock);
	int err = nt_arena_saver_save(saver, &out, events);
	pthread_mutex_unlock(&nt_S.intern_lock);
	memset(nt_S.saved_claim, 0, words);
	out_flush(o);
	if (!err && !o->err)
		o->good = (out_mark){ o->appended, nt_arena_saver_events(saver) };
	nt_arena_saver_free(saver);
	return err ? err : o->err;
}

/* An arena in memory whose archive could not be written whole (`err`): the file is cut at
 * the last record boundary on disk and its header rewritten, in place, with the reason and
 * the events not saved; 0, or the errno that stopped even that. */
/* The last record boundary whose bytes are all in the file: writes go at the file position,
 * so it tells how far a write that failed part way got. */
static out_mark out_last_whole(const out_file *o)
{
	out_mark m = o->good;
	off_t on_disk = lseek(o->fd, 0, SEEK_CUR);
	for (uint32_t i = 0; on_disk > 0 && i < o->nmark; i++)
		if (o->mark[i].end <= (uint64_t)on_disk)
			m = o->mark[i];
	return m;
}

static int keep_what_was_saved(out_file *o, nt_archive_info *info, int err)
{
	uint8_t header[1024];
	out_mark whole = out_last_whole(o);
	uint64_t made = nt_arena_event_count();
	uint64_t unsaved = made > whole.events ? made - whole.events : 0;
	info->events_written = whole.events + info->events_overwritten;
	info->save_errno = (uint32_t)err;
	info->dropped_unsaved += unsaved;
	info->events_dropped += unsaved;
	uint64_t at = 0;
	if (ftruncate(o->fd, (off_t)whole.end) != 0)
		return errno;
	int e = nt_write_all(o->fd, header, encode_header(info, header), &at);
	if (!e && fsync(o->fd) != 0 && errno != EINVAL)
		e = errno;
	return e;
}

/* Says what happened and puts the file in place: whole (err 0), or, when the archive could
 * not be written whole, the partial one (kept 0) or nothing (a file-backed arena keeps its
 * events and records the reason in its header). */
static nt_result finish_result(const char *path, const char *tmp, int err, int kept,
			 const nt_archive_info *info)
{
	/* A link at `path` is refused, never followed or replaced (nt_file_publish). */
	if ((!err || kept == 0) && nt_file_publish(tmp, path) != 0) {
		int e = errno;
		nt_set_error("nt_finish: cannot write '%s': %s", path, nt_file_strerror(e));
		unlink(tmp);
		return err == ENOMEM ? NT_ERR_NO_MEMORY : NT_ERR_IO;
	}
	if (!err)
		return NT_OK;
	if (kept == 0) {
		nt_set_error("nt_finish: writing '%s': %s; it keeps the %" PRIu64 " events saved "
			     "before and counts the %" PRIu64 " others as not saved",
			     path, strerror(err), info->events_written - info->events_overwritten,
			     info->dropped_unsaved);
		return NT_ERR_IO;
	}
	unlink(tmp);
	if (kept > 0)
		nt_set_error("nt_finish: writing '%s': %s; nothing was kept (rewriting its header "
			     "failed too: %s)", path, strerror(err), strerror(kept));
	else if (nt_S.file_backed && strcmp(path, nt_S.path) == 0)
		nt_set_error("nt_finish: writing '%s': %s; it keeps the arena as recorded, every "
			     "event in it", path, strerror(err));
	else
		nt_set_error("nt_finish: writing '%s': %s", path, strerror(err));
	if (nt_S.file_backed && err != ENOMEM)
		nt_record_save_failure(err, 0);
	return err == ENOMEM ? NT_ERR_NO_MEMORY : NT_ERR_IO;
}

nt_result nt_archive_write(const char *path, const nt_archive_info *info_in)
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
	int kept = -1; /* the errno that stopped keeping a partial archive; -1: not tried */
	if (err && err != ENOMEM && !nt_S.file_backed)
		kept = keep_what_was_saved(o, &info, err);
	if (close(o->fd) != 0 && (!err || kept == 0)) {
		kept = kept == 0 ? errno : kept;
		err = err ? err : errno;
	}
	int rc = finish_result(path, tmp, err, kept, &info);
	free(o), free(tmp);
	return rc;
}
