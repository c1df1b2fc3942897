/*
 * nt_stream.c - streaming mode: full rolling halves are saved to the archive while the
 * writers go on in the other half.
 *
 * Two threads speak the FIFO protocol of format/nt_fifo.h over a socketpair:
 *   provider  waits (futex) until a half generation is complete, sends SAVE_BUFFER(g),
 *             waits for BUFFER_SAVED(g) and then lets writers reuse that half. One request
 *             is in flight at a time; writers that reach an unsaved half drop and count.
 *   manager   (the saver) answers SAVE_BUFFER by appending to the archive everything
 *             published since the last save: first the new durable records, then, in claim
 *             order, each chunk's new records as a chunk piece of its own (time base and
 *             event ordinal recomputed at the cut), so every piece decodes alone and each
 *             thread's pieces stay in order. A chunk still being written is saved up to its
 *             last published record and continued at the next save; its slot is reused only
 *             once it is closed and saved in full.
 * The only system call a writer makes is the futex wake of the claim that completes a half.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nt_fifo.h"
#include "nt_internal.h"

typedef struct slot_progress {
	uint64_t claim;      /* chunk being tracked (0 = none) */
	uint32_t saved;      /* payload bytes already in the archive */
	uint32_t events;     /* events among them */
	uint64_t ticks;      /* running clock at the cut */
} slot_progress;

typedef struct piece {
	uint32_t slot;
	uint64_t sequence;
} piece;

static struct {
	pthread_t provider, manager;
	int provider_fd, manager_fd;
	int running;
	uint32_t stop; /* futex-woken flag for the provider */
	slot_progress *progress;
	piece *order;
	uint32_t *used, *full;  /* per save: published bytes per slot; slots saved in full */
	uint64_t *seen;         /* per save: each slot's claim word in the first pass */
	uint64_t *block;        /* per save, by thread: oldest unsaved chunk seen too late */
	uint32_t nblock;
	uint64_t durable_saved; /* bytes of the durable region in the archive */
	uint64_t tail;          /* end of the archive file */
	uint64_t events_saved;  /* events in the saved stream: the finished archive's written */
	uint8_t *buf;           /* one chunk piece */
	/* The first failure, which stops the saving: NT_ERR_IO (a write; failure_errno says
	 * why) or NT_ERR_NO_MEMORY. nt_finish() reports it. */
	nt_result failure;
	int failure_errno;
} st;

static void futex_wake(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void futex_wait(uint32_t *word, uint32_t expected, long timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L };
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}

void nt_stream_notify_full(uint64_t generations)
{
	uint64_t cur = nt_load_64(&nt_S.full_gens);
	while (cur < generations && !nt_cas_64(&nt_S.full_gens, cur, generations))
		cur = nt_load_64(&nt_S.full_gens);
	__atomic_fetch_add(&nt_S.full_signal, 1, __ATOMIC_RELEASE);
	futex_wake(&nt_S.full_signal);
}

static void fail(nt_result code, int err)
{
	if (st.failure == NT_OK) {
		st.failure = code;
		st.failure_errno = err;
	}
}

/* Appends to the archive file; once a save has failed, nothing more is written. */
static int append(const void *data, size_t len)
{
	if (st.failure != NT_OK)
		return 0;
	int err = nt_write_all(nt_S.fd, data, len, &st.tail);
	if (err != 0)
		fail(NT_ERR_IO, err);
	return err == 0;
}

static int by_sequence(const void *a, const void *b)
{
	const piece *x = a, *y = b;
	return x->sequence < y->sequence ? -1 : x->sequence > y->sequence;
}

static int grow_block(uint32_t need)
{
	uint32_t cap = st.nblock ? st.nblock : 16;
	while (cap < need)
		cap *= 2;
	uint64_t *b = realloc(st.block, cap * sizeof(*b));
	if (b == NULL) {
		fail(NT_ERR_NO_MEMORY, ENOMEM);
		return 0;
	}
	for (uint32_t t = st.nblock; t < cap; t++)
		b[t] = UINT64_MAX;
	st.block = b;
	st.nblock = cap;
	return 1;
}

/* Walks `from` .. `to` of a chunk's payload (framed already by nt_chunk_walk), advancing
 * the running clock and event count by the format's one rule. */
static void advance(const uint8_t *payload, uint32_t from, uint32_t to, nt_chunk_clock *clock)
{
	uint64_t size;
	while (from < to &&
	       nt_record_frame(nt_record_word_at(payload + from), to - from, 0, &size) == NT_FRAME_OK) {
		nt_chunk_clock_step(clock, payload + from, size);
		from += (uint32_t)size;
	}
}

