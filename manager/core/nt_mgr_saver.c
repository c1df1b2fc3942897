/*
 * nt_mgr_saver.c - streaming across the process boundary: a thread per streaming provider
 * runs the shared saver (runtime/nt_arena_saver.h) on the manager's mapping of that
 * provider's buffer and answers its SAVE_BUFFER with BUFFER_SAVED.
 *
 * Why a thread per provider rather than saves on the loop: a save copies up to half an
 * arena, and sixteen providers filling halves together would hold the loop (and every other
 * provider's answers, timers and controllers) for the sum of their saves. With a thread
 * each, a slow save delays only its own provider, whose writers drop and count meanwhile,
 * which is the protocol's answer to a late manager. The loop only hands over requests.
 *
 * The saved stream goes to a file of its own (an O_TMPFILE beside the bundle, else a memfd;
 * the manager's, never shown to the provider); the section copies its committed bytes into
 * the bundle at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "format/nt_archive_header_decode.h"
#include "format/nt_archive_header_encode.h"
#include "nt_mgr_internal.h"
#include "runtime/nt_sock.h"
#include "runtime/nt_deadline.h"
#include "runtime/nt_saver_pace.h"

static int out_append(void *ctx, const void *data, size_t len)
{
	nt_mgr_saver *s = ctx;
	const uint8_t *p = data;
	while (len > 0) {
		ssize_t n = write(s->stream_fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void out_commit(void *ctx, uint64_t end)
{
	nt_mgr_saver *s = ctx;
	pthread_mutex_lock(&s->lock);
	s->committed = end;
	pthread_mutex_unlock(&s->lock);
}

int nt_mgr_provider_header(const nt_mgr_provider *p, nt_archive_info *info, char *why,
			   size_t whylen)
{
	uint8_t hdr[NT_ARENA_HEADER_BYTES];
	memcpy(hdr, p->map, sizeof(hdr)); /* once: the provider may still be writing */
	char reason[200];
	uint64_t where = 0;
	if (nt_header_decode(hdr, sizeof(hdr), info, reason, sizeof(reason), &where) == 0) {
		snprintf(why, whylen, "its arena header does not verify: %s (byte %llu)", reason,
			 (unsigned long long)where);
		return -1;
	}
	const nt_arena_layout *l = &p->layout;
#define NT_CHECK_FIELD(field, want)                                                              \
	if ((uint64_t)info->field != (uint64_t)(want)) {                                         \
		snprintf(why, whylen, "its arena header says " #field " = %llu, the manager gave %llu", \
			 (unsigned long long)info->field, (unsigned long long)(want));           \
		return -1;                                                                         \
	}
	NT_CHECK_FIELD(buffering_mode, p->mode)
	NT_CHECK_FIELD(chunk_size, l->chunk_size)
	NT_CHECK_FIELD(chunks_per_half, l->chunks_per_half)
	NT_CHECK_FIELD(durable_size, l->durable_size)
	NT_CHECK_FIELD(slot_overwritten_offset, l->slot_overwritten_offset)
#undef NT_CHECK_FIELD
	return 0;
}

void nt_mgr_compact_fields(nt_archive_info *info, int level, pid_t pid)
{
	info->compression = level ? NT_ZCHUNK_CODEC : NT_CODEC_NONE;
	info->compression_level = level;
	info->pid = (uint32_t)pid;
}

/* The header on_stream's consumer puts before the records: the provider's, as the section
 * will have it, uncounted; read at each save (its counts and clock calibration as the
 * provider keeps them), a read that does not verify (the provider writing it) keeping the
 * last one. 0 while none has verified. */
static int stream_header(nt_mgr_saver *s)
{
	nt_archive_info info;
	char why[256];
	uint8_t block[NT_ARENA_HEADER_BYTES];
	if (nt_mgr_provider_header(s->prov, &info, why, sizeof(why)) == 0) {
		info.events_written = 0; /* not counted: the records so far */
		nt_mgr_compact_fields(&info, s->level, s->prov->pid);
		size_t n = nt_header_encode_stream(&info, block, sizeof(block));
		if (n != 0) {
			memcpy(s->header, block, n);
			s->header_len = n;
			s->header_ok = 1;
		}
	}
	return s->header_ok;
}

static void stream_call(nt_mgr_saver *s, nt_saved_range *st)
{
	st->id = s->stream_id;
	st->name = s->prov->name;
	st->header = s->header;
	st->header_len = s->header_len;
	st->fd = s->stream_fd;
	s->on_stream(s->stream_ctx, st);
}

/* After a save: what it committed, to on_stream (never twice, never a byte missed). */
static void hand_over(nt_mgr_saver *s)
{
	pthread_mutex_lock(&s->lock);
	uint64_t end = s->committed;
	pthread_mutex_unlock(&s->lock);
	if (s->on_stream == NULL || end <= s->handed || !stream_header(s))
		return;
	nt_saved_range st = { .from = s->handed - s->start, .to = end - s->start,
				 .bundle_fd = -1 };
	stream_call(s, &st);
	s->handed = end;
}

void nt_mgr_saver_ended(nt_mgr_saver *s, const nt_archive_info *final, int bundle_fd,
			uint64_t offset, uint64_t len)
{
	uint64_t at = s->handed - s->start;
	if (final != NULL) { /* its counts to the end (what the writers lost), uncounted */
		nt_archive_info info = *final;
		info.events_written = 0;
		size_t n = nt_header_encode_stream(&info, s->header, sizeof(s->header));
		s->header_len = n ? n : s->header_len;
	}
	nt_saved_range st = { .from = at, .to = at, .ended = 1, .bundle_fd = bundle_fd,
				 .offset = offset, .len = len };
	stream_call(s, &st);
}

