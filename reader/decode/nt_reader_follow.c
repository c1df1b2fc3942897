/*
 * nt_reader_follow.c - follows an archive while its writer still writes it (nanotrace_reader.h,
 * LIVE FOLLOW).
 *
 * Each poll reads the file afresh as an ordinary reader reads it: a live arena through a
 * private copy taken with the writers' protocol (nt_follow_snapshot.c), a finished archive
 * (the writer renamed its compacted archive over the path, or flipped its streaming file to
 * the Stream layout) by mapping it. What was delivered before is known by each thread's event
 * ordinal, which every layout keeps (the saver and the compaction cut chunks without
 * renumbering): a visit in stream order meets each thread's events in ordinal order, gaps
 * included, so the ordinal of an event is the events and gap events of its thread before it.
 * Events below a thread's next ordinal were delivered; a jump past it is events the follower
 * never saw (dropped, or overwritten before a poll could copy them), delivered as a gap.
 * A poll's new events are merged by time across threads, as nt_reader_visit's time order
 * merges them, before they are delivered.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/common/nt_grow.h"
#include "nt_follow_snapshot.h"
#include "nt_reader_internal.h"

typedef struct follow_entry {
	int is_gap;
	uint32_t thread;     /* its thread's index */
	uint32_t next_same;  /* the next entry of the same thread, or UINT32_MAX */
	size_t args_at;      /* its arguments in f->args */
	nt_reader_event ev;
	nt_reader_gap gap;
} follow_entry;

struct nt_follower {
	char *path;
	int fd;
	dev_t dev;
	ino_t ino;
	const uint8_t *map; /* the live arena, shared (NULL: the file was finished at open) */
	size_t map_len;
	nt_follow_snapshot snap;
	nt_reader *r;       /* the last poll's reader */
	uint32_t pid;       /* the writer's, from the header */
	int state;          /* NT_FOLLOW_*: once not RUNNING, every poll returns it */
	/* By thread index: the next ordinal to deliver, and per visit the ordinal reached and
	 * the time of a gap the reader reported just before it. */
	uint64_t *next, *pos;
	int64_t *gap_time;
	uint8_t *gap_seen;
	size_t nthreads;
	follow_entry *batch;
	size_t nbatch, capbatch;
	nt_reader_arg *args;
	size_t nargs, capargs;
	/* Argument bytes of the batch: a compressed chunk's values live in the visit's buffer,
	 * which is gone once the visit returns; args point here by offset until delivery. */
	char *bytes;
	size_t nbytes, capbytes;
	uint64_t lost;
	int damaged, oom;
	/* A failed look at a live copy (torn: a fresh copy may not fail) and the fingerprint
	 * of the image that failed, so that a retry that copies the same bytes stops there. */
	int torn, failed_image_set;
	uint64_t failed_image;
	char error[512];
};

static void fail(nt_follower *f, const char *fmt, const char *detail)
{
	char d[300];
	snprintf(d, sizeof(d), "%.299s", detail);
	detail = d;
	int n = snprintf(f->error, sizeof(f->error), "%.200s: ", f->path);
	snprintf(f->error + n, sizeof(f->error) - (size_t)n, fmt, detail);
	f->state = NT_FOLLOW_FAILED;
}

/* The reader's own message names the path already. */
static void fail_reader(nt_follower *f, const nt_reader_error *err)
{
	snprintf(f->error, sizeof(f->error), "%s", err->message);
	f->state = NT_FOLLOW_FAILED;
}

/* Maps the live arena of the file open at f->fd, whose header `in` describes. */
static int map_arena(nt_follower *f, const nt_archive_info *in, uint64_t file_size,
		     nt_reader_error *err)
{
	uint64_t len = in->stream_offset != 0 ? in->stream_offset : file_size;
	if (len < NT_ARENA_HEADER_BYTES || len > file_size || len > SIZE_MAX) {
		nt_reader_fail(err, f->path, 0, "%s", "the arena does not fit the file");
		return 0;
	}
	void *m = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED, f->fd, 0);
	if (m == MAP_FAILED) {
		nt_reader_fail(err, f->path, 0, "%s", strerror(errno));
		return 0;
	}
	f->map = m;
	f->map_len = (size_t)len;
	return 1;
}