/* Step 1 of a save: which chunks this save may take. Each thread's pieces must reach the
 * file in order, and a thread publishes a chunk completely (and closes it) before it claims
 * the next. So: (a) a first pass notes every slot's chunk; (b) a second pass finds the
 * chunks that appeared since and are not saved in full: a thread with such a chunk keeps its
 * newer chunks for the next save (st.block holds, per thread, the oldest such sequence);
 * (c) the measuring pass (measure_slots) walks the rest, and anything older than a chunk
 * seen in (a) is complete by then. A slot whose chunk changed after (a) waits for the next
 * save. Returns 0 when memory runs out. */
static int find_slots(void)
{
	for (uint32_t s = 0; s < nt_S.nslots; s++)
		st.seen[s] = nt_chunk_snapshot(nt_chunk_slot(s));
	for (uint32_t t = 0; t < st.nblock; t++)
		st.block[t] = UINT64_MAX;
	for (uint32_t s = 0; s < nt_S.nslots; s++) {
		const nt_chunk_header *h = nt_chunk_slot(s);
		uint64_t claim = nt_chunk_snapshot(h);
		if (claim == 0 || (claim | 1u) == (st.seen[s] | 1u) ||
		    nt_load_64(&nt_S.saved_claim[s]) == claim)
			continue;
		uint32_t t = h->thread;
		if (t >= st.nblock && !grow_block(t + 1))
			return 0;
		if (nt_claim_sequence(claim) < st.block[t])
			st.block[t] = nt_claim_sequence(claim);
	}
	return 1;
}

/* Step 1 (c): measures the chunks this save takes. Sets st.used[s] (published payload
 * bytes), lists the slots with new records in st.order (*n) and the slots whose chunk is
 * closed and already saved in full in st.full (*nfull). Every durable record the measured
 * records use was published before them, so the durable copy that follows covers it. */
static void measure_slots(uint32_t *n, uint32_t *nfull)
{
	for (uint32_t s = 0; s < nt_S.nslots; s++) {
		const nt_chunk_header *h = nt_chunk_slot(s);
		st.used[s] = 0;
		if (st.seen[s] == 0)
			continue;
		uint64_t claim = nt_chunk_snapshot(h);
		if (claim == 0 || (claim | 1u) != (st.seen[s] | 1u))
			continue;
		if (nt_load_64(&nt_S.saved_claim[s]) == claim)
			continue; /* saved in full already: the slot may be reused right now */
		/* From here the slot cannot be reused before this save marks it saved, so its
		 * header and published records are stable. */
		if (h->thread < st.nblock && nt_claim_sequence(claim) > st.block[h->thread])
			continue; /* an older chunk of its thread is not saved yet */
		uint32_t events;
		uint32_t bytes = nt_chunk_walk(h, &events);
		slot_progress *p = &st.progress[s];
		if ((p->claim | 1u) != (claim | 1u)) { /* a new chunk in this slot */
			p->claim = claim;
			p->saved = 0;
			p->events = 0;
			p->ticks = h->base_ticks;
		}
		p->claim = claim; /* the active bit may have cleared since */
		st.used[s] = bytes;
		if (bytes > p->saved)
			st.order[(*n)++] = (piece){ s, nt_claim_sequence(claim) };
		else if (!(claim & 1u))
			st.full[(*nfull)++] = s; /* closed, and all of it saved before */
	}
}

/* Step 2: the new durable records, up to the first one not yet published. Returns the
 * durable end it covered. */
static uint64_t save_durable(void)
{
	uint64_t durable_end = st.durable_saved, size;
	while (durable_end + 8 <= nt_S.durable_size &&
	       nt_record_frame(nt_load_acquire_64((const uint64_t *)(const void *)(nt_S.durable + durable_end)),
			       nt_S.durable_size - durable_end, 0, &size) == NT_FRAME_OK)
		durable_end += size;
	append(nt_S.durable + st.durable_saved, durable_end - st.durable_saved);
	st.durable_saved = durable_end;
	return durable_end;
}

/* Step 3, for one slot: its records from what was saved to what step 1 measured, as a chunk
 * piece of its own (time base and event ordinal recomputed at the cut). The slot keeps this
 * chunk until the commit marks it saved. Returns 0 when the write failed. */
