/*
 * nt_reader_ahead.c - decompresses a visit's compressed chunks ahead of it on a helper
 * thread, so that decompressing one chunk overlaps decoding the one before.
 *
 * Decompressing a CompressedChunk is a function of its bytes alone, so the helper can do it
 * early and the visit can take the result instead of calling nt_zchunk_decode itself: the
 * buffer and the answer (NULL or why it failed) are the same, so is everything the visit
 * makes of them. The helper only has to guess which chunks the visit will ask for, and in
 * what order: each *source* is one sequence the visit asks in (stream order: every
 * compressed chunk of the record stream; time order: those of one thread, as its cursor
 * scans for them), walked here the same quiet way (nt_top_record_size, nt_resync).
 *
 * A guess that is wrong costs time, never results: the visit asks for a chunk by offset,
 * entries before it are dropped, and a chunk the helper does not have is decompressed by
 * the visit itself, unless the helper is decompressing it right now: then the visit waits
 * for it, at most AHEAD_WAIT_NS. A chunk the visit does itself is one the helper skips, so
 * a helper that falls behind jumps ahead of the visit again and the two share the work.
 * The visit never waits long for a helper that gets no CPU (a busy machine) or that is
 * elsewhere (stalled: all its buffers hold chunks of other sources); and once it has
 * given up waiting more often than it took a chunk from the helper (past AHEAD_GIVE_UP),
 * it stops the helper and goes on serially. So it does when the helper runs instead of
 * it, not beside it: the two share one CPU (nt_reader_beside.h).
 *
 * Memory: at most `cap` chunks decompressed ahead (decoding, or queued in their source's
 * ring of `cap` entries) and at most `cap` spare buffers kept for reuse; the visit's own
 * buffers are swapped with the queued ones, never copied. Everything shared is under one
 * mutex, taken a few times per chunk (16 to 64 KiB of records): the helper's decompression
 * and its walks run outside it. Wake-ups are what costs (a futex each, a trip through the
 * scheduler, and in a virtual machine the wake-up of an idle CPU): a stalled helper is
 * woken only once half its chunks are taken, and the visit never sleeps: it spins,
 * watching `progress`, for the one chunk it may wait for.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "reader/common/nt_helpers.h"
#include "nt_reader_ahead.h"
#include "nt_reader_beside.h"
#include "nt_reader_spin.h"

/* Fewer compressed chunks than this are decompressed serially by default: starting a thread
 * costs about as much as decompressing a few chunks. So are those of a time-ordered merge
 * with fewer than two per thread (a bundle of short processes): the helper's pick looks at
 * every thread for each chunk, and the merge takes a thread's first chunk before it asks
 * for any other. */
#define AHEAD_MIN_CHUNKS 8

/* How long the visit waits for the chunk the helper is decompressing: a few times what a
 * 64 KiB chunk takes, when the helper has a CPU. */
#define AHEAD_WAIT_NS 100000

/* The helper is stopped when the visit has given up waiting for it more often than this
 * and than it took a chunk from it: it gets too little CPU to pay. */
#define AHEAD_GIVE_UP 32

typedef struct ahead_entry {
	uint64_t off;
	uint8_t *buf;
	const char *why;
} ahead_entry;

typedef struct ahead_queue {
	/* The helper's alone: the walk and the next chunk it found. */
	const nt_reader *r;
	uint32_t thread;
	uint64_t scan;
	int has_next;
	uint64_t next_off, next_size;
	int64_t next_key;
	/* Under the lock. */
	uint64_t skip_below; /* the visit decompressed the chunks before this itself */
	ahead_entry *ring;   /* cap entries */
	uint32_t head, count;
} ahead_queue;

struct nt_ahead {
	pthread_mutex_t lock;
	pthread_cond_t helper_cv;   /* a buffer came back, or stop */
	pthread_t thread;
	ahead_queue *q;
	uint32_t nq;
	int by_time;
	uint32_t cap, ahead; /* ahead: chunks queued or being decompressed */
	uint8_t **spare;     /* buffers for reuse, at most cap */
	uint32_t nspare;
	int stop, stalled;       /* stalled: the helper waits for buffers to come back */
	uint32_t progress;       /* atomic: bumped at every push and at the end */
	ahead_queue *busy;       /* the source and chunk the helper decompresses now */
	uint64_t busy_off;
	uint64_t hits, late;     /* chunks the visit took from the helper; waits it gave up */
	nt_beside beside;        /* the visit's: is the helper beside it (nt_reader_beside.h) */
	nt_zchunk_decoder *dec;
};

int nt_reader_set_decompress_ahead(nt_reader *r, int buffers)
{
	if (r == NULL || buffers < NT_READER_AHEAD_AUTO || buffers > NT_READER_AHEAD_MAX_BUFFERS)
		return -1;
	r->ahead_setting = buffers == NT_READER_AHEAD_AUTO ? 0 : buffers + 1;
	return 0;
}