nt_follower *nt_follow_open(const char *path, nt_reader_error *err)
{
	if (path == NULL) {
		nt_reader_fail(err, "(null)", 0, "%s", "no archive path given");
		return NULL;
	}
	nt_follower *f = calloc(1, sizeof(*f));
	if (f == NULL || (f->path = strdup(path)) == NULL) {
		free(f);
		nt_reader_fail(err, path, 0, "%s", "out of memory");
		return NULL;
	}
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t head[NT_ARENA_HEADER_BYTES];
	char why[200];
	uint64_t where;
	nt_archive_info in;
	ssize_t n;
	if (f->fd < 0 || fstat(f->fd, &st) != 0) {
		nt_reader_fail(err, path, 0, "%s", strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		nt_reader_fail(err, path, 0, "%s", "not a regular file");
	} else if ((n = pread(f->fd, head, sizeof(head), 0)) <= 0) {
		nt_reader_fail(err, path, 0, "%s",
			       n < 0 ? strerror(errno) : "empty file: not a nanotrace archive");
	} else if (nt_is_bundle(head, (size_t)n)) {
		nt_reader_fail(err, path, 0, "%s", "a bundle of many processes cannot be followed");
	} else if (nt_header_decode(head, (size_t)n, &in, why, sizeof(why), &where) == 0) {
		nt_reader_fail(err, path, 0, "%s", why);
	} else if (in.layout != NT_LAYOUT_ARENA || map_arena(f, &in, (uint64_t)st.st_size, err)) {
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->pid = in.pid;
		return f;
	}
	nt_follow_close(f);
	return NULL;
}

void nt_follow_close(nt_follower *f)
{
	if (f == NULL)
		return;
	nt_reader_close(f->r);
	if (f->map != NULL)
		munmap((void *)(uintptr_t)f->map, f->map_len);
	if (f->fd >= 0)
		close(f->fd);
	nt_follow_snapshot_free(&f->snap);
	free(f->next);
	free(f->pos);
	free(f->gap_time);
	free(f->gap_seen);
	free(f->batch);
	free(f->args);
	free(f->bytes);
	free(f->path);
	free(f);
}

/* ---- what is new ------------------------------------------------------------------------- */

static int grow_threads(nt_follower *f, size_t n)
{
	size_t have = f->nthreads, k;
	if (n <= have)
		return 1;
	k = have;
	if (!nt_grow(&f->next, &k, n, sizeof(*f->next)))
		return 0;
	k = have;
	if (!nt_grow(&f->pos, &k, n, sizeof(*f->pos)))
		return 0;
	k = have;
	if (!nt_grow(&f->gap_time, &k, n, sizeof(*f->gap_time)))
		return 0;
	k = have;
	if (!nt_grow(&f->gap_seen, &k, n, sizeof(*f->gap_seen)))
		return 0;
	f->nthreads = k;
	return 1;
}

static follow_entry *add_entry(nt_follower *f, uint32_t thread)
{
	if (!nt_grow(&f->batch, &f->capbatch, f->nbatch + 1, sizeof(*f->batch))) {
		f->oom = 1;
		return NULL;
	}
	follow_entry *e = &f->batch[f->nbatch++];
	memset(e, 0, sizeof(*e));
	e->thread = thread;
	e->next_same = UINT32_MAX;
	return e;
}

/* Does an argument of this type point at bytes of the chunk (not the reader's tables)? */
static int arg_has_bytes(uint8_t type)
{
	return type == NT_ARG_STRING || type == NT_ARG_JSON || type == NT_ARG_STRING_LIST;
}

/* The argument's bytes into f->bytes; its pointer becomes their offset there. */
static int keep_arg_bytes(nt_follower *f, nt_reader_arg *a)
{
	if (!arg_has_bytes(a->type))
		return 1;
	const void *p = a->type == NT_ARG_STRING_LIST ? (const void *)a->value.list.ptr
						       : (const void *)a->value.str.ptr;
	size_t n = a->type == NT_ARG_STRING_LIST ? a->value.list.bytes : a->value.str.len;
	if (!nt_grow(&f->bytes, &f->capbytes, f->nbytes + n + 1, 1)) {
		f->oom = 1;
		return 0;
	}
	if (n)
		memcpy(f->bytes + f->nbytes, p, n);
	if (a->type == NT_ARG_STRING_LIST)
		a->value.list.ptr = (const uint8_t *)(uintptr_t)f->nbytes;
	else
		a->value.str.ptr = (const char *)(uintptr_t)f->nbytes;
	f->nbytes += n;
	return 1;
}

/* At delivery, when f->bytes no longer moves: offsets back to pointers. */
static void point_arg_bytes(nt_follower *f, nt_reader_arg *a)
{
	if (a->type == NT_ARG_STRING_LIST)
		a->value.list.ptr = (const uint8_t *)f->bytes + (uintptr_t)a->value.list.ptr;
	else if (arg_has_bytes(a->type))
		a->value.str.ptr = f->bytes + (uintptr_t)a->value.str.ptr;
}

static void on_gap(void *ctx, const nt_reader_gap *g)
{
	nt_follower *f = ctx;
	uint32_t t = g->thread->index;
	f->pos[t] += g->events;
	f->gap_time[t] = g->time_ns;
	f->gap_seen[t] = 1;
}

static int on_event(void *ctx, const nt_reader_event *ev)
{
	nt_follower *f = ctx;
	uint32_t t = ev->thread->index;
	uint64_t ord = f->pos[t]++;
	if (ord < f->next[t]) {
		f->gap_seen[t] = 0;
		return 0; /* delivered by an earlier poll */
	}
	if (ord > f->next[t]) {
		follow_entry *g = add_entry(f, t);
		if (g == NULL)
			return 1;
		g->is_gap = 1;
		g->gap = (nt_reader_gap){ ev->thread, ord - f->next[t],
					  f->gap_seen[t] ? f->gap_time[t] : ev->time_ns, ev->offset };
		f->lost += ord - f->next[t];
	}
	f->gap_seen[t] = 0;
	f->next[t] = ord + 1;
	follow_entry *e = add_entry(f, t);
	if (e == NULL || !nt_grow(&f->args, &f->capargs, f->nargs + ev->arg_count + 1,
				  sizeof(*f->args))) {
		f->oom = 1;
		return 1;
	}
	e->ev = *ev;
	e->args_at = f->nargs;
	memcpy(f->args + f->nargs, ev->args, ev->arg_count * sizeof(*ev->args));
	for (uint32_t k = 0; k < ev->arg_count; k++)
		if (!keep_arg_bytes(f, &f->args[f->nargs + k]))
			return 1;
	f->nargs += ev->arg_count;
	return 0;
}

static void on_damage(void *ctx, uint64_t off, const char *msg)
{
	nt_follower *f = ctx;
	if (!f->damaged) {
		char where[64];
		snprintf(where, sizeof(where), " at byte %llu", (unsigned long long)off);
		int n = snprintf(f->error, sizeof(f->error), "%.200s: %.250s", f->path, msg);
		snprintf(f->error + n, sizeof(f->error) - (size_t)n, "%s", where);
	}
	f->damaged = 1;
}

/* Visits r and keeps what was not delivered before in the batch. Returns 0, or -1 on damage
 * or no memory (the ordinals are then as before the call). */
static int collect(nt_follower *f, nt_reader *r)
{
	uint32_t limit = nt_reader_thread_index_limit(r);
	if (!grow_threads(f, limit ? limit : 1)) {
		f->oom = 1;
		return -1;
	}
	uint64_t *saved = malloc(f->nthreads * sizeof(uint64_t));
	if (saved == NULL) {
		f->oom = 1;
		return -1;
	}
	memcpy(saved, f->next, f->nthreads * sizeof(uint64_t));
	uint64_t lost = f->lost;
	memset(f->pos, 0, f->nthreads * sizeof(*f->pos));
	memset(f->gap_seen, 0, f->nthreads);
	f->nbatch = f->nargs = f->nbytes = 0;
	f->damaged = f->oom = 0;
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_damage, .on_gap = on_gap };
	int rc = nt_reader_visit(r, &cb, f, NT_ORDER_STREAM, NT_ON_CORRUPT_STOP);
	if (rc != 0 || f->damaged || f->oom) {
		memcpy(f->next, saved, f->nthreads * sizeof(uint64_t));
		f->lost = lost;
		f->nbatch = 0;
		free(saved);
		return -1;
	}
	free(saved);
	return 0;
}