static int save_piece(uint32_t s, uint32_t *nfull)
{
	const nt_chunk_header *h = nt_chunk_slot(s);
	const uint8_t *payload = (const uint8_t *)(h + 1);
	slot_progress *p = &st.progress[s];
	uint32_t from = p->saved, to = st.used[s];
	nt_chunk_header piece_hdr;
	memset(&piece_hdr, 0, sizeof(piece_hdr));
	memcpy(st.buf + sizeof(piece_hdr), payload + from, to - from);
	piece_hdr.kind = NT_KIND_CHUNK;
	piece_hdr.slot_wrap = nt_slot_wrap(nt_claim_sequence(p->claim));
	piece_hdr.size_bytes = (uint32_t)sizeof(piece_hdr) + (to - from);
	piece_hdr.thread = h->thread;
	piece_hdr.claim = p->claim;
	piece_hdr.base_ticks = p->ticks;
	piece_hdr.first_event = h->first_event + p->events;
	nt_chunk_clock after = { p->ticks, p->events };
	advance(st.buf + sizeof(piece_hdr), 0, to - from, &after);
	piece_hdr.event_count = (uint32_t)(after.events - p->events);
	memcpy(st.buf, &piece_hdr, sizeof(piece_hdr));
	if (!append(st.buf, sizeof(piece_hdr) + (to - from)))
		return 0;
	p->ticks = after.ticks;
	p->events = (uint32_t)after.events;
	p->saved = to;
	st.events_saved += piece_hdr.event_count;
	if (!(p->claim & 1u))
		st.full[(*nfull)++] = s;
	return 1;
}

/* Everything published since the last save; returns the durable end it covered. */
static uint64_t save_everything(void)
{
	uint32_t n = 0, nfull = 0;
	/* 1. Find the chunks, then measure them. */
	if (!find_slots())
		return st.durable_saved;
	measure_slots(&n, &nfull);
	/* 2. The durable records the measured ones use. */
	uint64_t durable_end = save_durable();
	/* 3. The chunk pieces, in claim order. */
	qsort(st.order, n, sizeof(*st.order), by_sequence);
	for (uint32_t i = 0; i < n; i++)
		if (!save_piece(st.order[i].slot, &nfull))
			break;
	/* 4. Commit: the saved stream ends here (a crash after this point loses nothing that
	 *    this save wrote), and only now may writers reuse the slots it emptied. */
	if (st.failure == NT_OK) {
		nt_store_release_64(nt_header_u64(NT_HDR_STREAM_END), st.tail);
		for (uint32_t i = 0; i < nfull; i++)
			nt_store_release_64(&nt_S.saved_claim[st.full[i]], st.progress[st.full[i]].claim);
	}
	return durable_end;
}

static int send_packet(int fd, uint16_t request, uint32_t data32, uint64_t data64)
{
	nt_fifo_packet pk = { request, 0, data32, data64 };
	return send(fd, &pk, sizeof(pk), MSG_NOSIGNAL) == (ssize_t)sizeof(pk);
}

static int recv_packet(int fd, nt_fifo_packet *pk)
{
	ssize_t n;
	do
		n = recv(fd, pk, sizeof(*pk), 0);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*pk);
}

/* The manager: a saver of this process's own arena. */
static void *manager_main(void *arg)
{
	(void)arg;
	nt_fifo_packet pk;
	while (recv_packet(st.manager_fd, &pk)) {
		if (pk.request == NT_FIFO_STARTED && pk.data32 != NT_FIFO_PROTOCOL_VERSION)
			break;
		if (pk.request == NT_FIFO_STOPPED)
			break;
		if (pk.request != NT_FIFO_SAVE_BUFFER)
			continue;
		save_everything();
		nt_add_64(nt_S.buffers_saved, pk.data32 == NT_FIFO_SAVE_ALL ? 0 : 1);
		if (!send_packet(st.manager_fd, NT_FIFO_BUFFER_SAVED, pk.data32, pk.data64))
			break;
	}
	return NULL;
}

/* One SAVE_BUFFER round trip; returns 0 when the manager is gone. */
static int request_save(uint32_t wraps)
{
	nt_fifo_packet pk;
	if (!send_packet(st.provider_fd, NT_FIFO_SAVE_BUFFER, wraps, nt_load_64(&nt_S.durable_head)))
		return 0;
	return recv_packet(st.provider_fd, &pk) && pk.request == NT_FIFO_BUFFER_SAVED &&
	       pk.data32 == wraps;
}

