/*
 * nt_reader_pipe.c - a helper thread doing a sequence of jobs ahead of the one thread that
 * needs their results in order: a bundle's sections opened again, and their chunks
 * decompressed, ahead of a visit that reads them one after the other.
 *
 * Why a second mechanism beside nt_reader_ahead.c: that one decompresses the chunks of
 * readers that are open; a bundle of thousands of short processes has one chunk a section,
 * and most of the cost of each is opening the section again, which needs its reader first.
 * Jobs take about a microsecond, so the protocol takes no lock: a mutex taken a few times a
 * job was a tenth of the consumer's time (its cache line going back and forth).
 *
 * The protocol. Job i has slot i % window, whose word holds a job and its state, changed
 * atomically (acquire/release: a result is written before READY is published, and read
 * after; a slot is FREE only once its last result is no longer read):
 *   - The helper claims job i = `next` when its slot is FREE: it moves `next` to i + 1 (a
 *     compare-and-swap), then publishes (i, BUSY) over the FREE word it saw, does the job
 *     and moves the slot to (i, READY). Where the consumer abandoned the job first, it
 *     skips it, or drops its result, and frees the slot.
 *   - The consumer asking for job i moves `next` past i when the helper has not claimed it
 *     (then the helper never does it) and does it itself. When the helper has, it waits
 *     while the job is not READY, at most PIPE_WAIT_NS, then abandons it (the slot's word,
 *     BUSY or the FREE one not yet replaced, to (i, ABANDONED)) and does the job itself.
 *   - Results of jobs the consumer skipped (it asked for a later one) are dropped by it,
 *     or by the helper when it finds one in the slot it needs (a compare-and-swap decides
 *     which of the two drops it).
 *   - The helper, its window full, naps until the slot it needs is free (wait_for_slot):
 *     the consumer never wakes it, so it never makes a system call for it.
 *   - The helper is stopped when the consumer abandoned more than PIPE_GIVE_UP jobs and
 *     more than it took: it gets too little CPU to pay.
 *   - The helper is stopped when it runs instead of the consumer, not beside it: the two
 *     share one CPU (nt_reader_beside.h). Its results still come in time then, but every
 *     nap's end takes the CPU from the consumer.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include "nt_reader_beside.h"
#include "nt_reader_pipe.h"
#include "nt_reader_spin.h"

#define PIPE_WAIT_NS 100000
#define PIPE_NAP_MIN_NS 20000
#define PIPE_NAP_MAX_NS 1000000
#define PIPE_GIVE_UP 32
#define PIPE_MAX_WINDOW 256
#define PIPE_CHECK_EVERY 64 /* jobs: a clock read each (check_beside) */

enum { SLOT_FREE, SLOT_BUSY, SLOT_READY, SLOT_TAKEN, SLOT_ABANDONED };

/* A slot's word: its job << 8 | its state. Each on its own cache line: the helper writes
 * one while the consumer reads another. */
typedef struct pipe_slot {
	uint64_t word;
	char pad[64 - sizeof(uint64_t)];
} pipe_slot;

#define WORD(job, state) ((uint64_t)(job) << 8 | (uint64_t)(state))
#define STATE(w) ((int)((w) & 0xff))
#define JOB(w) ((uint32_t)((w) >> 8))

struct nt_pipe {
	pipe_slot *slot; /* window, aligned */
	void *slot_mem;
	unsigned char *payload; /* window * slot_size */
	const nt_pipe_ops *ops;
	void *ctx;
	uint32_t n, window;
	size_t slot_size;
	pthread_t thread;
	uint32_t asked_own, hits, late; /* the consumer's */
	nt_beside beside;               /* the consumer's */
	uint32_t asks;                  /* the consumer's: jobs asked for */
	char pad0[64];
	uint32_t asked;   /* atomic: the job the consumer asked for last */
	uint32_t next;    /* atomic: the next job the helper may claim */
	int stop;         /* atomic */
};

static void *payload_of(nt_pipe *p, uint32_t i)
{
	return p->payload + (size_t)(i % p->window) * p->slot_size;
}

static uint64_t load(const pipe_slot *s)
{
	return __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
}