/* The batch, each thread in its own order, merged by time (ties: the lower thread index),
 * as nt_reader_visit's time order merges threads. Returns 1 when on_event asked to stop. */
static int deliver(nt_follower *f, const nt_reader_callbacks *cb, void *ctx)
{
	uint32_t *head = malloc(f->nthreads * sizeof(uint32_t));
	uint32_t *tail = malloc(f->nthreads * sizeof(uint32_t));
	uint32_t *live = malloc(f->nthreads * sizeof(uint32_t));
	int stop = 0;
	if (head == NULL || tail == NULL || live == NULL) {
		f->oom = 1;
		stop = -1;
		goto out;
	}
	memset(head, 0xff, f->nthreads * sizeof(uint32_t));
	uint32_t nlive = 0;
	for (uint32_t i = 0; i < f->nbatch; i++) {
		follow_entry *e = &f->batch[i];
		e->ev.args = f->args + e->args_at;
		for (uint32_t k = 0; !e->is_gap && k < e->ev.arg_count; k++)
			point_arg_bytes(f, &f->args[e->args_at + k]);
		if (head[e->thread] == UINT32_MAX) {
			head[e->thread] = i;
			live[nlive++] = e->thread;
		} else {
			f->batch[tail[e->thread]].next_same = i;
		}
		tail[e->thread] = i;
	}
	while (nlive > 0 && !stop) {
		uint32_t best = 0;
		for (uint32_t k = 1; k < nlive; k++) {
			const follow_entry *a = &f->batch[head[live[k]]], *b = &f->batch[head[live[best]]];
			int64_t ta = a->is_gap ? a->gap.time_ns : a->ev.time_ns;
			int64_t tb = b->is_gap ? b->gap.time_ns : b->ev.time_ns;
			if (ta < tb || (ta == tb && live[k] < live[best]))
				best = k;
		}
		uint32_t t = live[best];
		follow_entry *e = &f->batch[head[t]];
		if (e->is_gap) {
			if (cb->on_gap)
				cb->on_gap(ctx, &e->gap);
		} else if (cb->on_event && cb->on_event(ctx, &e->ev)) {
			stop = 1;
		}
		head[t] = e->next_same;
		if (head[t] == UINT32_MAX)
			live[best] = live[--nlive];
	}
out:
	free(head);
	free(tail);
	free(live);
	f->nbatch = 0;
	return stop;
}