uint32_t nt_ahead_plan(const nt_reader *r, int *forced)
{
	int n = r->ahead_setting != 0 ? r->ahead_setting - 1 : nt_helpers_env();
	*forced = n >= 0;
	if (n >= 0)
		return (uint32_t)n;
	return nt_helpers_cpus() > 1 ? NT_READER_AHEAD_BUFFERS : 0;
}

/* The source's next compressed chunk, past q->scan (skipping damage quietly, as the visit's
 * own scans do); has_next = 0 at the end. */
static void find_next(ahead_queue *q)
{
	const nt_reader *r = q->r;
	q->has_next = 0;
	while (q->scan < nt_chunks_to(r)) {
		const char *why;
		uint64_t off = q->scan, size = nt_top_record_size(r, off, &why);
		if (size == 0) {
			q->scan = nt_resync(r, off);
			continue;
		}
		q->scan = off + size;
		if (r->data[off] != NT_KIND_ZCHUNK)
			continue;
		const nt_chunk_header *h = nt_chunk_at(r, off);
		if (q->thread != NT_AHEAD_ANY_THREAD && h->thread != q->thread)
			continue;
		q->has_next = 1;
		q->next_off = off;
		q->next_size = size;
		q->next_key = nt_ticks_to_ns(r, h->base_ticks);
		return;
	}
}

/* The source whose next chunk the visit will want first (under the lock): by time, the
 * earliest start (ties to the lower source, as the merge's); else the first source with
 * one left. NULL when none is left. */
static ahead_queue *pick(nt_ahead *a)
{
	ahead_queue *best = NULL;
	for (uint32_t i = 0; i < a->nq; i++) {
		ahead_queue *q = &a->q[i];
		if (!q->has_next)
			continue;
		if (!a->by_time)
			return q;
		if (best == NULL || q->next_key < best->next_key)
			best = q;
	}
	return best;
}

/* A buffer the visit no longer needs (under the lock): kept for reuse, up to cap. */
static void give_back(nt_ahead *a, uint8_t *buf)
{
	if (buf == NULL)
		return;
	if (a->nspare < a->cap)
		a->spare[a->nspare++] = buf;
	else
		free(buf);
}

/* Waits for room to decompress one more chunk and picks it (under the lock); 0 when the
 * helper is to end (stop, or nothing left). */
static int next_job(nt_ahead *a, ahead_queue **qp, uint8_t **buf)
{
	for (;;) {
		if (!a->stop && a->ahead >= a->cap) {
			a->stalled = 1;
			while (!a->stop && a->ahead > a->cap / 2)
				pthread_cond_wait(&a->helper_cv, &a->lock);
		}
		a->stalled = 0;
		if (a->stop)
			return 0;
		ahead_queue *q = pick(a);
		if (q == NULL)
			return 0;
		if (q->next_off < q->skip_below) { /* the visit did this one itself */
			pthread_mutex_unlock(&a->lock);
			find_next(q);
			pthread_mutex_lock(&a->lock);
			continue;
		}
		a->ahead++;
		*buf = a->nspare > 0 ? a->spare[--a->nspare] : NULL;
		*qp = a->busy = q;
		a->busy_off = q->next_off;
		return 1;
	}
}