/* The helper, its window full, naps until the slot it needs is free (or stop): from
 * PIPE_NAP_MIN_NS, doubling to PIPE_NAP_MAX_NS while the consumer does not move (a
 * consumer paused for long costs the helper a thousand wake-ups a second). Why not a
 * condition variable the consumer signals, as until 2026-11-28: each signal to a waiting
 * helper was a futex call on the consumer's thread, 10 to 12 us on a 2-core AMD guest
 * (its wake-up of the other CPU; rdtsc around nt_pipe_done: 168 to 199 of them, 2 ms, in
 * a --stats of 20,000 sections), and a signal to a helper not yet running again was
 * another (up to 9,900 signals for 33 waits); a nap costs the helper's CPU only. The
 * --stats took the same time on a quiet guest, 2 to 5 % less while its two CPUs
 * contended. Nor spinning: on a machine whose two CPUs are one core's hyperthreads, a
 * spinning helper slows the consumer down. The helper's timer slack is 1 us, so that its
 * first nap is about what the consumer takes of its window (a microsecond a job), not the
 * default 50 us more. */
static void wait_for_slot(nt_pipe *p, const pipe_slot *s)
{
	long nap = PIPE_NAP_MIN_NS;
	while (STATE(__atomic_load_n(&s->word, __ATOMIC_ACQUIRE)) != SLOT_FREE &&
	       !__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
		struct timespec ts = { 0, nap };
		nanosleep(&ts, NULL);
		nap = nap * 2 < PIPE_NAP_MAX_NS ? nap * 2 : PIPE_NAP_MAX_NS;
	}
}

static int drop_stale(nt_pipe *p, pipe_slot *s, uint64_t w, uint32_t asked);