/* ---- the file ---------------------------------------------------------------------------- */

/* Is the writer's process still there? A zombie is not; pid 0 (unknown) always is. */
static int writer_alive(uint32_t pid)
{
	if (pid == 0)
		return 1;
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return 0;
	char p[64], buf[256];
	snprintf(p, sizeof(p), "/proc/%u/stat", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')');
	return !(paren != NULL && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
}

/* A finished archive at `fd`, mapped private: it no longer changes. */
static nt_reader *open_finished(nt_follower *f, int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size <= 0) {
		fail(f, "%s", "the finished archive cannot be read");
		return NULL;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		fail(f, "cannot map the finished archive: %s", strerror(errno));
		return NULL;
	}
	nt_reader_error err;
	nt_reader *r = nt_reader_over(m, (size_t)st.st_size, 1, f->path, &err);
	if (r == NULL)
		fail_reader(f, &err);
	return r;
}

/* The archive now at the path, when the writer replaced the file (its finish compacted the
 * arena into a new file and renamed it over the path). NULL: not replaced. */
static nt_reader *open_replacement(nt_follower *f, int *replaced)
{
	struct stat st;
	*replaced = 0;
	if (stat(f->path, &st) != 0 || (st.st_dev == f->dev && st.st_ino == f->ino))
		return NULL;
	*replaced = 1;
	int fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*replaced = 0; /* gone again between the two calls: look next time */
		return NULL;
	}
	nt_reader *r = open_finished(f, fd);
	close(fd);
	if (r != NULL && r->info.layout != NT_LAYOUT_STREAM) {
		nt_reader_close(r);
		fail(f, "%s", "the file was replaced by another recording");
		return NULL;
	}
	return r;
}

/* A live copy failed to open or to visit: a copy that met a writer's half-done store (a
 * count moved before the stream end it goes with) may fail where a fresh one does not, so
 * the poll copies again, unless that copy is these same bytes. */
