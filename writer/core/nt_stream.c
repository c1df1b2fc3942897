/*
 * nt_stream.c - streaming mode: what the writers publish is saved as they go, and each
 * chunk's space is theirs again once saved (runtime/nt_saver_pace.h says why).
 *
 * Two ends speak the FIFO protocol of format/nt_fifo.h:
 *   provider  (a thread of this process) waits (futex) until a half generation is complete,
 *             sends SAVE_BUFFER(g) and waits for BUFFER_SAVED(g). One request is in flight
 *             at a time. Writers do not wait for it: a slot is theirs again once the saver
 *             marks its chunk saved (claim_streaming in nt_arena.c); writers that reach an
 *             unsaved chunk drop and count.
 *   manager   the saver (runtime/nt_arena_saver.c, where the protocol with the writers is
 *             written out): it answers SAVE_BUFFER by appending everything published since
 *             the last save and marking the slots it holds in full, and saves the same way
 *             unasked, every millisecond while there is something new. In-process
 *             (nt_stream_start) it is a second thread on a socketpair that appends to the
 *             archive file after the arena; remote (nt_stream_start_remote) it is the trace
 *             manager, on the FIFO it gave, saving from its own mapping of the memfd.
 * The only system calls a writer makes are the futex wakes of the claim that completes a half
 * and of a claim that finds the saver a sixteenth of the arena behind (nt_stream_nudge:
 * the provider then asks for a save early, runtime/nt_saver_pace.h);
 * with blocking on (nt_config.blocking_timeout_us), a writer that finds no free chunk may
 * also sleep on the progress word (nt_S.saved_progress), which this file bumps and wakes
 * after each save it learns of: every save of the in-process saver, every BUFFER_SAVED of a
 * remote one. The trace manager's unasked saves free slots too without telling this process
 * (its saver, manager/core/nt_mgr_saver.c, stores only the shared saved-claim words), so a
 * waiter sleeps at most NT_SAVER_POLL_MIN_MS at a time and looks again. Waiting is allowed
 * only while the threads run (block_ok): a stop or a fork() child's forget clears it and
 * wakes every waiter.
 * A remote manager is never trusted to answer: the provider waits for it only while
 * recording, and at most NT_STREAM_REMOTE_STOP_MS once a stop is asked for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/nt_arena_saver.h"
#include "format/nt_fifo.h"
#include "runtime/nt_saver_pace.h"
#include "nt_internal.h"
#include "runtime/nt_sock.h"

/* How long a stop waits for a remote manager's answers (the pending one and the final
 * SAVE_ALL together). */
#define NT_STREAM_REMOTE_STOP_MS 2000