static void *provider_main(void *arg)
{
	(void)arg;
	send_packet(st.provider_fd, NT_FIFO_STARTED, NT_FIFO_PROTOCOL_VERSION, 0);
	for (;;) {
		uint32_t seen = __atomic_load_n(&nt_S.full_signal, __ATOMIC_ACQUIRE);
		uint64_t saved = nt_load_64(&nt_S.saved_gens);
		if (nt_load_acquire_64(&nt_S.full_gens) > saved) {
			if (!request_save((uint32_t)saved))
				break;
			nt_store_release_64(&nt_S.saved_gens, saved + 1);
			continue;
		}
		if (__atomic_load_n(&st.stop, __ATOMIC_ACQUIRE))
			break;
		futex_wait(&nt_S.full_signal, seen, 100);
	}
	request_save(NT_FIFO_SAVE_ALL);
	send_packet(st.provider_fd, NT_FIFO_STOPPED, 0, 0);
	return NULL;
}

static int stream_alloc(void)
{
	free(st.progress);
	free(st.order);
	free(st.buf);
	free(st.used);
	free(st.full);
	free(st.seen);
	st.seen = calloc(nt_S.nslots, sizeof(*st.seen));
	st.progress = calloc(nt_S.nslots, sizeof(*st.progress));
	st.order = calloc(nt_S.nslots, sizeof(*st.order));
	st.used = calloc(nt_S.nslots, sizeof(*st.used));
	st.full = calloc(nt_S.nslots, sizeof(*st.full));
	st.buf = malloc(nt_S.chunk_size);
	free(nt_S.saved_claim);
	nt_S.saved_claim = calloc(nt_S.nslots, sizeof(uint64_t));
	if (!st.progress || !st.order || !st.used || !st.full || !st.seen || !st.buf ||
	    !nt_S.saved_claim) {
		nt_set_error("nt_start: out of memory for streaming");
		return NT_ERR_NO_MEMORY;
	}
	st.failure = NT_OK;
	st.failure_errno = 0;
	st.durable_saved = 0;
	st.events_saved = 0;
	st.tail = *nt_header_u64(NT_HDR_STREAM_OFFSET);
	nt_store_64(nt_header_u64(NT_HDR_STREAM_END), st.tail);
	nt_S.full_gens = 0;
	nt_S.saved_gens = 0;
	return NT_OK;
}

int nt_stream_start(int fresh)
{
	if (st.running)
		return NT_OK;
	/* A later run of the same buffer continues the stream, the saver's progress and the
	 * generation counts: the sequence numbers go on too. */
	if (fresh) {
		int rc = stream_alloc();
		if (rc != NT_OK)
			return rc;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		nt_set_error("nt_start: cannot create the streaming socketpair: %s", strerror(errno));
		return NT_ERR_IO;
	}
	st.provider_fd = sv[0];
	st.manager_fd = sv[1];
	st.stop = 0;
	if (pthread_create(&st.manager, NULL, manager_main, NULL) != 0 ||
	    pthread_create(&st.provider, NULL, provider_main, NULL) != 0) {
		nt_set_error("nt_start: cannot start the streaming threads");
		return NT_ERR_NO_MEMORY;
	}
	st.running = 1;
	return NT_OK;
}

void nt_stream_stop(void)
{
	if (!st.running)
		return;
	__atomic_store_n(&st.stop, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&nt_S.full_signal, 1, __ATOMIC_RELEASE);
	futex_wake(&nt_S.full_signal);
	pthread_join(st.provider, NULL);
	pthread_join(st.manager, NULL);
	close(st.provider_fd);
	close(st.manager_fd);
	st.running = 0;
}

void nt_stream_forget(void)
{
	/* The threads were not copied: only their socket ends were. A later session of the
	 * child starts its own. */
	if (st.running) {
		close(st.provider_fd);
		close(st.manager_fd);
	}
	st.running = 0;
}

nt_result nt_stream_finish(void)
{
	if (st.failure != NT_OK) {
		nt_set_error("nt_finish: writing the stream to '%s': %s", nt_S.path,
			     strerror(st.failure_errno));
		return st.failure;
	}
	/* The saved stream is the archive: the header now points at it, and the arena's
	 * blocks are given back (a hole). */
	*nt_header_u64(NT_HDR_DATA_OFFSET) = *nt_header_u64(NT_HDR_STREAM_OFFSET);
	*nt_header_u64(NT_HDR_EVENTS_WRITTEN) = st.events_saved;
	nt_fence_full();
	*nt_header_u8(NT_HDR_LAYOUT) = NT_LAYOUT_STREAM;
	if (msync(nt_S.map, NT_ARENA_HEADER_BYTES, MS_SYNC) != 0 || fdatasync(nt_S.fd) != 0) {
		nt_set_error("nt_finish: syncing '%s': %s", nt_S.path, strerror(errno));
		return NT_ERR_IO;
	}
	fallocate(nt_S.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, NT_ARENA_HEADER_BYTES,
		  (off_t)(nt_S.map_size - NT_ARENA_HEADER_BYTES));
	return NT_OK;
}