static void live_failed(nt_follower *f)
{
	f->torn = 1;
	f->failed_image = nt_follow_snapshot_fingerprint(&f->snap);
	f->failed_image_set = 1;
}

/* The live arena as a reader over a fresh copy; *finished when the header says the writer
 * made it a finished archive meanwhile (a streaming file's last step). */
static nt_reader *open_live(nt_follower *f, int *finished)
{
	struct stat st;
	*finished = 0;
	if (fstat(f->fd, &st) != 0) {
		fail(f, "%s", strerror(errno));
		return NULL;
	}
	const char *why = nt_follow_snapshot_take(&f->snap, f->fd, f->map, f->map_len,
						  (uint64_t)st.st_size, f->next, f->nthreads);
	if (why != NULL) {
		f->torn = 1;
		fail(f, "%s", why);
		return NULL;
	}
	if (f->snap.info.layout == NT_LAYOUT_STREAM) {
		*finished = 1;
		return open_finished(f, f->fd);
	}
	/* The bytes of the copy that failed: opening and visiting them again fails again, as
	 * it did (the message is the one kept from then). */
	if (f->failed_image_set && nt_follow_snapshot_fingerprint(&f->snap) == f->failed_image) {
		f->state = NT_FOLLOW_FAILED;
		return NULL;
	}
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(f->snap.buf, f->snap.size, f->path, &err);
	if (r == NULL) {
		live_failed(f);
		fail_reader(f, &err);
	}
	return r;
}

/* One look at the file: the reader of what it holds now, collected. Returns the state. */
static int look(nt_follower *f)
{
	int alive = writer_alive(f->pid), replaced = 0, finished = 0;
	f->torn = 0;
	nt_reader *r = open_replacement(f, &replaced);
	if (replaced) {
		finished = 1;
	} else if (f->map == NULL) {
		finished = 1;
		r = open_finished(f, f->fd);
	} else {
		r = open_live(f, &finished);
	}
	if (r == NULL)
		return NT_FOLLOW_FAILED;
	nt_reader_close(f->r);
	f->r = r;
	if (collect(f, r) < 0) {
		if (f->oom)
			fail(f, "%s", "out of memory");
		else if (!finished)
			live_failed(f);
		f->state = NT_FOLLOW_FAILED;
		return NT_FOLLOW_FAILED;
	}
	if (r->info.pid != 0)
		f->pid = r->info.pid;
	/* A writer whose pid this process cannot see (another pid namespace) looks gone: it
	 * ends the follow only once a poll finds nothing new. */
	return finished ? NT_FOLLOW_FINISHED
	       : alive || f->nbatch > 0 ? NT_FOLLOW_RUNNING : NT_FOLLOW_ENDED;
}

int nt_follow_poll(nt_follower *f, const nt_reader_callbacks *cb, void *ctx)
{
	if (f == NULL || cb == NULL)
		return NT_FOLLOW_FAILED;
	if (f->state != NT_FOLLOW_RUNNING)
		return f->state;
	/* A copy can meet a header between two of the writer's stores (a count moved before
	 * the stream end it goes with): damage that a fresh copy does not show again was that.
	 * Damage that stays is the file's. A finished archive does not change, nor does a
	 * live copy that is the same bytes as the one that failed: neither is looked at again. */
	int st = NT_FOLLOW_FAILED;
	f->failed_image_set = 0;
	for (int attempt = 0; attempt < 3; attempt++) {
		f->state = NT_FOLLOW_RUNNING;
		st = look(f);
		if (st != NT_FOLLOW_FAILED || f->oom || !f->torn)
			break;
		usleep(1000);
	}
	if (st == NT_FOLLOW_FAILED) {
		f->state = st;
		return st;
	}
	int stop = deliver(f, cb, ctx);
	if (stop < 0) {
		fail(f, "%s", "out of memory");
		return f->state;
	}
	f->state = stop ? NT_FOLLOW_STOPPED : st;
	return f->state;
}

const nt_reader *nt_follow_reader(const nt_follower *f)
{
	return f ? f->r : NULL;
}

const char *nt_follow_error(const nt_follower *f)
{
	return f == NULL ? "no follower" : f->error;
}

uint64_t nt_follow_lost(const nt_follower *f)
{
	return f ? f->lost : 0;
}