static struct {
	pthread_t provider, manager;
	int provider_fd, manager_fd;
	int running;
	int remote;             /* the saver is the trace manager at the end of provider_fd */
	int manager_gone;       /* it closed, lied or was late at a stop: no more requests */
	int64_t stop_deadline;  /* remote: when a stop stops waiting for answers (-1: none) */
	uint32_t stop;          /* futex-woken flag for the provider */
	uint32_t nudged;        /* nt_S.nudges when the run started: a nudge made before its
				   provider thread runs is one (writers may start first) */
	nt_arena_saver *saver;  /* in-process */
	uint64_t tail;          /* end of the archive file */
	/* The first failure, which stops the saving: NT_ERR_IO (a write; failure_errno says
	 * why) or NT_ERR_NO_MEMORY. nt_finish() reports it. */
	nt_result failure;
	int failure_errno;
	int failure_closed; /* nt_finish made the archive of what was saved (stream_finish_failed) */
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

/* ---- blocking writers ---------------------------------------------------------------- */

/* After a save: waiting writers look again. The wake is skipped when none sleeps: the
 * waiter counts itself before its futex wait checks the word, and this bumps the word
 * before it reads the count (both sequentially consistent), so one of the two sees the
 * other. */
static void progress_publish(void)
{
	__atomic_fetch_add(&nt_S.saved_progress, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&nt_S.block_waiters, __ATOMIC_SEQ_CST) != 0)
		syscall(SYS_futex, &nt_S.saved_progress, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* Waiting may begin (1) or must end (0): a stop and a fork() child's forget clear it first,
 * then wake every waiter. */
static void set_block_ok(uint32_t ok)
{
	__atomic_store_n(&nt_S.block_ok, ok, __ATOMIC_SEQ_CST);
	if (!ok)
		progress_publish();
}

int nt_stream_may_wait(uint32_t tag)
{
	return __atomic_load_n(&nt_S.block_ok, __ATOMIC_ACQUIRE) &&
	       nt_load_acquire_32(&nt_session_tag_) == tag &&
	       nt_load_32(nt_header_u32(NT_HDR_SAVE_ERRNO)) == 0;
}

uint32_t nt_stream_progress(void)
{
	return __atomic_load_n(&nt_S.saved_progress, __ATOMIC_ACQUIRE);
}

void nt_stream_wait_progress(uint32_t seen, uint64_t ns)
{
	const uint64_t slice = (uint64_t)NT_SAVER_POLL_MIN_MS * 1000000u;
	if (ns > slice)
		ns = slice;
	struct timespec ts = { 0, (long)ns };
	__atomic_fetch_add(&nt_S.block_waiters, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &nt_S.saved_progress, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
	__atomic_fetch_sub(&nt_S.block_waiters, 1, __ATOMIC_SEQ_CST);
}

void nt_stream_notify_full(uint64_t generations)
{
	uint64_t cur = nt_load_64(&nt_S.full_gens);
	while (cur < generations && !nt_cas_64(&nt_S.full_gens, cur, generations))
		cur = nt_load_64(&nt_S.full_gens);
	__atomic_fetch_add(&nt_S.full_signal, 1, __ATOMIC_RELEASE);
	futex_wake(&nt_S.full_signal);
}

void nt_stream_nudge(void)
{
	__atomic_fetch_add(&nt_S.nudges, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&nt_S.full_signal, 1, __ATOMIC_RELEASE);
	futex_wake(&nt_S.full_signal);
}

/* The in-process saver's output: the archive file after the arena. */
static int append_to_file(void *ctx, const void *data, size_t len)
{
	(void)ctx;
	return nt_write_all(nt_S.fd, data, len, &st.tail);
}

/* The saved stream ends at `end`: a reader of the file (a crash now) takes all of it, and
 * finds there the events the header counts as written (a copy cut short shows as such).
 * The count follows the end: a crash between the two stores leaves it low, never high. */
static void commit_stream_end(void *ctx, uint64_t end)
{
	(void)ctx;
	nt_store_release_64(nt_header_u64(NT_HDR_STREAM_END), end);
	nt_store_release_64(nt_header_u64(NT_HDR_EVENTS_WRITTEN), nt_arena_saver_events(st.saver));
}

/* `all`: the stop's SAVE_ALL, which also cuts the records held in open chunks
 * (nt_arena_saver_save_all). */
static void save_in_process(int all)
{
	static const nt_saver_output out = { append_to_file, commit_stream_end, NULL };
	int err = all ? nt_arena_saver_save_all(st.saver, &out, NULL)
		      : nt_arena_saver_save(st.saver, &out, NULL);
	if (err != 0 && st.failure == NT_OK) {
		st.failure = err == ENOMEM ? NT_ERR_NO_MEMORY : NT_ERR_IO;
		st.failure_errno = err;
	}
	/* Saving has stopped for good: the header says why from now on, and writers that
	 * find no free chunk count their events as not saved (nt_no_chunk_reason). */
	if (err != 0)
		nt_record_save_failure(err, 0);
	progress_publish(); /* slots freed, or saving stopped: waiting writers look again */
}

/* `nonblock` for the remote manager: a full socket is a manager that is late, never a
 * reason to block. */
static int send_packet(int fd, int nonblock, uint16_t request, uint32_t data32, uint64_t data64)
{
	return nt_sock_fifo_send(fd, request, data32, data64, nonblock) == 0;
}

static int recv_packet(int fd, nt_fifo_packet *pk)
{
	return nt_sock_fifo_recv(fd, pk, 0) == (ssize_t)sizeof(*pk);
}

/* The manager: a saver of this process's own arena. Between requests it saves what the
 * writers have published, at the pace of runtime/nt_saver_pace.h, so that a request finds
 * little left to save. */
static void *manager_main(void *arg)
{
	(void)arg;
	int wait_ms = NT_SAVER_POLL_MIN_MS;
	for (;;) {
		struct pollfd p = { .fd = st.manager_fd, .events = POLLIN };
		int n = poll(&p, 1, wait_ms);
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0) {
			uint64_t before = nt_arena_saver_end(st.saver), t0 = nt_saver_now_ns();
			save_in_process(0);
			wait_ms = nt_saver_next_poll_ms(wait_ms, nt_arena_saver_end(st.saver) != before,
							nt_saver_now_ns() - t0);
			continue;
		}
		nt_fifo_packet pk;
		if (!recv_packet(st.manager_fd, &pk))
			break;
		if (pk.request == NT_FIFO_STARTED && pk.data32 != NT_FIFO_PROTOCOL_VERSION)
			break;
		if (pk.request == NT_FIFO_STOPPED)
			break;
		if (pk.request != NT_FIFO_SAVE_BUFFER)
			continue;
		uint64_t t0 = nt_saver_now_ns();
		save_in_process(pk.data32 == NT_FIFO_SAVE_ALL);
		wait_ms = nt_saver_next_poll_ms(0, 1, nt_saver_now_ns() - t0);
		if (!send_packet(st.manager_fd, 0, NT_FIFO_BUFFER_SAVED, pk.data32, pk.data64))
			break;
	}
	return NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* To the manager: never blocking when it is the remote one (a full socket is a manager
 * that is late). */
static int send_to_manager(uint16_t request, uint32_t data32, uint64_t data64)
{
	return send_packet(st.provider_fd, st.remote, request, data32, data64);
}

/* Milliseconds the provider may still wait for an answer now: without end in-process (the
 * saver is this process's own thread); from a remote manager 100 while recording (then it
 * looks again), what is left of the stop's budget once a stop is asked for, 0 when spent. */
static int answer_wait_ms(void)
{
	if (!st.remote)
		return -1;
	if (!__atomic_load_n(&st.stop, __ATOMIC_ACQUIRE))
		return 100;
	if (st.stop_deadline < 0)
		st.stop_deadline = now_ms() + NT_STREAM_REMOTE_STOP_MS;
	int64_t left = st.stop_deadline - now_ms();
	return left <= 0 ? 0 : left < 100 ? (int)left : 100;
}

/* One SAVE_BUFFER round trip. Returns 0 when the manager is gone (EOF, an error), answers
 * something else, or (remote) is still silent when a stop's budget is spent. */
static int request_save(uint32_t wraps)
{
	if (!send_to_manager(NT_FIFO_SAVE_BUFFER, wraps, nt_load_64(&nt_S.durable_head)))
		return 0;
	for (;;) {
		int wait = answer_wait_ms();
		if (wait == 0)
			return 0;
		struct pollfd p = { .fd = st.provider_fd, .events = POLLIN };
		int n = poll(&p, 1, wait);
		if (n < 0 && errno != EINTR)
			return 0;
		if (n <= 0)
			continue;
		nt_fifo_packet pk;
		ssize_t got = nt_sock_fifo_recv(st.provider_fd, &pk, 1);
		if (got == -EAGAIN)
			continue;
		return got == (ssize_t)sizeof(pk) && pk.request == NT_FIFO_BUFFER_SAVED &&
		       pk.data32 == wraps;
	}
}

/* The provider: asks for each full half to be saved. A manager that is gone stays gone for
 * this run: writers drop and count at the first unsaved chunk, as when it is late. */
static void *provider_main(void *arg)
{
	(void)arg;
	/* STARTED says "recording": it waits for the start to store the session tag (just
	 * after nt_stream_start*() returns), so an event made once a manager has seen STARTED
	 * is recorded or counted, never neither. Sent by this thread, it still goes before any
	 * SAVE_BUFFER. */
	while (nt_load_acquire_32(&nt_session_tag_) == 0 &&
	       !__atomic_load_n(&st.stop, __ATOMIC_ACQUIRE)) {
		struct timespec ts = { 0, 50000 };
		nanosleep(&ts, NULL);
	}
	st.manager_gone = !send_to_manager(NT_FIFO_STARTED, NT_FIFO_PROTOCOL_VERSION, 0);
	uint32_t nudged = st.nudged;
	for (;;) {
		uint32_t seen = __atomic_load_n(&nt_S.full_signal, __ATOMIC_ACQUIRE);
		uint64_t saved = nt_load_64(&nt_S.saved_gens);
		int full = nt_load_acquire_64(&nt_S.full_gens) > saved;
		uint32_t nudges = __atomic_load_n(&nt_S.nudges, __ATOMIC_RELAXED);
		if (!st.manager_gone && (full || nudges != nudged)) {
			/* A nudge asks early for the half being filled: the saver saves what is
			 * published, and the half is asked for again once full. */
			nudged = nudges;
			if (!request_save((uint32_t)saved)) {
				st.manager_gone = 1;
				continue;
			}
			if (full) {
				nt_add_64(nt_S.buffers_saved, 1);
				nt_store_release_64(&nt_S.saved_gens, saved + 1);
			}
			if (st.remote)
				progress_publish(); /* the manager saved: slots are free */
			continue;
		}
		if (__atomic_load_n(&st.stop, __ATOMIC_ACQUIRE))
			break;
		futex_wait(&nt_S.full_signal, seen, 100);
	}
	if (!st.manager_gone && !request_save(NT_FIFO_SAVE_ALL))
		st.manager_gone = 1;
	send_to_manager(NT_FIFO_STOPPED, 0, 0);
	return NULL;
}

/* ---- starting and stopping ----------------------------------------------------------- */

static nt_result stream_reset(int remote)
{
	nt_arena_saver_free(st.saver);
	st.saver = NULL;
	st.failure = NT_OK;
	st.failure_errno = 0;
	st.failure_closed = 0;
	st.tail = *nt_header_u64(NT_HDR_STREAM_OFFSET);
	if (!remote) {
		st.saver = nt_arena_saver_new(nt_S.map, &nt_S.layout, st.tail);
		if (st.saver == NULL) {
			nt_set_error("nt_start: out of memory for streaming");
			return NT_ERR_NO_MEMORY;
		}
		(void)nt_arena_saver_set_compression(st.saver, nt_S.compression_level, 1);
		nt_store_64(nt_header_u64(NT_HDR_STREAM_END), st.tail);
	}
	nt_S.full_gens = 0;
	nt_S.saved_gens = 0;
	return NT_OK;
}

nt_result nt_stream_start(int fresh)
{
	if (st.running)
		return NT_OK;
	/* A later run of the same buffer continues the stream, the saver's progress and the
	 * generation counts: the sequence numbers go on too. */
	if (fresh || st.saver == NULL) {
		int rc = stream_reset(0);
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
	st.remote = 0;
	st.stop_deadline = -1;
	st.manager_gone = 0; /* STARTED: provider_main */
	st.nudged = __atomic_load_n(&nt_S.nudges, __ATOMIC_RELAXED);
	if (pthread_create(&st.manager, NULL, manager_main, NULL) != 0 ||
	    pthread_create(&st.provider, NULL, provider_main, NULL) != 0) {
		nt_set_error("nt_start: cannot start the streaming threads");
		return NT_ERR_NO_MEMORY;
	}
	st.running = 1;
	set_block_ok(nt_S.block_timeout_ns != 0);
	return NT_OK;
}

nt_result nt_stream_start_remote(int fresh, int fifo_fd)
{
	if (st.running)
		return NT_OK;
	if (fifo_fd < 0) {
		nt_set_error("nt_start: streaming to the trace manager needs its FIFO (fd %d)", fifo_fd);
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (fresh) {
		int rc = stream_reset(1);
		if (rc != NT_OK)
			return rc;
	}
	st.provider_fd = fifo_fd;
	st.manager_fd = -1;
	st.stop = 0;
	st.remote = 1;
	st.stop_deadline = -1;
	/* An answer that came after the previous run gave up on it would be taken for this
	 * run's: drop what is waiting (a bounded number: one request is ever in flight). */
	nt_fifo_packet stale;
	for (int i = 0; i < 64 && nt_sock_fifo_recv(fifo_fd, &stale, 1) > 0; i++)
		;
	st.manager_gone = 0; /* STARTED: provider_main, once recording is on */
	st.nudged = __atomic_load_n(&nt_S.nudges, __ATOMIC_RELAXED);
	if (pthread_create(&st.provider, NULL, provider_main, NULL) != 0) {
		nt_set_error("nt_start: cannot start the streaming thread");
		return NT_ERR_NO_MEMORY;
	}
	st.running = 1;
	set_block_ok(nt_S.block_timeout_ns != 0);
	return NT_OK;
}

void nt_stream_stop(void)
{
	if (!st.running)
		return;
	set_block_ok(0); /* before the last save: no writer waits on a saver that is going */
	__atomic_store_n(&st.stop, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&nt_S.full_signal, 1, __ATOMIC_RELEASE);
	futex_wake(&nt_S.full_signal);
	pthread_join(st.provider, NULL);
	if (!st.remote) {
		pthread_join(st.manager, NULL);
		close(st.provider_fd);
		close(st.manager_fd);
	}
	st.running = 0;
}

void nt_stream_forget(void)
{
	/* The threads were not copied: only their socket ends were. A later session of the
	 * child starts its own. The remote FIFO is the registry's to let go of. */
	if (st.running && !st.remote) {
		close(st.provider_fd);
		close(st.manager_fd);
	}
	st.running = 0;
	/* The child's only thread: no waiter, and no saver to wait for. */
	__atomic_store_n(&nt_S.block_ok, 0, __ATOMIC_SEQ_CST);
	nt_S.block_waiters = 0;
}

/* The saver stopped on a failed write: the archive is what it saved. The file is cut at
 * the end of the last whole piece (nt_arena_saver_end; a piece cut by the failure goes),
 * which only frees blocks; the events still in the arena are counted as not saved; and the
 * header, a block the file has had since nt_start(), points at the stream in place. */
static nt_result stream_finish_failed(void)
{
	const char *why = strerror(st.failure_errno);
	if (st.failure_closed) {
		nt_set_error("nt_finish: writing the stream to '%s' failed (%s); its archive holds "
			     "what was saved before", nt_S.path, why);
		return st.failure;
	}
	st.failure_closed = 1;
	uint64_t end = nt_arena_saver_end(st.saver), saved = nt_arena_saver_events(st.saver);
	uint64_t unsaved = nt_arena_saver_unsaved_events(st.saver);
	nt_record_save_failure(st.failure_errno, unsaved);
	int cut = ftruncate(nt_S.fd, (off_t)end) == 0 ? 0 : errno;
	nt_store_64(nt_header_u64(NT_HDR_STREAM_END), end);
	*nt_header_u64(NT_HDR_DATA_OFFSET) = *nt_header_u64(NT_HDR_STREAM_OFFSET);
	*nt_header_u64(NT_HDR_EVENTS_WRITTEN) = saved;
	nt_fence_full();
	*nt_header_u8(NT_HDR_LAYOUT) = NT_LAYOUT_STREAM;
	if (cut == 0) /* before the sync, as in nt_stream_finish */
		fallocate(nt_S.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, NT_ARENA_HEADER_BYTES,
			  (off_t)(nt_S.map_size - NT_ARENA_HEADER_BYTES));
	int sync = msync(nt_S.map, NT_ARENA_HEADER_BYTES, MS_SYNC) == 0 && fdatasync(nt_S.fd) == 0
			   ? 0 : errno;
	if (cut != 0 || sync != 0)
		nt_set_error("nt_finish: writing the stream to '%s': %s; recording why in its "
			     "header failed too (%s)", nt_S.path, why, strerror(cut ? cut : sync));
	else
		nt_set_error("nt_finish: writing the stream to '%s': %s; it keeps the %" PRIu64
			     " events saved before and counts the %" PRIu64 " others as not saved",
			     nt_S.path, why, saved, nt_load_64(nt_S.dropped_unsaved));
	return st.failure;
}

nt_result nt_stream_finish(void)
{
	if (st.remote || nt_S.path == NULL) {
		nt_set_error("nt_finish: the trace manager holds this session's stream");
		return NT_ERR_STATE;
	}
	if (st.failure != NT_OK)
		return stream_finish_failed();
	/* The saved stream is the archive: the header now points at it, and the arena's
	 * blocks are given back (a hole). The stop saved every chunk, so the hole is made
	 * before the sync: every arena page is dirty (map_file_pages), and a sync first would
	 * write all of them (16 MiB by default: 2 ms -> 16-22 ms for nt_finish) only to free
	 * them after. A reader never needs them: the header it sees, in the page cache, says
	 * the stream already. */
	*nt_header_u64(NT_HDR_DATA_OFFSET) = *nt_header_u64(NT_HDR_STREAM_OFFSET);
	*nt_header_u64(NT_HDR_EVENTS_WRITTEN) = nt_arena_saver_events(st.saver);
	nt_fence_full();
	*nt_header_u8(NT_HDR_LAYOUT) = NT_LAYOUT_STREAM;
	fallocate(nt_S.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, NT_ARENA_HEADER_BYTES,
		  (off_t)(nt_S.map_size - NT_ARENA_HEADER_BYTES));
	if (msync(nt_S.map, NT_ARENA_HEADER_BYTES, MS_SYNC) != 0 || fdatasync(nt_S.fd) != 0) {
		nt_set_error("nt_finish: syncing '%s': %s", nt_S.path, strerror(errno));
		return NT_ERR_IO;
	}
	return NT_OK;
}