/* One save; records its result under the lock. Runs on the saver thread, or on the loop's
 * thread once the saver thread has returned. `all`: a stop's SAVE_ALL or the last save,
 * which also cut the records held in open chunks (nt_arena_saver_save_all). */
static void save_once(nt_mgr_saver *s, int all)
{
	nt_saver_output out = { .append = out_append, .commit = out_commit, .ctx = s };
	uint64_t events = 0;
	pthread_mutex_lock(&s->lock);
	int failed = s->error;
	pthread_mutex_unlock(&s->lock);
	int err = failed ? failed
			 : all ? nt_arena_saver_save_all(s->saver, &out, &events)
			       : nt_arena_saver_save(s->saver, &out, &events);
	pthread_mutex_lock(&s->lock);
	if (err != 0)
		s->error = err;
	s->events += events;
	pthread_mutex_unlock(&s->lock);
	hand_over(s);
}

/* Waits on the saver's condition until `wait_ms` from now; s->lock is held. */
static void wait_for_request(nt_mgr_saver *s, int wait_ms)
{
	struct timespec until = nt_deadline_after_ms(wait_ms);
	pthread_cond_timedwait(&s->cond, &s->lock, &until);
}

/* Answers each SAVE_BUFFER after a save; between requests, saves what the provider's
 * writers publish at the pace of runtime/nt_saver_pace.h, so that a request finds little
 * left to save and the provider's writers rarely wait on it. */
static void *saver_main(void *arg)
{
	nt_mgr_saver *s = arg;
	int wait_ms = NT_SAVER_POLL_MIN_MS;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		if (!s->pending && !s->quit)
			wait_for_request(s, wait_ms);
		if (s->quit && !s->pending) {
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		int answer = s->pending;
		nt_fifo_packet req = s->request;
		uint64_t before = s->committed;
		pthread_mutex_unlock(&s->lock);
		uint64_t t0 = nt_saver_now_ns();
		save_once(s, answer && req.data32 == NT_FIFO_SAVE_ALL);
		uint64_t took = nt_saver_now_ns() - t0;
		pthread_mutex_lock(&s->lock);
		wait_ms = answer ? nt_saver_next_poll_ms(0, 1, took)
				 : nt_saver_next_poll_ms(wait_ms, s->committed != before, took);
		if (answer) {
			s->saves++;
			s->pending = 0; /* before the answer: the provider may send the next at once */
			pthread_cond_broadcast(&s->cond);
		}
		pthread_mutex_unlock(&s->lock);
		if (!answer)
			continue;
		/* A provider that does not read its FIFO only loses its own answers. */
		(void)nt_sock_fifo_send(s->fifo, NT_FIFO_BUFFER_SAVED, req.data32, req.data64, 1);
	}
}

int nt_mgr_scratch_file(const char *dir)
{
	int fd = dir[0] ? open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;
	return fd >= 0 ? fd : memfd_create("nanotrace-stream", MFD_CLOEXEC);
}

int nt_mgr_saver_start(nt_mgr_provider *p, const char *dir, int compression_level,
		       const nt_manager_config *cfg, uint64_t stream_id, char *why,
		       size_t whylen)
{
	nt_mgr_saver *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	s->fifo = p->fifo;
	s->start = p->layout.map_size;
	s->committed = s->handed = s->start;
	s->prov = p;
	s->level = compression_level;
	s->on_stream = cfg->on_stream;
	s->stream_ctx = cfg->stream_ctx;
	s->stream_id = stream_id;
	s->stream_fd = nt_mgr_scratch_file(dir);
	s->saver = nt_arena_saver_new(p->map, &p->layout, s->start);
	if (s->stream_fd < 0 || s->saver == NULL) {
		snprintf(why, whylen, "preparing the stream: %s",
			 s->stream_fd < 0 ? strerror(errno) : "out of memory");
		goto fail;
	}
	/* ENOMEM leaves the chunks uncompressed, which every reader reads. */
	(void)nt_arena_saver_set_compression(s->saver, compression_level, 1);
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t monotonic;
	pthread_condattr_init(&monotonic);
	pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &monotonic);
	pthread_condattr_destroy(&monotonic);
	int rc = pthread_create(&s->thread, NULL, saver_main, s);
	if (rc != 0) {
		snprintf(why, whylen, "starting the saver thread: %s", strerror(rc));
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
		goto fail;
	}
	s->started = 1;
	p->stream = s;
	return 0;
fail:
	if (s->stream_fd >= 0)
		close(s->stream_fd);
	nt_arena_saver_free(s->saver);
	free(s);
	return -1;
}

int nt_mgr_saver_request(nt_mgr_saver *s, const nt_fifo_packet *pkt)
{
	pthread_mutex_lock(&s->lock);
	int busy = s->pending || s->quit;
	if (!busy) {
		s->request = *pkt;
		s->pending = 1;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return busy ? -1 : 0;
}

void nt_mgr_saver_finish(nt_mgr_saver *s)
{
	if (!s->started)
		return;
	pthread_mutex_lock(&s->lock);
	s->quit = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	s->started = 0;
	/* Whatever was published since the last save: the provider may be dead (KILLED), or
	 * late (TIMED_OUT); its buffer is still here. */
	save_once(s, 1);
}

void nt_mgr_saver_totals(nt_mgr_saver *s, uint64_t *bytes, uint64_t *events)
{
	pthread_mutex_lock(&s->lock);
	*bytes = s->committed >= s->start ? s->committed - s->start : 0;
	*events = s->events;
	pthread_mutex_unlock(&s->lock);
}

void nt_mgr_saver_free(nt_mgr_saver *s)
{
	if (s == NULL)
		return;
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->quit = 1;
		s->pending = 0;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	close(s->stream_fd);
	nt_arena_saver_free(s->saver);
	free(s);
}