static void *helper_main(void *arg)
{
	nt_pipe *p = arg;
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	for (;;) {
		uint32_t i = __atomic_load_n(&p->next, __ATOMIC_ACQUIRE);
		if (i >= p->n || __atomic_load_n(&p->stop, __ATOMIC_RELAXED))
			break;
		pipe_slot *s = &p->slot[i % p->window];
		uint64_t free_word = load(s);
		if (STATE(free_word) != SLOT_FREE) {
			if (!drop_stale(p, s, free_word, __atomic_load_n(&p->asked, __ATOMIC_ACQUIRE)))
				wait_for_slot(p, s);
			continue;
		}
		if (!__atomic_compare_exchange_n(&p->next, &i, i + 1, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			continue; /* the consumer moved it */
		if (!__atomic_compare_exchange_n(&s->word, &free_word, WORD(i, SLOT_BUSY), 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			/* abandoned before it began: the consumer waited for this thread to run */
			__atomic_store_n(&s->word, WORD(i, SLOT_FREE), __ATOMIC_RELEASE);
			continue;
		}
		p->ops->run(p->ctx, i, payload_of(p, i));
		uint64_t busy = WORD(i, SLOT_BUSY);
		if (!__atomic_compare_exchange_n(&s->word, &busy, WORD(i, SLOT_READY), 0,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			p->ops->drop(p->ctx, payload_of(p, i)); /* abandoned */
			__atomic_store_n(&s->word, WORD(i, SLOT_FREE), __ATOMIC_RELEASE);
		}
	}
	return NULL;
}

static void pipe_free(nt_pipe *p)
{
	for (uint32_t k = 0; p->payload != NULL && k < p->window; k++)
		p->ops->free_slot(p->ctx, p->payload + (size_t)k * p->slot_size);
	free(p->payload);
	free(p->slot_mem);
	free(p);
}

nt_pipe *nt_pipe_start(const nt_pipe_ops *ops, void *ctx, uint32_t n, uint32_t window,
		       size_t slot_size)
{
	if (n == 0 || window < 2 || window > PIPE_MAX_WINDOW || slot_size == 0)
		return NULL;
	nt_pipe *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->ops = ops;
	p->ctx = ctx;
	p->n = n;
	p->window = window;
	p->slot_size = slot_size;
	p->payload = calloc(window, slot_size);
	if ((p->slot_mem = calloc(window + 1, sizeof(pipe_slot))) != NULL)
		p->slot = (pipe_slot *)(((uintptr_t)p->slot_mem + 63) & ~(uintptr_t)63);
	for (uint32_t k = 0; p->slot != NULL && k < window; k++)
		p->slot[k].word = WORD(0, SLOT_FREE);
	if (p->slot == NULL || p->payload == NULL ||
	    pthread_create(&p->thread, NULL, helper_main, p) != 0) {
		pipe_free(p);
		return NULL;
	}
	return p;
}

/* The result of a job before `asked` (the consumer asks in increasing order: it never takes
 * it), dropped by whichever of the two claims it first; 0 when the word is not that or
 * changed. */
static int drop_stale(nt_pipe *p, pipe_slot *s, uint64_t w, uint32_t asked)
{
	if (STATE(w) != SLOT_READY || JOB(w) >= asked ||
	    !__atomic_compare_exchange_n(&s->word, &w, WORD(JOB(w), SLOT_TAKEN), 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	p->ops->drop(p->ctx, payload_of(p, JOB(w)));
	__atomic_store_n(&s->word, WORD(JOB(w), SLOT_FREE), __ATOMIC_RELEASE);
	return 1;
}

/* Results of jobs after the last one asked for and before i, which the consumer skipped
 * (one still being done now is dropped by the helper when it needs the slot again: every
 * job before `asked`, the one being asked for now, is one the consumer will not take). */
static void drop_skipped(nt_pipe *p, uint32_t i)
{
	uint32_t from = p->asked_own, n = i - from < p->window ? i - from : p->window;
	p->asked_own = i + 1;
	__atomic_store_n(&p->asked, i, __ATOMIC_RELEASE);
	for (uint32_t k = 0; k < n; k++) {
		pipe_slot *s = &p->slot[(from + k) % p->window];
		(void)drop_stale(p, s, load(s), i);
	}
}

/* Every PIPE_CHECK_EVERY jobs asked for, whether the helper runs beside the consumer
 * (nt_reader_beside.h); when it does not, it is stopped. */
static void check_beside(nt_pipe *p)
{
	if (p->asks++ % PIPE_CHECK_EVERY == 0 && nt_beside_lost(&p->beside, nt_spin_now_ns()))
		__atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
}

/* Did the helper claim job i? If not, it never will. */
static int claimed(nt_pipe *p, uint32_t i)
{
	uint32_t next = __atomic_load_n(&p->next, __ATOMIC_ACQUIRE);
	while (next <= i)
		if (__atomic_compare_exchange_n(&p->next, &next, i + 1, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return 0;
	return 1;
}

/* Gives job i up (its slot's word was `w`): the helper, busy with it or about to begin it,
 * drops it. 0 when the word changed first (the job is READY now, or just began). */
static int abandon(nt_pipe *p, pipe_slot *s, uint64_t w, uint32_t i)
{
	if (!(STATE(w) == SLOT_BUSY && JOB(w) == i) && STATE(w) != SLOT_FREE)
		return 0;
	if (!__atomic_compare_exchange_n(&s->word, &w, WORD(i, SLOT_ABANDONED), 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	if (++p->late > PIPE_GIVE_UP && p->late > p->hits)
		__atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
	return 1;
}

void *nt_pipe_take(nt_pipe *p, uint32_t i)
{
	if (p == NULL)
		return NULL;
	drop_skipped(p, i);
	check_beside(p);
	if (!claimed(p, i))
		return NULL;
	pipe_slot *s = &p->slot[i % p->window];
	uint64_t until = 0;
	for (uint32_t k = 1;; k++) {
		uint64_t w = load(s);
		if (JOB(w) == i && STATE(w) == SLOT_READY)
			break;
		if (k % 64 == 0) {
			uint64_t t = nt_spin_now_ns();
			if (until == 0)
				until = t + PIPE_WAIT_NS;
			else if (t > until && abandon(p, s, w, i))
				return NULL;
		}
		nt_spin_relax();
	}
	__atomic_store_n(&s->word, WORD(i, SLOT_TAKEN), __ATOMIC_RELAXED);
	p->hits++;
	return payload_of(p, i);
}

void nt_pipe_done(nt_pipe *p, uint32_t i)
{
	if (p == NULL)
		return;
	pipe_slot *s = &p->slot[i % p->window];
	if (load(s) != WORD(i, SLOT_TAKEN))
		return;
	__atomic_store_n(&s->word, WORD(i, SLOT_FREE), __ATOMIC_RELEASE);
}

void nt_pipe_stop(nt_pipe *p)
{
	if (p == NULL)
		return;
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
	/* (within its job, or its nap: at most PIPE_NAP_MAX_NS) */
	pthread_join(p->thread, NULL);
	for (uint32_t k = 0; k < p->window; k++) {
		int state = STATE(p->slot[k].word);
		if (state == SLOT_READY || state == SLOT_TAKEN)
			p->ops->drop(p->ctx, p->payload + (size_t)k * p->slot_size);
	}
	pipe_free(p);
}
