/*
 * nt_ship.c - the shipper's public calls (nt_ship.h) and its exporter thread: a queue of
 * sections (each a range of a file the caller duplicated once), each mapped read-only
 * (file-backed pages: memory does not grow with the archive), opened with the reader's
 * nt_reader_open_memory and exported with nt_otlp_export, every request written to the
 * spool (nt_ship_spool.c). The sender thread (nt_ship_send.c) sends the spool.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "format/nt_bundle.h"
#include "nt_ship_internal.h"
#include "reader/include/nanotrace/nanotrace_reader.h"
#include "runtime/nt_deadline.h"

void nt_ship_config_init(nt_ship_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
}

unsigned nt_ship_timeout_ms(const nt_ship *s)
{
	return s ? s->conf.sig[0].timeout_ms : 10000;
}

static void file_unref(nt_ship *s, ship_file *f)
{
	if (f != NULL && --f->refs == 0) {
		if (s->last_file == f)
			s->last_file = NULL;
		close(f->fd);
		free(f);
	}
}

static int emit_request(void *ctx, nt_otlp_signal signal, const uint8_t *msg, size_t len)
{
	nt_ship_spool_put(ctx, signal == NT_OTLP_METRICS, msg, len);
	return 0; /* a request the spool could not take is counted; the next may fit */
}

/* Maps, opens and exports one section into the spool. */
static void export_section(nt_ship *s, const ship_section *sec)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t base = sec->offset & ~(uint64_t)(page - 1), delta = sec->offset - base;
	struct stat st;
	/* a range past the file's end would fault (SIGBUS) when read */
	int inside = fstat(sec->file->fd, &st) == 0 && (uint64_t)st.st_size >= sec->offset &&
		     (uint64_t)st.st_size - sec->offset >= sec->len;
	void *map = inside ? mmap(NULL, (size_t)(sec->len + delta), PROT_READ, MAP_SHARED,
				  sec->file->fd, (off_t)base)
			   : MAP_FAILED;
	const char *why = NULL;
	char buf[600];
	if (!inside) {
		why = "the file is shorter than the section (cut after it was handed over)";
	} else if (map == MAP_FAILED) {
		snprintf(buf, sizeof(buf), "mapping it: %s", strerror(errno));
		why = buf;
	} else {
		nt_reader_error err;
		nt_reader *r = nt_reader_open_memory((const uint8_t *)map + delta, (size_t)sec->len,
						     sec->name, &err);
		nt_render_options opt;
		nt_render_options_init(&opt);
		if (r == NULL) {
			snprintf(buf, sizeof(buf), "%s", err.message);
			why = buf;
		} else if (nt_otlp_export(r, &opt, emit_request, s) < 0 && errno == ENOMEM) {
			why = "out of memory";
		}
		/* damage inside the archive is in its "nanotrace losses" span, not a failure */
		nt_reader_close(r);
		munmap(map, (size_t)(sec->len + delta));
	}
	if (why != NULL) {
		nt_ship_log(s, "section '%s' (%llu bytes at %llu) not exported: %s", sec->name,
			    (unsigned long long)sec->len, (unsigned long long)sec->offset, why);
		pthread_mutex_lock(&s->lock);
		s->counts.sections_failed++;
		pthread_mutex_unlock(&s->lock);
	}
}

/* Unlinks and frees an ended stream (its exporter's part freed by nt_ship_stream_step);
 * s->lock held. */
static void stream_free(nt_ship *s, ship_stream *st)
{
	for (ship_stream **p = &s->streams; *p != NULL; p = &(*p)->next)
		if (*p == st) {
			*p = st->next;
			break;
		}
	file_unref(s, st->file);
	free(st);
}

