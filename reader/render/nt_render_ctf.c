/*
 * nt_render_ctf.c - a Common Trace Format 1.8 trace (a directory) that babeltrace2 and Trace
 * Compass read: the binary streams; their description is nt_render_ctf_meta.c's.
 *
 * One stream file per thread ("stream-<pid>-<tid>-<index>"), all of stream class 0, whose
 * packets (at most 64 KiB each) carry the thread's pid, tid, process and thread names and
 * the count of events it lost so far: a gap between two of its chunks closes the packet,
 * so babeltrace2 reports "discarded events" between the two packets. Events are visited in
 * time order, so each stream gets its thread's events in the thread's own order; a stream's
 * timestamps must not go back, and the reader's do not, except a Complete event's start
 * (recorded when it ends, after the events inside it): a Complete is stamped at its end
 * (its start is timestamp - _nt_duration_ns). Anything else that would go back (only a
 * hostile archive's) is stamped with the stream's last time and counted in the metadata.
 *
 * The metadata file is written last, so a directory without one holds no trace; a failure
 * (a write, memory, damage that stops the visit) removes every file made and the directory
 * if it was made here. Memory: one packet buffer per thread and one class per call-site
 * shape, never O(events).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nt_render_ctf.h"
#include "nt_render_util.h"
#include "runtime/nt_write_all.h"

#define PACKET_MAX (64u * 1024u)
/* More streams than this and a stream's file is opened for each packet it writes, instead
 * of staying open: a bundle of many threads must not run out of descriptors. */
#define OPEN_STREAMS_MAX 256u

typedef struct ctf_stream {
	int fd;
	int made;                /* its file exists */
	char file[80];
	uint8_t *buf;            /* the packet being filled */
	size_t len, cap, ctx_len;
	uint64_t first_ts, last_ts, events, seq, discarded;
	uint64_t total;          /* events written to the stream */
} ctf_stream;

typedef struct ctf_ctx {
	nt_reader *r;
	const nt_render_options *opt;
	nt_reader_error *err;
	const char *dir;
	int made_dir;            /* the directory was made here */
	int dirfd;
	ctf_stream *streams;     /* one per thread the archive defines */
	uint32_t nstreams;
	uint32_t *slot_of;       /* by thread index: 1 + its stream's place, 0 = none */
	uint32_t nindices;
	int keep_open;
	ctf_classes classes;
	ctf_trace_facts facts;
	int failed;              /* errno of the first failure, with err filled; 0 = none */
} ctf_ctx;