static void *helper_main(void *arg)
{
	nt_ahead *a = arg;
	for (uint32_t i = 0; i < a->nq; i++)
		find_next(&a->q[i]);
	pthread_mutex_lock(&a->lock);
	ahead_queue *q;
	uint8_t *buf;
	while (next_job(a, &q, &buf)) {
		uint64_t off = q->next_off, size = q->next_size;
		pthread_mutex_unlock(&a->lock);
		if (buf == NULL)
			buf = malloc(NT_MAX_ZCHUNK_BYTES);
		const char *why = NULL;
		if (buf != NULL)
			why = nt_zchunk_decode(a->dec, q->r->data + off, size, buf, NT_MAX_ZCHUNK_BYTES);
		pthread_mutex_lock(&a->lock);
		a->busy = NULL;
		if (buf == NULL) { /* no memory: the visit decompresses the rest itself */
			a->ahead--;
			break;
		}
		q->ring[(q->head + q->count++) % a->cap] = (ahead_entry){ off, buf, why };
		__atomic_add_fetch(&a->progress, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&a->lock);
		find_next(q);
		pthread_mutex_lock(&a->lock);
	}
	__atomic_add_fetch(&a->progress, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* The queue's first entry leaves it (under the lock); the helper may fill one more. */
static ahead_entry pop_front(nt_ahead *a, ahead_queue *q)
{
	ahead_entry e = q->ring[q->head];
	q->head = (q->head + 1) % a->cap;
	q->count--;
	if (a->ahead-- == a->cap / 2 + 1 && a->stalled) {
		a->stalled = 0; /* it goes on as soon as it runs */
		pthread_cond_signal(&a->helper_cv);
	}
	return e;
}

/* Spins (the lock released) until the helper makes progress past `seen` or `until`. */
static void spin_for_progress(nt_ahead *a, uint32_t seen, uint64_t until)
{
	pthread_mutex_unlock(&a->lock);
	for (uint32_t i = 1; __atomic_load_n(&a->progress, __ATOMIC_ACQUIRE) == seen; i++) {
		nt_spin_relax();
		if (i % 64 == 0 && nt_spin_now_ns() > until)
			break;
	}
	pthread_mutex_lock(&a->lock);
}

/* The visit decompresses the chunk at `off` itself (under the lock): the helper skips it;
 * when the visit gave up waiting for it (`late`), the helper may be stopped. */
static void miss(nt_ahead *a, ahead_queue *q, uint64_t off, int late)
{
	if (q->skip_below < off + 1)
		q->skip_below = off + 1;
	if (late && ++a->late > AHEAD_GIVE_UP && a->late > a->hits) {
		a->stop = 1;
		pthread_cond_signal(&a->helper_cv);
	}
}

int nt_ahead_take(nt_ahead *a, uint32_t queue, uint64_t off, uint8_t **buf, const char **why)
{
	ahead_queue *q = &a->q[queue];
	uint64_t until = 0;
	int instead = nt_beside_lost(&a->beside, nt_spin_now_ns());
	pthread_mutex_lock(&a->lock);
	if (instead && !a->stop) {
		a->stop = 1; /* what it holds is still taken; it decompresses no more */
		pthread_cond_signal(&a->helper_cv);
	}
	for (;;) {
		while (q->count > 0 && q->ring[q->head].off < off) /* a chunk the visit skipped */
			give_back(a, pop_front(a, q).buf);
		if (q->count > 0 && q->ring[q->head].off == off) {
			ahead_entry e = pop_front(a, q);
			give_back(a, *buf);
			*buf = e.buf;
			*why = e.why;
			a->hits++;
			pthread_mutex_unlock(&a->lock);
			return 1;
		}
		int coming = !a->stop && a->busy == q && a->busy_off == off;
		if (coming && until == 0)
			until = nt_spin_now_ns() + AHEAD_WAIT_NS;
		if (!coming || nt_spin_now_ns() > until) {
			miss(a, q, off, coming);
			pthread_mutex_unlock(&a->lock);
			return 0;
		}
		spin_for_progress(a, __atomic_load_n(&a->progress, __ATOMIC_RELAXED), until);
	}
}

static void ahead_free(nt_ahead *a)
{
	for (uint32_t i = 0; a->q != NULL && i < a->nq; i++) {
		ahead_queue *q = &a->q[i];
		for (uint32_t k = 0; q->ring != NULL && k < q->count; k++)
			free(q->ring[(q->head + k) % a->cap].buf);
		free(q->ring);
	}
	for (uint32_t i = 0; i < a->nspare; i++)
		free(a->spare[i]);
	free(a->spare);
	free(a->q);
	nt_zchunk_decoder_free(a->dec);
	pthread_cond_destroy(&a->helper_cv);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

nt_ahead *nt_ahead_start(const nt_ahead_source *src, uint32_t n, int by_time, uint32_t buffers,
			 int forced, uint64_t zchunks)
{
	if (buffers == 0 || n == 0 || zchunks == 0 ||
	    (!forced && (zchunks < AHEAD_MIN_CHUNKS || (by_time && zchunks < 2 * (uint64_t)n))))
		return NULL;
	nt_ahead *a = calloc(1, sizeof(*a));
	if (a == NULL)
		return NULL;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->helper_cv, NULL);
	a->nq = n;
	a->by_time = by_time;
	a->cap = buffers;
	a->q = calloc(n, sizeof(*a->q));
	a->spare = calloc(buffers, sizeof(*a->spare));
	a->dec = nt_zchunk_decoder_new();
	int ok = a->q != NULL && a->spare != NULL && a->dec != NULL;
	for (uint32_t i = 0; ok && i < n; i++) {
		a->q[i].r = src[i].r;
		a->q[i].thread = src[i].thread;
		a->q[i].scan = nt_chunks_from(src[i].r);
		ok = (a->q[i].ring = calloc(buffers, sizeof(ahead_entry))) != NULL;
	}
	if (!ok || pthread_create(&a->thread, NULL, helper_main, a) != 0) {
		ahead_free(a);
		return NULL;
	}
	return a;
}

void nt_ahead_stop(nt_ahead *a)
{
	if (a == NULL)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = 1;
	pthread_cond_broadcast(&a->helper_cv);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	ahead_free(a);
}