static void *exporter_main(void *arg)
{
	nt_ship *s = arg;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (s->head == NULL && !s->stop_export)
			pthread_cond_wait(&s->wake, &s->lock);
		ship_section *sec = s->head;
		if (sec == NULL)
			break;
		s->head = sec->next;
		if (s->head == NULL)
			s->tail = NULL;
		s->exporting = 1;
		pthread_mutex_unlock(&s->lock);
		if (sec->stream != NULL)
			nt_ship_stream_step(s, sec);
		else
			export_section(s, sec);
		pthread_mutex_lock(&s->lock);
		s->exporting = 0;
		file_unref(s, sec->file);
		if (sec->stream != NULL && sec->ended)
			stream_free(s, sec->stream);
		free(sec->header);
		free(sec);
		/* nothing pending: the file is not held (a bundle deleted meanwhile is freed) */
		if (s->head == NULL && s->last_file != NULL) {
			ship_file *f = s->last_file;
			s->last_file = NULL;
			file_unref(s, f);
		}
		pthread_cond_broadcast(&s->idle);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void curl_start(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void free_ship(nt_ship *s)
{
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	nt_ship_conf_free(&s->conf);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

nt_ship *nt_ship_new(const nt_ship_config *cfg, char *why, size_t whylen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	nt_ship_config c;
	nt_ship_config_init(&c);
	/* A caller's sized struct, as reader/common/nt_struct_in.h reads one: an older caller's
	 * missing fields keep their defaults, a newer one's unknown fields must be zero. */
	size_t n = cfg ? cfg->struct_size : 0;
	size_t first = offsetof(nt_ship_config, log_ctx) + sizeof(void *);
	for (size_t i = sizeof(c); cfg && n > sizeof(c) && n <= 4096 && i < n; i++)
		if (((const unsigned char *)cfg)[i] != 0)
			n = 0; /* a field this library does not know asks for something it cannot do */
	if (cfg == NULL || n < first || n > 4096) {
		snprintf(why, whylen, "the shipper's config is not one nt_ship_config_init filled, or "
			 "sets a field this library does not know");
		return NULL;
	}
	memcpy(&c, cfg, n < sizeof(c) ? n : sizeof(c));
	nt_ship *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	s->lock_fd = -1;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* nt_deadline.h's clock */
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, &ca);
	pthread_cond_init(&s->idle, &ca);
	pthread_condattr_destroy(&ca);
	if (nt_ship_conf_load(&s->conf, &c, why, whylen) != 0 ||
	    nt_ship_spool_open(s, why, whylen) != 0) {
		free_ship(s);
		return NULL;
	}
	pthread_once(&once, curl_start);
	int rc = pthread_create(&s->exporter, NULL, exporter_main, s);
	s->have_exporter = rc == 0;
	if (rc == 0 && (rc = pthread_create(&s->sender, NULL, nt_ship_sender_main, s)) == 0)
		s->have_sender = 1;
	if (rc != 0) {
		snprintf(why, whylen, "starting the shipper's threads: %s", strerror(rc));
		nt_ship_close(s, 0, NULL);
		return NULL;
	}
	if (s->counts.found > 0)
		nt_ship_log(s, "%llu requests an earlier run left in the spool '%s' are sent first",
			    (unsigned long long)s->counts.found, s->conf.spool);
	return s;
}

/* Queues an item for the exporter; s->lock held. */
static void enqueue(nt_ship *s, ship_section *item)
{
	if (s->tail != NULL)
		s->tail->next = item;
	else
		s->head = item;
	s->tail = item;
	pthread_cond_broadcast(&s->wake);
}

int nt_ship_section(nt_ship *s, int fd, uint64_t offset, uint64_t len, const char *name)
{
	struct stat st;
	if (s == NULL || fd < 0 || len == 0 || fstat(fd, &st) != 0) {
		int err = errno ? errno : EINVAL;
		if (s != NULL) {
			pthread_mutex_lock(&s->lock);
			s->counts.sections++;
			s->counts.sections_failed++;
			pthread_mutex_unlock(&s->lock);
		}
		errno = err;
		return -1;
	}
	ship_section *sec = calloc(1, sizeof(*sec));
	pthread_mutex_lock(&s->lock);
	s->counts.sections++;
	ship_file *f = s->last_file;
	if (sec != NULL && (f == NULL || f->dev != (uint64_t)st.st_dev ||
			    f->ino != (uint64_t)st.st_ino)) {
		f = calloc(1, sizeof(*f));
		if (f != NULL && (f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
			free(f);
			f = NULL;
		}
		if (f != NULL) {
			f->dev = (uint64_t)st.st_dev;
			f->ino = (uint64_t)st.st_ino;
			f->refs = 1; /* last_file's */
			if (s->last_file != NULL)
				file_unref(s, s->last_file);
			s->last_file = f;
		}
	}
	if (sec == NULL || f == NULL) {
		s->counts.sections_failed++;
		pthread_mutex_unlock(&s->lock);
		free(sec);
		errno = ENOMEM;
		return -1;
	}
	f->refs++;
	sec->file = f;
	sec->offset = offset;
	sec->len = len;
	snprintf(sec->name, sizeof(sec->name), "%s", name ? name : "");
	enqueue(s, sec);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* A new stream of r (its header copied, its file duplicated); s->lock held. */
static ship_stream *stream_new(nt_ship *s, const nt_saved_range *r)
{
	ship_stream *st = calloc(1, sizeof(*st));
	if (st == NULL || (st->file = calloc(1, sizeof(*st->file))) == NULL ||
	    (st->file->fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		int err = errno;
		if (st != NULL)
			free(st->file);
		free(st);
		errno = err ? err : ENOMEM;
		return NULL;
	}
	st->file->refs = 1;
	st->id = r->id;
	st->handed = r->from;
	snprintf(st->name, sizeof(st->name), "%s", r->name ? r->name : "");
	st->next = s->streams;
	s->streams = st;
	s->counts.sections++;
	return st;
}

static int grow_streamed(nt_ship *s)
{
	size_t cap = s->streamed_cap ? 2 * s->streamed_cap : 16;
	ship_streamed *p = realloc(s->streamed, cap * sizeof(*p));
	if (p == NULL)
		return 0;
	s->streamed = p;
	s->streamed_cap = cap;
	return 1;
}

/* An ended stream's section, for nt_ship_bundle to skip; s->lock held. */
static void note_streamed(nt_ship *s, const nt_saved_range *r)
{
	struct stat st;
	if (r->len == 0 || fstat(r->bundle_fd, &st) != 0 ||
	    (s->nstreamed == s->streamed_cap && !grow_streamed(s)))
		return;
	s->streamed[s->nstreamed++] = (ship_streamed){ (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						       r->offset };
}

int nt_ship_stream(nt_ship *s, const nt_saved_range *r)
{
	if (s == NULL || r == NULL || r->to < r->from) {
		errno = EINVAL;
		return -1;
	}
	ship_section *item = calloc(1, sizeof(*item));
	if (item != NULL && r->header != NULL && r->header_len != 0 &&
	    (item->header = malloc(r->header_len)) != NULL) {
		memcpy(item->header, r->header, r->header_len);
		item->header_len = r->header_len;
	}
	pthread_mutex_lock(&s->lock);
	ship_stream *st = s->streams;
	while (st != NULL && st->id != r->id)
		st = st->next;
	int err = item == NULL || (r->header_len != 0 && item->header == NULL) ? ENOMEM
		  : r->header == NULL || r->header_len == 0 ? EINVAL : 0;
	if (err == 0 && st == NULL && r->from != 0)
		err = EINVAL; /* its start was refused: the rest would lack its durable records */
	else if (err == 0 && st == NULL && (st = stream_new(s, r)) == NULL)
		err = errno;
	if (err == 0 && (st->end_queued || (r->from != st->handed && !st->broken) ||
			 (st->broken && !r->ended)))
		err = EINVAL;
	if (err != 0) {
		if (err != EINVAL && st == NULL) /* a stream that could not start */
			s->counts.sections++, s->counts.sections_failed++;
		else if (err != EINVAL && !st->broken) /* a range lost: its end still finishes */
			st->broken = 1, s->counts.sections_failed++;
		pthread_mutex_unlock(&s->lock);
		if (item != NULL)
			free(item->header);
		free(item);
		errno = err;
		return -1;
	}
	st->handed = r->to;
	item->stream = st;
	item->from = r->from;
	item->to = r->to;
	item->ended = st->end_queued = r->ended != 0;
	if (r->ended)
		note_streamed(s, r);
	enqueue(s, item);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* A bundle's section at `offset` of the file of (dev, ino) already shipped as a stream. */
static int was_streamed(nt_ship *s, const struct stat *st, uint64_t offset)
{
	pthread_mutex_lock(&s->lock);
	int found = 0;
	for (size_t i = 0; i < s->nstreamed && !found; i++)
		found = s->streamed[i].dev == (uint64_t)st->st_dev &&
			s->streamed[i].ino == (uint64_t)st->st_ino && s->streamed[i].offset == offset;
	pthread_mutex_unlock(&s->lock);
	return found;
}

int nt_ship_bundle(nt_ship *s, int fd, uint64_t *cursor, uint64_t end)
{
	int handed = 0;
	if (s == NULL || cursor == NULL || *cursor == UINT64_MAX)
		return 0;
	if (*cursor == 0)
		*cursor = sizeof(nt_bundle_preamble);
	while (*cursor + sizeof(nt_bundle_frame) <= end) {
		nt_bundle_frame f;
		if (pread(fd, &f, sizeof(f), (off_t)*cursor) != (ssize_t)sizeof(f))
			break;
		const char *bad = nt_bundle_frame_problem(&f);
		uint64_t head, next;
		if (bad != NULL) {
			nt_ship_log(s, "the bundle's frame at byte %llu: %s: nothing after it is shipped",
				    (unsigned long long)*cursor, bad);
			*cursor = UINT64_MAX;
			break;
		}
		if (nt_bundle_frame_fit(&f, *cursor, end, &head, &next) != NT_BUNDLE_FIT_WHOLE)
			break; /* not all written yet */
		if (f.kind == NT_BUNDLE_END) {
			*cursor = UINT64_MAX;
			break;
		}
		char name[NT_BUNDLE_MAX_NAME + 1] = "";
		if (pread(fd, name, f.name_len, (off_t)(*cursor + sizeof(f))) != f.name_len)
			name[0] = '\0';
		name[f.name_len] = '\0';
		struct stat st;
		int streamed = fstat(fd, &st) == 0 && was_streamed(s, &st, *cursor + head);
		if (f.archive_size > 0 && !streamed &&
		    nt_ship_section(s, fd, *cursor + head, f.archive_size, name) == 0)
			handed++;
		*cursor = next;
	}
	return handed;
}

void nt_ship_get_counts(nt_ship *s, nt_ship_counts *out)
{
	uint64_t files, bytes;
	memset(out, 0, sizeof(*out));
	if (s == NULL)
		return;
	nt_ship_spool_scan(s, &files, &bytes);
	pthread_mutex_lock(&s->lock);
	*out = s->counts;
	pthread_mutex_unlock(&s->lock);
	out->left = files;
	out->left_bytes = bytes;
}

const char *nt_ship_summary(const nt_ship_counts *c, char *buf, size_t cap)
{
	snprintf(buf, cap,
		 "otlp: %llu requests sent (%llu spans, %llu data points, %llu bytes), "
		 "%llu retries; %llu left in the spool (%llu bytes, sent by the next run); "
		 "dropped: %llu past the spool's cap (%llu spans, %llu data points), "
		 "%llu refused by the receiver (%llu spans, %llu data points), %llu unwritable, "
		 "%llu unreadable; %llu spans, %llu data points rejected (partial success); "
		 "%llu of %llu sections not exported",
		 (unsigned long long)c->sent, (unsigned long long)c->sent_spans,
		 (unsigned long long)c->sent_points, (unsigned long long)c->sent_bytes,
		 (unsigned long long)c->retries, (unsigned long long)c->left,
		 (unsigned long long)c->left_bytes, (unsigned long long)c->dropped_full,
		 (unsigned long long)c->dropped_full_spans, (unsigned long long)c->dropped_full_points,
		 (unsigned long long)c->dropped_http, (unsigned long long)c->dropped_http_spans,
		 (unsigned long long)c->dropped_http_points, (unsigned long long)c->dropped_io,
		 (unsigned long long)c->dropped_bad, (unsigned long long)c->rejected_spans,
		 (unsigned long long)c->rejected_points, (unsigned long long)c->sections_failed,
		 (unsigned long long)c->sections);
	return buf;
}

/* The streams whose end never came (their manager stopped first): what was saved is
 * exported and what is open ends unended. */
static void end_streams(nt_ship *s)
{
	pthread_mutex_lock(&s->lock);
	for (ship_stream *st = s->streams; st != NULL; st = st->next) {
		ship_section *item = st->end_queued ? NULL : calloc(1, sizeof(*item));
		if (item == NULL)
			continue; /* queued already, or no memory: its exporter is freed unfinished */
		item->stream = st;
		item->from = item->to = st->handed;
		item->ended = st->end_queued = 1;
		enqueue(s, item);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Until the exporter's queue is empty (no deadline: local work). */
static void wait_exported(nt_ship *s)
{
	pthread_mutex_lock(&s->lock);
	while (s->have_exporter && (s->head != NULL || s->exporting))
		pthread_cond_wait(&s->idle, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Until the spool is empty or wait_ms passed (a scan at each removal, at least every 50 ms:
 * another process may be the one sending it). */
static void wait_sent(nt_ship *s, unsigned wait_ms)
{
	int64_t end = mono_ms() + wait_ms, left;
	while ((left = end - mono_ms()) > 0) {
		uint64_t files, bytes;
		nt_ship_spool_scan(s, &files, &bytes);
		if (files == 0)
			return;
		struct timespec until = nt_deadline_after_ms(left < 50 ? (int)left : 50);
		pthread_mutex_lock(&s->lock);
		pthread_cond_timedwait(&s->idle, &s->lock, &until);
		pthread_mutex_unlock(&s->lock);
	}
}

void nt_ship_close(nt_ship *s, unsigned wait_ms, nt_ship_counts *out)
{
	if (s == NULL)
		return;
	end_streams(s);
	wait_exported(s);
	if (s->have_sender)
		wait_sent(s, wait_ms);
	pthread_mutex_lock(&s->lock);
	s->stop_export = 1;
	__atomic_store_n(&s->stop_send, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
	if (s->have_exporter)
		pthread_join(s->exporter, NULL);
	if (s->have_sender)
		pthread_join(s->sender, NULL);
	if (out != NULL)
		nt_ship_get_counts(s, out);
	pthread_mutex_lock(&s->lock);
	file_unref(s, s->last_file);
	while (s->streams != NULL) { /* only when an end could not be queued */
		nt_otlp_exporter_free(s->streams->x);
		free(s->streams->durable.p);
		stream_free(s, s->streams);
	}
	pthread_mutex_unlock(&s->lock);
	free(s->streamed);
	free_ship(s);
}