static void fail(ctf_ctx *c, int e, const char *what, const char *name)
{
	if (c->failed)
		return;
	c->failed = e ? e : EIO;
	if (c->err)
		snprintf(c->err->message, sizeof(c->err->message), "%s%s%s: %s", what,
			 name ? "/" : "", name ? name : "", strerror(c->failed));
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Writes the packet being filled, even an empty one, and starts the next one. */
static int write_packet(ctf_ctx *c, ctf_stream *s)
{
	put64(s->buf + CTF_PC_TS_BEGIN, s->first_ts);
	put64(s->buf + CTF_PC_TS_END, s->last_ts);
	put64(s->buf + CTF_PC_CONTENT_SIZE, (uint64_t)s->len * 8);
	put64(s->buf + CTF_PC_PACKET_SIZE, (uint64_t)s->len * 8);
	put64(s->buf + CTF_PC_SEQ_NUM, s->seq++);
	put64(s->buf + CTF_PC_DISCARDED, s->discarded);
	int fd = s->fd;
	if (fd < 0) {
		fd = openat(c->dirfd, s->file, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			fail(c, errno, c->dir, s->file);
			return -1;
		}
	}
	int e = nt_write_all(fd, s->buf, s->len, NULL);
	if (!c->keep_open)
		close(fd);
	if (e != 0) {
		fail(c, e, c->dir, s->file);
		return -1;
	}
	s->len = s->ctx_len;
	s->events = 0;
	return 0;
}

/* Writes the packet being filled if it holds events. */
static int flush_packet(ctf_ctx *c, ctf_stream *s)
{
	return s->events ? write_packet(c, s) : 0;
}

/* Appends a NUL-terminated copy of s to the packet (room checked by the caller). */
static size_t put_cstr(uint8_t *p, const char *s)
{
	size_t n = strlen(s) + 1;
	memcpy(p, s, n);
	return n;
}

/* The stream kept for thread `t`, made or not; NULL for a thread the archive never
 * defined. */
static ctf_stream *stream_slot(const ctf_ctx *c, const nt_reader_thread *t)
{
	if (t->index >= c->nindices || c->slot_of[t->index] == 0)
		return NULL;
	return &c->streams[c->slot_of[t->index] - 1];
}

/* The stream of an event's thread: its file and its packet header and context. */
static ctf_stream *stream_of(ctf_ctx *c, const nt_reader_thread *t)
{
	ctf_stream *s = stream_slot(c, t);
	if (s == NULL || s->made)
		return s;
	const nt_reader_section *sec = nt_reader_section_peek(c->r, t->section);
	const char *proc = sec && sec->name ? sec->name : "";
	size_t need = CTF_PC_STRINGS + strlen(proc) + strlen(t->name) + 2;
	s->cap = need + PACKET_MAX;
	s->buf = malloc(s->cap);
	if (s->buf == NULL) {
		fail(c, ENOMEM, c->dir, NULL);
		return NULL;
	}
	snprintf(s->file, sizeof(s->file), "stream-%" PRIu32 "-%" PRIu32 "-%" PRIu32, t->pid,
		 t->tid, t->index);
	s->fd = openat(c->dirfd, s->file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		       0600);
	if (s->fd < 0) {
		fail(c, errno, c->dir, s->file);
		return NULL;
	}
	s->made = 1;
	if (!c->keep_open)
		close(s->fd), s->fd = -1;
	memset(s->buf, 0, CTF_PC_STRINGS);
	put32(s->buf, CTF_MAGIC);
	memcpy(s->buf + 4, c->facts.uuid, 16);
	put32(s->buf + 20, 0);                   /* stream_id: the one stream class */
	put64(s->buf + 24, t->index);            /* stream_instance_id */
	put32(s->buf + CTF_PC_PID, t->pid);
	put32(s->buf + CTF_PC_TID, t->tid);
	size_t n = CTF_PC_STRINGS;
	n += put_cstr(s->buf + n, proc);
	n += put_cstr(s->buf + n, t->name);
	s->ctx_len = s->len = n;
	return s;
}

/* Bytes an argument takes at most in the payload. */
static size_t arg_room(const nt_reader_arg *a)
{
	switch (ctf_arg_kind_of(a->type)) {
	case CTF_ARG_BOOL: return 1;
	case CTF_ARG_I32:
	case CTF_ARG_U32: return 4;
	case CTF_ARG_STRING:
		return a->type == NT_ARG_STRING || a->type == NT_ARG_STRING_REF ||
			       a->type == NT_ARG_JSON ? (size_t)a->value.str.len * 3 + 1 : 2;
	case CTF_ARG_LIST: return 4 + (size_t)a->value.list.bytes * 3 + a->value.list.count;
	default: return 8;
	}
}

/* Raw bytes as a CTF string: a NUL inside becomes U+FFFD (counted), a NUL ends it. */
static size_t put_bytes_str(ctf_ctx *c, uint8_t *p, const char *s, uint32_t len)
{
	size_t n = 0;
	for (const char *nul; len > 0 && (nul = memchr(s, 0, len)) != NULL;) {
		size_t run = (size_t)(nul - s);
		memcpy(p + n, s, run);
		memcpy(p + n + run, "\xef\xbf\xbd", 3);
		n += run + 3;
		s += run + 1, len -= (uint32_t)run + 1;
		c->facts.nul_bytes++;
	}
	memcpy(p + n, s, len);
	n += len;
	p[n++] = 0;
	return n;
}

static size_t put_arg(ctf_ctx *c, uint8_t *p, const nt_reader_arg *a)
{
	switch (ctf_arg_kind_of(a->type)) {
	case CTF_ARG_I32: put32(p, (uint32_t)(int32_t)a->value.i64); return 4;
	case CTF_ARG_U32: put32(p, (uint32_t)a->value.u64); return 4;
	case CTF_ARG_BOOL: p[0] = a->value.u64 != 0; return 1;
	case CTF_ARG_I64:
	case CTF_ARG_U64:
	case CTF_ARG_HEX64:
	case CTF_ARG_DOUBLE: memcpy(p, &a->value.u64, 8); return 8; /* one union, 8 bytes */
	case CTF_ARG_LIST: {
		size_t n = 4;
		uint32_t pos = 0, len, count = 0;
		const char *s;
		while (nt_reader_list_next(a, &pos, &s, &len))
			n += put_bytes_str(c, p + n, s, len), count++;
		put32(p, count);
		return n;
	}
	default:
		if (a->type == NT_ARG_STRING || a->type == NT_ARG_STRING_REF ||
		    a->type == NT_ARG_JSON)
			return put_bytes_str(c, p, a->value.str.ptr, a->value.str.len);
		return put_bytes_str(c, p, "?", 1); /* a type this version does not know */
	}
}

/* The event's CTF time: ns of CLOCK_MONOTONIC, a Complete's end, never before the stream's
 * last one. */
static uint64_t stamp(ctf_ctx *c, ctf_stream *s, const nt_reader_event *e)
{
	int64_t t = e->time_ns;
	if (e->kind == NT_KIND_COMPLETE &&
	    __builtin_add_overflow(t, (int64_t)(e->duration_ns & INT64_MAX), &t))
		t = INT64_MAX;
	uint64_t ts = t < 0 ? 0 : (uint64_t)t;
	uint64_t floor = s->seq || s->events ? s->last_ts : 0;
	if (ts < floor || t < 0) {
		c->facts.clamped++;
		ts = ts < floor ? floor : ts;
	}
	return ts;
}

/* Makes room for `need` more bytes in the stream's packet: a full packet is written. */
static int packet_room(ctf_ctx *c, ctf_stream *s, size_t need)
{
	if (s->len + need <= s->cap && (s->len + need <= s->ctx_len + PACKET_MAX || !s->events))
		return 0;
	if (flush_packet(c, s) != 0)
		return -1;
	if (s->len + need > s->cap) { /* one event larger than a packet: a packet of its own */
		uint8_t *b = realloc(s->buf, s->len + need);
		if (b == NULL) {
			fail(c, ENOMEM, c->dir, NULL);
			return -1;
		}
		s->buf = b, s->cap = s->len + need;
	}
	return 0;
}

static int on_event(void *ctx, const nt_reader_event *e)
{
	ctf_ctx *c = ctx;
	if (c->failed)
		return 1;
	ctf_stream *s = stream_of(c, e->thread);
	int64_t cls = s ? ctf_class_of(&c->classes, e) : -1;
	if (cls < 0) {
		fail(c, ENOMEM, c->dir, NULL);
		return 1;
	}
	size_t need = 4 + 8 + 8 + 1 + 8 + 8; /* header, kind, a duration or an id */
	for (uint32_t i = 0; i < e->arg_count; i++)
		need += arg_room(&e->args[i]);
	if (packet_room(c, s, need) != 0)
		return 1;
	uint64_t ts = stamp(c, s, e);
	uint8_t *p = s->buf + s->len;
	put32(p, (uint32_t)cls);
	put64(p + 4, ts);
	put32(p + 12, e->thread->pid);
	put32(p + 16, e->thread->tid);
	p[20] = e->kind;
	size_t n = 21;
	if (e->kind == NT_KIND_COMPLETE)
		put64(p + n, e->duration_ns), n += 8;
	if (e->id_scope != NT_ID_NONE)
		put64(p + n, e->id), n += 8;
	for (uint32_t i = 0; i < e->arg_count; i++)
		n += put_arg(c, p + n, &e->args[i]);
	s->len += n;
	s->total++;
	if (s->events++ == 0)
		s->first_ts = ts;
	s->last_ts = ts;
	c->facts.events++;
	return 0;
}

/* Lost events close the packet: the next one's events_discarded counts them. */
static void on_gap(void *ctx, const nt_reader_gap *g)
{
	ctf_ctx *c = ctx;
	ctf_stream *s = stream_slot(c, g->thread);
	if (s == NULL)
		return;
	if (!s->made && !c->failed) {
		/* An empty first packet at the gap: babeltrace2 counts a packet's discarded
		 * events against the packet before it, and a stream's first has none. */
		if ((s = stream_of(c, g->thread)) == NULL)
			return;
		s->first_ts = s->last_ts = g->time_ns < 0 ? 0 : (uint64_t)g->time_ns;
		write_packet(c, s);
	} else if (s->made) {
		flush_packet(c, s);
	}
	s->discarded += g->events;
	c->facts.gap_events += g->events;
}

static void on_error(void *ctx, uint64_t off, const char *msg)
{
	ctf_ctx *c = ctx;
	c->facts.damage_reports++;
	nt_render_forward_error(c->opt, off, msg);
}

/* Is the directory open at fd empty? */
static int dir_is_empty(int fd)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	if (d == NULL) {
		if (dup_fd >= 0)
			close(dup_fd);
		return 0;
	}
	int empty = 1;
	for (struct dirent *de; empty && (de = readdir(d)) != NULL;)
		empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
	closedir(d);
	return empty;
}

/* The output directory: made 0700, or an existing empty one; a link there is refused, as
 * is a directory with anything in it (a previous export is never mixed with this one). */
static int open_dir(ctf_ctx *c)
{
	if (mkdir(c->dir, 0700) == 0)
		c->made_dir = 1;
	else if (errno != EEXIST) {
		fail(c, errno, c->dir, NULL);
		return -1;
	}
	c->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->dirfd < 0) {
		int e = errno;
		fail(c, e == ENOTDIR || e == ELOOP ? EEXIST : e, c->dir, NULL);
		if (c->err && (e == ENOTDIR || e == ELOOP))
			snprintf(c->err->message, sizeof(c->err->message),
				 "%s: exists and is not a directory (a link is never followed)",
				 c->dir);
		return -1;
	}
	if (!c->made_dir && !dir_is_empty(c->dirfd)) {
		fail(c, ENOTEMPTY, c->dir, NULL);
		if (c->err)
			snprintf(c->err->message, sizeof(c->err->message),
				 "%s: directory is not empty (the export needs a new or empty one)",
				 c->dir);
		return -1;
	}
	return 0;
}

static int write_metadata(ctf_ctx *c)
{
	int fd = openat(c->dirfd, "metadata",
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (f == NULL) {
		fail(c, errno, c->dir, "metadata");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	errno = 0;
	int rc = ctf_write_metadata(f, &c->classes, &c->facts);
	int e = errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -1, e = errno;
	if (rc != 0)
		fail(c, e, c->dir, "metadata");
	return rc;
}

/* After a failure: nothing that could pass for a trace is left. */
static void remove_made(ctf_ctx *c)
{
	unlinkat(c->dirfd, "metadata", 0); /* only ever made here: O_EXCL in an empty dir */
	for (uint32_t i = 0; i < c->nstreams; i++)
		if (c->streams[i].made)
			unlinkat(c->dirfd, c->streams[i].file, 0);
	if (c->made_dir)
		rmdir(c->dir);
}

static int init_ctx(ctf_ctx *c, nt_reader *r, const char *dir)
{
	c->r = r;
	c->dir = dir;
	c->dirfd = -1;
	const nt_archive_info *h = nt_reader_info(r);
	c->facts.info = h;
	c->facts.archive = nt_reader_name(r) ? nt_reader_name(r) : "";
	c->facts.processes = nt_reader_section_count(r);
	c->facts.clock_offset_ns = (int64_t)(h->start_realtime_ns - h->start_monotonic_ns);
	if (getrandom(c->facts.uuid, sizeof(c->facts.uuid), 0) != sizeof(c->facts.uuid)) {
		fail(c, errno, dir, NULL);
		return -1;
	}
	c->facts.uuid[6] = (uint8_t)((c->facts.uuid[6] & 0x0f) | 0x40); /* version 4 */
	c->facts.uuid[8] = (uint8_t)((c->facts.uuid[8] & 0x3f) | 0x80);
	/* A stream per defined thread, found by index through a table of 4-byte places: an
	 * archive that defines one thread of index 131,073 costs 512 KiB, not a stream each. */
	c->nstreams = nt_reader_thread_count(r);
	c->nindices = nt_reader_thread_index_limit(r);
	c->keep_open = c->nstreams <= OPEN_STREAMS_MAX;
	c->streams = calloc(c->nstreams ? c->nstreams : 1, sizeof(*c->streams));
	c->slot_of = calloc(c->nindices ? c->nindices : 1, sizeof(*c->slot_of));
	for (uint32_t i = 0; c->streams != NULL && i < c->nstreams; i++)
		c->streams[i].fd = -1;
	if (c->streams == NULL || c->slot_of == NULL) {
		fail(c, ENOMEM, dir, NULL);
		return -1;
	}
	for (uint32_t i = 0; i < c->nstreams; i++) {
		const nt_reader_thread *t = nt_reader_thread_at(r, i);
		if (t != NULL && t->index < c->nindices)
			c->slot_of[t->index] = i + 1;
	}
	return 0;
}

static void free_ctx(ctf_ctx *c)
{
	for (uint32_t i = 0; c->streams && i < c->nstreams; i++) {
		if (c->streams[i].fd >= 0)
			close(c->streams[i].fd);
		free(c->streams[i].buf);
	}
	free(c->streams);
	free(c->slot_of);
	ctf_classes_free(&c->classes);
	if (c->dirfd >= 0)
		close(c->dirfd);
}

/* Losses no gap showed (a oneshot arena's drops once full, a circular arena's overwrites
 * before its oldest chunk kept): the header counts them per process. Each process's count
 * less what its streams' gaps discarded goes into an empty packet closing its stream that
 * ended last, so babeltrace2 warns of them as it does of gaps ("Tracer discarded N events").
 * A damaged archive adds the events its header counts as saved (written less overwritten)
 * that the visit did not find: a truncated archive's missing events. */
static void close_with_losses(ctf_ctx *c)
{
	for (uint32_t sec = 0; sec < nt_reader_section_count(c->r) && !c->failed; sec++) {
		nt_archive_info hdr;
		const nt_archive_info *h = nt_reader_section_count(c->r) == 1 ? nt_reader_info(c->r)
				: nt_reader_section_header(c->r, sec, &hdr) == 0 ? &hdr : NULL;
		if (h == NULL)
			continue;
		uint64_t lost = h->events_dropped + h->events_overwritten, shown = 0, found = 0;
		ctf_stream *last = NULL;
		for (uint32_t t = 0; t < nt_reader_thread_count(c->r); t++) {
			const nt_reader_thread *th = nt_reader_thread_at(c->r, t);
			ctf_stream *s = stream_slot(c, th);
			if (th->section != sec || s == NULL || !s->made)
				continue;
			shown += s->discarded;
			found += s->total;
			if (last == NULL || s->last_ts > last->last_ts)
				last = s;
		}
		uint64_t saved = h->events_written > h->events_overwritten
					 ? h->events_written - h->events_overwritten : 0;
		if (c->facts.damage_reports > 0 && saved > found)
			lost += saved - found;
		if (last == NULL || lost <= shown)
			continue;
		last->first_ts = last->last_ts;
		last->discarded += lost - shown;
		c->facts.header_losses += lost - shown;
		write_packet(c, last);
	}
}

/* The visit, every packet still being filled, the losses no gap showed, then the metadata. */
static int export(ctf_ctx *c, const nt_render_options *opt)
{
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error, .on_gap = on_gap };
	int rc = nt_reader_visit(c->r, &cb, c, NT_ORDER_TIME, opt->policy);
	for (uint32_t i = 0; i < c->nstreams && !c->failed; i++)
		if (c->streams[i].made)
			flush_packet(c, &c->streams[i]);
	if (rc >= 0)
		close_with_losses(c);
	if (c->failed || rc < 0)
		return -1;
	return write_metadata(c) != 0 ? -1 : rc;
}

int nt_render_ctf(nt_reader *r, const char *dir, const nt_render_options *user_opt,
		  nt_reader_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
	nt_render_options opt;
	if (r == NULL || dir == NULL || dir[0] == '\0') {
		if (err)
			snprintf(err->message, sizeof(err->message),
				 "nt_render_ctf: no reader or no directory");
		errno = EINVAL;
		return -1;
	}
	if (nt_render_options_in(user_opt, &opt, "nt_render_ctf") != 0) {
		if (err)
			snprintf(err->message, sizeof(err->message),
				 "nt_render_ctf: bad nt_render_options");
		errno = EINVAL;
		return -1;
	}
	ctf_ctx c = { 0 };
	c.opt = &opt;
	c.err = err;
	int rc = -1;
	if (init_ctx(&c, r, dir) == 0 && open_dir(&c) == 0) {
		rc = export(&c, &opt);
		if (rc < 0 && !c.failed && err) /* the visit stopped: damage, or memory */
			snprintf(err->message, sizeof(err->message),
				 "%s: export abandoned (%s): nothing is left there", dir,
				 c.facts.damage_reports ? "damaged archive" : "out of memory");
		if (rc < 0)
			remove_made(&c);
	} else if (c.made_dir) {
		rmdir(dir);
	}
	int e = c.failed ? c.failed : errno;
	free_ctx(&c);
	errno = rc < 0 ? e : 0;
	return rc;
}
