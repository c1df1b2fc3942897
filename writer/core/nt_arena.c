/*
 * nt_arena.c - the arena: its mapping, durable reservations, chunk claims and closes.
 *
 * Chunk ownership protocol (circular mode must survive a slow writer):
 *   claim   seq = faa(next_seq, 1); slot = seq % nslots; CAS the slot's claim word from
 *           "closed by an older sequence" (or 0, never used) to ((seq + 1) << 1 | 1).
 *           Only the CAS winner touches the slot. A slot whose writer is still active (low
 *           bit set) is skipped, not overwritten: a slow thread keeps its chunk and the
 *           claimer moves on to the next sequence number.
 *   fill    the owner appends records with plain stores, each published by its first word.
 *   close   the owner stores event_count, then the claim word with the low bit cleared
 *           (release). Only then can a later claim reuse the slot. Oneshot and circular
 *           then add event_count to the header's events_written: a reader of a cut copy
 *           compares it with the closed chunks it finds (the count may lag, never lead).
 * In oneshot mode slots are never reused, so the fetch-and-add alone claims a slot.
 *
 * Overwrite accounting (circular mode) must be exact in a file a SIGKILL can cut at any
 * instruction, so it is kept per slot, in one word the claimer changes in single stores
 * (format/: bits 0..62 the slot's overwritten events, bit 63 "the chunk now here is counted"):
 *   1. CAS the claim word (above): the old chunk still decodes and is not counted;
 *   2. store count + old chunk's events | COUNTED: still intact, but counted, so a reader
 *      skips it;
 *   3. invalidate the header's first word: nothing of the old chunk decodes;
 *   4. store the count without COUNTED, then publish the new chunk.
 * At every point between two stores a reader of the file sees each event once: decoded, or
 * in the sum of the slot words. The header's events_overwritten is kept too (added at 2),
 * for nt_get_stats and finished archives; a reader of a live arena uses the slot words.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nt_internal.h"
#include "runtime/nt_saver_pace.h"

/* The name a file-backed arena has until nt_arena_publish() renames it into place. */
static char *pending_name;

static void arena_unmap(void)
{
	if (pending_name != NULL)
		unlink(pending_name); /* never published: nobody else can know the random name */
	free(pending_name);
	pending_name = NULL;
	if (nt_S.fd >= 0)
		close(nt_S.fd);
	nt_S.fd = -1;
	if (nt_S.map != NULL)
		munmap(nt_S.map, nt_S.map_size);
	nt_S.map = NULL;
	nt_S.map_size = 0;
	nt_S.file_backed = 0;
	nt_S.manager_buffer = 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* The first this many bytes of a file-backed arena are faulted in writable at nt_start (see
 * map_file_pages): every default arena whole. Dirtying more would have the kernel start
 * writing an arena of gigabytes (zeros) back while nt_start waits on it. */
#define NT_ARENA_WRITE_PREFAULT_MAX (64u << 20)

/* Maps the arena's file with its pages present, and writable up to
 * NT_ARENA_WRITE_PREFAULT_MAX. MAP_POPULATE maps a shared file's pages read-only, so the
 * kernel learns which get dirty: the writer's first store to each 4 KiB page then took a
 * write fault (ext4's page_mkwrite), about 2 us, or 2 ns an event of 4 bytes (begin/end in
 * a file-backed oneshot arena: 11.4-16.6 ns an event against 9.5-9.9 in an anonymous one,
 * 3,916 faults in 4 M events; streaming beside oneshot, `nt_bench_peers --part disk`: the
 * writer at 1.21-1.34x oneshot's ns/event, 1.00-1.06x with this). The cost moves to
 * nt_start(), once: about 0.3 ms a MiB. The pages are then dirty: the kernel writes a page
 * back once it has been dirty 30 s (a long session's whole arena, as its used pages were
 * before) and maps it read-only again, so a page written back takes the fault once more;
 * a successful nt_finish() throws them away (nt_arena_discard, and streaming's hole)
 * instead of having them written. Where MADV_POPULATE_WRITE is refused (a kernel before
 * 5.14, a sandbox) the pages are read-populated as before. EFAULT (a file system that
 * could not give a page its block: a sparse file on a full disk) fails, as ENOSPC: it would
 * have been a SIGBUS on the event path. Returns MAP_FAILED with errno set. */
static void *map_file_pages(int fd, size_t size)
{
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	size_t writable = size < NT_ARENA_WRITE_PREFAULT_MAX ? size : NT_ARENA_WRITE_PREFAULT_MAX;
	if (m != MAP_FAILED && madvise(m, writable, MADV_POPULATE_WRITE) != 0 &&
	    (errno == EFAULT || errno == ENOMEM)) {
		int err = errno == EFAULT ? ENOSPC : errno;
		munmap(m, size);
		errno = err;
		return MAP_FAILED;
	}
	return m;
}

void nt_arena_discard(void)
{
	if (!nt_S.file_backed || nt_S.manager_buffer || nt_S.map == NULL)
		return;
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t from = ((size_t)nt_S.layout.rolling_offset + page - 1) / page * page;
	if (from < nt_S.map_size)
		madvise(nt_S.map + from, nt_S.map_size - from, MADV_REMOVE);
}

static nt_result map_file(const char *path, size_t size)
{
	if (strlen(path) > 4096) {
		nt_set_error("nt_start: path is longer than 4096 bytes");
		return NT_ERR_INVALID_ARGUMENT;
	}
	char *tmp;
	int fd = nt_create_beside(path, &tmp);
	if (fd < 0) {
		nt_set_error("nt_start: cannot create a file beside '%s': %s", path, strerror(errno));
		return NT_ERR_IO;
	}
	/* posix_fallocate reserves the blocks now, so a full disk fails here and not as a
	 * SIGBUS on some later event. */
	int err = posix_fallocate(fd, 0, (off_t)size);
	if (err == EOPNOTSUPP || err == EINVAL)
		err = ftruncate(fd, (off_t)size) == 0 ? 0 : errno;
	void *m = err ? MAP_FAILED : map_file_pages(fd, size);
	if (m == MAP_FAILED) {
		if (!err)
			err = errno;
		nt_set_error("nt_start: cannot size or map '%s' (%zu bytes): %s", tmp, size,
			     strerror(err));
		close(fd);
		unlink(tmp);
		free(tmp);
		return NT_ERR_IO;
	}
	/* A fork() child never shares the parent's file through this mapping, even one that
	 * skips the atfork handlers (see nt_arena_forget). */
	madvise(m, size, MADV_DONTFORK);
	if (nt_S.mode == NT_MODE_STREAMING)
		nt_S.fd = fd; /* the saver appends the saved stream after the arena */
	else
		close(fd); /* the mapping keeps the file */
	pending_name = tmp;
	nt_S.map = m;
	nt_S.map_size = size;
	nt_S.file_backed = 1;
	return NT_OK;
}

void nt_arena_forget(void)
{
	if (nt_S.fd >= 0)
		close(nt_S.fd);
	nt_S.fd = -1;
	free(nt_S.path);
	nt_S.path = NULL;
	if (!nt_S.file_backed || nt_S.map == NULL)
		return; /* an anonymous arena is the child's own copy already */
	/* MADV_DONTFORK left the range unmapped here. Private zero pages in its place give a
	 * pointer the forking thread still holds (its chunk, the header counters) harmless
	 * memory. */
	if (mmap(nt_S.map, nt_S.map_size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		nt_S.map = NULL; /* nothing to unmap; stats read as never started */
		nt_S.map_size = 0;
		nt_S.events_dropped = NULL;
	}
}

/* The layout of an arena of these sizes (format/nt_arena_layout.h), or a message naming
 * the refused size, from `who`. */
static nt_result layout_for(const char *who, size_t buffer_size, size_t chunk_size, nt_arena_layout *L)
{
	switch (nt_arena_layout_compute(buffer_size, chunk_size, L)) {
	case NT_LAYOUT_OK:
		return NT_OK;
	case NT_LAYOUT_BAD_BUFFER_SIZE:
		nt_set_error("%s: buffer_size %zu is out of range [%u, %llu]", who, buffer_size,
			     NT_MIN_BUFFER, (unsigned long long)NT_MAX_BUFFER);
		break;
	case NT_LAYOUT_BAD_CHUNK_SIZE:
		nt_set_error("%s: chunk_size %zu must be a power of two in [%u, %u]", who,
			     chunk_size, NT_MIN_CHUNK, NT_MAX_CHUNK);
		break;
	default:
		nt_set_error("%s: buffer_size %zu holds fewer than 2 chunks of %zu bytes per "
			     "rolling half; use a larger buffer or smaller chunks",
			     who, buffer_size, chunk_size);
		break;
	}
	return NT_ERR_INVALID_ARGUMENT;
}

/* Points the session at the parts of the mapped arena. */
static void arena_adopt(const nt_arena_layout *L, int mode)
{
	nt_S.layout = *L;
	nt_S.durable = nt_S.map + L->durable_offset;
	nt_S.durable_size = L->durable_size;
	nt_S.rolling = nt_S.map + L->rolling_offset;
	nt_S.chunk_size = L->chunk_size;
	nt_S.chunks_per_half = L->chunks_per_half;
	nt_S.nslots = L->nslots;
	nt_S.slot_overwritten = (uint64_t *)(void *)(nt_S.map + L->slot_overwritten_offset);
	nt_S.saved_claim = (uint64_t *)(void *)(nt_S.map + L->saved_claim_offset);
	nt_S.mode = mode;
	nt_S.next_seq = 0;
	nt_S.rolling_full = 0;
	nt_S.durable_head = 0;
}

nt_result nt_arena_map(size_t buffer_size, size_t chunk_size, int mode, const char *path)
{
	nt_arena_layout L;
	int rc = layout_for("nt_start", buffer_size, chunk_size, &L);
	if (rc != NT_OK)
		return rc;
	size_t size = (size_t)L.map_size;

	if (path != NULL) {
		arena_unmap();
		nt_S.mode = mode;
		rc = map_file(path, size);
		if (rc != NT_OK)
			return rc;
	} else if (nt_S.map == NULL || nt_S.file_backed || nt_S.map_size != size) {
		arena_unmap();
		/* MAP_POPULATE pre-faults the arena: a first-touch page fault on the hot path
		 * costs several times the event itself. */
		void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (m == MAP_FAILED) {
			nt_set_error("nt_start: cannot map a %zu-byte arena: %s", size,
				     strerror(errno));
			return NT_ERR_NO_MEMORY;
		}
		nt_S.map = m;
		nt_S.map_size = size;
	} else {
		memset(nt_S.map, 0, size);
	}
	free(nt_S.path);
	nt_S.path = path ? strdup(path) : NULL;
	if (path != NULL && nt_S.path == NULL) {
		nt_set_error("nt_start: out of memory");
		return NT_ERR_NO_MEMORY;
	}
	arena_adopt(&L, mode);
	return NT_OK;
}

typedef struct prefault_range {
	void *addr;
	size_t len;
} prefault_range;

/* Faults the buffer in off the caller's path. The range stays mapped however the session
 * ends (a TERMINATE replaces it with zero pages), so a late prefault touches nothing else;
 * a kernel without MADV_POPULATE_WRITE leaves the faults to the first events. */
static void *prefault_main(void *arg)
{
	prefault_range r = *(prefault_range *)arg;
	free(arg);
	madvise(r.addr, r.len, MADV_POPULATE_WRITE);
	return NULL;
}

/* MAP_POPULATE is what keeps page faults off the event path, but it costs the whole buffer
 * before the mapping returns: in a fork() child, which registers before fork() returns,
 * that would be paid by every fork, exec()ing ones included. There a thread faults it in. */
static void prefault_in_background(void *m, size_t len, int lazily)
{
	if (!lazily)
		return;
	prefault_range *r = malloc(sizeof(*r));
	pthread_attr_t attr;
	pthread_t t;
	if (r == NULL || pthread_attr_init(&attr) != 0) {
		free(r);
		return;
	}
	*r = (prefault_range){ m, len };
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, prefault_main, r) != 0)
		free(r);
	pthread_attr_destroy(&attr);
}

nt_result nt_arena_map_fd(int fd, size_t buffer_size, size_t chunk_size, int mode)
{
	nt_arena_layout L;
	int rc = layout_for("the trace manager's buffer", buffer_size, chunk_size, &L);
	if (rc != NT_OK)
		return rc;
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		nt_set_error("the trace manager's buffer (fd %d): fstat: %s", fd, strerror(errno));
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size != L.map_size) {
		nt_set_error("the trace manager's buffer (fd %d) is %s of %lld bytes; buffer_size "
			     "%zu with chunk_size %u needs exactly %llu",
			     fd, S_ISREG(sb.st_mode) ? "a file" : "not a regular file or memfd",
			     (long long)sb.st_size, buffer_size, L.chunk_size,
			     (unsigned long long)L.map_size);
		return NT_ERR_INVALID_ARGUMENT;
	}
	int lazily = nt_S.map_lazily;
	void *m = mmap(NULL, (size_t)L.map_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | (lazily ? 0 : MAP_POPULATE), fd, 0);
	if (m == MAP_FAILED) {
		nt_set_error("the trace manager's buffer (fd %d, %llu bytes) cannot be mapped: %s",
			     fd, (unsigned long long)L.map_size, strerror(errno));
		return NT_ERR_IO;
	}
	arena_unmap();
	/* A fork() child never writes into the manager's buffer (see nt_arena_forget). */
	madvise(m, (size_t)L.map_size, MADV_DONTFORK);
	prefault_in_background(m, (size_t)L.map_size, lazily);
	nt_S.map = m;
	nt_S.map_size = (size_t)L.map_size;
	nt_S.fd = fd;
	nt_S.file_backed = 1;
	nt_S.manager_buffer = 1;
	free(nt_S.path);
	nt_S.path = NULL;
	arena_adopt(&L, mode);
	return NT_OK;
}

nt_result nt_arena_publish(nt_archive_info *info)
{
	info->layout = NT_LAYOUT_ARENA;
	info->data_offset = NT_ARENA_HEADER_BYTES;
	info->arena_size = nt_S.map_size;
	info->durable_size = nt_S.durable_size;
	info->chunk_size = nt_S.chunk_size;
	info->chunks_per_half = nt_S.chunks_per_half;
	info->buffering_mode = (uint8_t)nt_S.mode;
	info->stream_offset = nt_S.mode == NT_MODE_STREAMING ? nt_S.map_size : 0;
	info->slot_overwritten_offset = nt_S.layout.slot_overwritten_offset;
	info->stream_end = info->stream_offset;
	if (nt_header_encode(info, nt_S.map, NT_ARENA_HEADER_BYTES, nt_S.hdr_field) == 0) {
		nt_set_error("nt_start: the archive header does not fit %u bytes",
			     NT_ARENA_HEADER_BYTES);
		return NT_ERR_INVALID_ARGUMENT;
	}
	nt_S.dropped_rolling_full = nt_header_u64(NT_HDR_DROPPED_ROLLING_FULL);
	nt_S.dropped_durable_full = nt_header_u64(NT_HDR_DROPPED_DURABLE_FULL);
	nt_S.dropped_stopped = nt_header_u64(NT_HDR_DROPPED_STOPPED);
	nt_S.dropped_unsaved = nt_header_u64(NT_HDR_DROPPED_UNSAVED);
	nt_S.events_overwritten = nt_header_u64(NT_HDR_EVENTS_OVERWRITTEN);
	nt_S.wraps = nt_header_u64(NT_HDR_WRAPS);
	nt_S.durable_dropped = nt_header_u64(NT_HDR_DURABLE_DROPPED);
	nt_S.values_truncated = nt_header_u64(NT_HDR_VALUES_TRUNCATED);
	nt_S.chunks_claimed = nt_header_u64(NT_HDR_CHUNKS_CLAIMED);
	nt_S.buffers_saved = nt_header_u64(NT_HDR_BUFFERS_SAVED);
	nt_S.blocked_waits = nt_header_u64(NT_HDR_BLOCKED_WAITS);
	nt_S.blocked_timeouts = nt_header_u64(NT_HDR_BLOCKED_TIMEOUTS);
	nt_S.blocked_ns = nt_header_u64(NT_HDR_BLOCKED_NS);
	nt_S.events_closed = nt_S.mode != NT_MODE_STREAMING && !nt_S.manager_buffer
				     ? nt_header_u64(NT_HDR_EVENTS_WRITTEN)
				     : NULL;
	/* Last, and a release: a thread that finds events_dropped set (nt_callsite_resolve,
	 * while a trace manager's provider thread initializes) finds the others set too. */
	__atomic_store_n(&nt_S.events_dropped, nt_header_u64(NT_HDR_EVENTS_DROPPED),
			 __ATOMIC_RELEASE);
	if (nt_S.file_backed && pending_name != NULL) {
		/* A link at the path is refused, never followed or replaced. */
		if (nt_file_publish(pending_name, nt_S.path) != 0) {
			nt_set_error("nt_start: cannot create '%s': %s", nt_S.path,
				     nt_file_strerror(errno));
			arena_unmap();
			return NT_ERR_IO;
		}
		free(pending_name);
		pending_name = NULL;
	}
	return NT_OK;
}

void nt_publish_word(void *record, uint64_t first_word)
{
	nt_store_release_64((uint64_t *)record, first_word);
}

void *nt_durable_reserve(uint32_t bytes)
{
	/* Writers hold intern_lock, but the head is still advanced atomically so that a
	 * reader of the live arena sees a head that only grows. */
	uint64_t off = nt_load_64(&nt_S.durable_head);
	if (off + bytes > nt_S.durable_size) {
		nt_add_64(nt_S.durable_dropped, 1);
		nt_session_halt(NT_FINAL_DURABLE_FULL);
		return NULL;
	}
	nt_faa_64(&nt_S.durable_head, bytes);
	return nt_S.durable + off;
}

static uint64_t chunk_first_word(uint32_t size_bytes, uint64_t seq)
{
	return nt_large_record_word(NT_KIND_CHUNK, nt_slot_wrap(seq), size_bytes);
}

static uint32_t slot_of(const nt_chunk_header *h)
{
	return (uint32_t)(((const uint8_t *)h - nt_S.rolling) / nt_S.chunk_size);
}

/* The claimer of slot header `h` for `seq` (won from `old`) makes it a fresh chunk. A reused
 * slot is invalidated before its body is touched, so a reader of the live arena (or of a
 * crash) never takes the old records for the new owner's. */
static nt_chunk_header *chunk_init(nt_chunk_header *h, uint64_t seq, uint64_t old, uint32_t thread,
				   uint64_t base_ticks, uint64_t first_event)
{
	if (old != 0) {
		nt_store_64((uint64_t *)(void *)h, 0);
		nt_fence_store();
		uint64_t *counter = &nt_S.slot_overwritten[slot_of(h)];
		nt_store_release_64(counter, nt_load_64(counter) & ~NT_SLOT_CHUNK_COUNTED);
		memset((uint8_t *)h + sizeof(*h), 0, nt_S.chunk_size - sizeof(*h));
	}
	h->thread = thread;
	h->event_count = 0;
	h->base_ticks = base_ticks;
	h->first_event = first_event;
	nt_publish_word(h, chunk_first_word(nt_S.chunk_size, seq));
	return h;
}

/* Does the claim of `seq` wake the saver (runtime/nt_saver_pace.h, NT_SAVER_NUDGE_DIV):
 * it starts a sixteenth of the arena, and the chunk a sixteenth back is closed but not saved
 * in full.
 * Not in an arena of fewer than 32 chunks: its halves, of 16 chunks at most, are asked for
 * often enough, and a nudge would come with nearly every claim. */
static int nudge_due(uint64_t seq, uint32_t nslots)
{
	const uint32_t step = nslots / NT_SAVER_NUDGE_DIV;
	if (step < 2 || seq < step || seq % step != 0)
		return 0;
	const uint64_t back = seq - step, closed = (back + 1) << 1;
	const uint32_t slot = (uint32_t)(back % nslots);
	/* A chunk still open (a slow thread's) cannot be saved in full: no sign of a saver
	 * behind. */
	return nt_load_64(&nt_chunk_slot(slot)->claim) == closed &&
	       nt_load_acquire_64(&nt_S.saved_claim[slot]) != closed;
}

/* Streaming: the sequence advances by CAS, and only onto a slot whose chunk the saver holds
 * in full (its saved-claim word), so a full arena drops events without consuming sequence
 * numbers. Slots are given back one by one as the saver saves them, not a rolling half at a
 * time: with a saver that saves as the writers go (runtime/nt_saver_pace.h), writers can run
 * a whole arena ahead of it before they drop, not half of one. A completed half still
 * wakes the provider thread (nt_stream_notify_full), which asks for a save. */
static nt_chunk_header *claim_streaming(uint32_t thread, uint64_t base_ticks, uint64_t first_event)
{
	const uint32_t nslots = nt_S.nslots, cph = nt_S.chunks_per_half;
	for (uint32_t attempt = 0; attempt < 2 * nslots; attempt++) {
		uint64_t seq = nt_load_64(&nt_S.next_seq);
		uint32_t slot = (uint32_t)(seq % nslots);
		nt_chunk_header *h = nt_chunk_slot(slot);
		uint64_t old = nt_load_64(&h->claim);
		if (old != 0 && !(old & 1u) && nt_load_acquire_64(&nt_S.saved_claim[slot]) != old) {
			/* Another writer may have taken seq meanwhile and already closed its chunk
			 * there: only while seq is still next is `old` the chunk to reuse. */
			if (nt_load_64(&nt_S.next_seq) != seq)
				continue;
			/* The chunk one lap back is unsaved: the saver is a whole arena behind,
			 * drop (or, with blocking on, the caller waits: nt_chunk_claim_wait,
			 * called by the writer with no chunk of its own). An older one is a straggler that a slow writer held
			 * for laps and closed just now: its sequence is skipped below, as an
			 * active one is, and the saver takes it at its next save. */
			if (nt_claim_sequence(old) + nslots >= seq)
				return NULL;
		}
		if (!nt_cas_64(&nt_S.next_seq, seq, seq + 1))
			continue;
		if (seq % cph == 0 && seq >= cph)
			nt_stream_notify_full(seq / cph); /* generation seq / cph - 1 is complete */
		else if (nudge_due(seq, nslots))
			nt_stream_nudge();
		old = nt_load_64(&h->claim);
		if ((old & 1u) || (old >> 1) > seq + 1)
			continue; /* a writer still holds it, or a newer claim took it */
		if (old != 0 && nt_load_acquire_64(&nt_S.saved_claim[slot]) != old)
			continue; /* the saver does not hold all of it yet */
		if (!nt_cas_64(&h->claim, old, ((seq + 1) << 1) | 1u))
			continue;
		return chunk_init(h, seq, old, thread, base_ticks, first_event);
	}
	return NULL;
}

/* Claim attempts a blocked writer makes between pauses before it sleeps on the saver's
 * progress word: a saver between two saves frees slots within microseconds. */
#define BLOCK_SPIN_ROUNDS 16
#define BLOCK_SPIN_PAUSES 64

static void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Blocking (nt_config.blocking_timeout_us): the writer holds no chunk here (its last one is
 * closed), so the saver can save and free everything while it waits, and nothing the
 * writer holds delays a stop. The progress word is read before each attempt, so a save
 * that frees a slot after a failed attempt changes it and the sleep returns at once. The
 * wait ends at the deadline, or as soon as nt_stream_may_wait says no: recording stopped
 * (nt_finish, a stop, a fatal signal's handler, exit: the tag changes), the streaming
 * threads stopped (nt_stream_stop, or a fork() child's nt_stream_forget) or saving failed. */
nt_chunk_header *nt_chunk_claim_wait(uint32_t thread, uint64_t base_ticks, uint64_t first_event,
				     uint32_t tag, nt_block_tally *tally)
{
	uint32_t seen = nt_stream_progress();
	if ((tally->stale && seen == tally->stale_progress) || !nt_stream_may_wait(tag))
		return NULL; /* the saver has not moved since this thread's last wait expired, or
				waiting is over (not counted as a wait: none began) */
	const uint64_t start = nt_clock_monotonic_ns(), deadline = start + nt_S.block_timeout_ns;
	uint64_t now = start;
	nt_chunk_header *h = NULL;
	for (uint32_t round = 0; nt_stream_may_wait(tag); round++) {
		seen = nt_stream_progress();
		h = claim_streaming(thread, base_ticks, first_event);
		now = nt_clock_monotonic_ns();
		if (h != NULL || now >= deadline)
			break;
		if (round < BLOCK_SPIN_ROUNDS) {
			for (int i = 0; i < BLOCK_SPIN_PAUSES; i++)
				cpu_pause();
			continue;
		}
		nt_stream_wait_progress(seen, deadline - now);
	}
	uint64_t waited = now - start;
	tally->stale = h == NULL && now >= deadline;
	tally->stale_progress = seen;
	tally->waits++;
	tally->timeouts += h == NULL;
	tally->ns += waited;
	nt_add_64(nt_S.blocked_waits, 1);
	nt_add_64(nt_S.blocked_ns, waited);
	if (h == NULL)
		nt_add_64(nt_S.blocked_timeouts, 1);
	return h;
}

/* Step 2 of the overwrite accounting above: the slot's old chunk of `events` is counted. */
static void count_overwrite(uint32_t slot, uint32_t events)
{
	uint64_t *counter = &nt_S.slot_overwritten[slot];
	nt_store_release_64(counter, ((nt_load_64(counter) & ~NT_SLOT_CHUNK_COUNTED) + events) |
					     NT_SLOT_CHUNK_COUNTED);
	nt_add_64(nt_S.events_overwritten, events);
}

nt_chunk_header *nt_chunk_claim(uint32_t thread, uint64_t base_ticks, uint64_t first_event)
{
	const uint32_t nslots = nt_S.nslots;
	const int oneshot = nt_S.mode == NT_MODE_ONESHOT;
	if (nt_S.mode == NT_MODE_STREAMING)
		return claim_streaming(thread, base_ticks, first_event);

	/* Each failed attempt consumed a sequence number whose slot was busy; after nslots of
	 * them every slot is held by an active writer and the event is dropped. */
	for (uint32_t attempt = 0; attempt < nslots; attempt++) {
		if (oneshot && nt_load_32(&nt_S.rolling_full))
			return NULL;
		uint64_t seq = nt_faa_64(&nt_S.next_seq, 1);
		uint32_t slot = (uint32_t)(seq % nslots);
		nt_chunk_header *h = nt_chunk_slot(slot);
		uint64_t mine = ((seq + 1) << 1) | 1u; /* 0 stays "never claimed" */
		uint64_t old = 0;

		if (oneshot) {
			if (seq >= nslots) {
				nt_store_32(&nt_S.rolling_full, 1);
				return NULL;
			}
			nt_store_64(&h->claim, mine);
		} else {
			if (seq >= nslots && seq % nt_S.chunks_per_half == 0)
				nt_add_64(nt_S.wraps, 1);
			old = nt_load_64(&h->claim);
			if ((old & 1u) || (old >> 1) > seq + 1)
				continue; /* active writer, or a newer claim already took it */
			if (!nt_cas_64(&h->claim, old, mine))
				continue;
			if (old != 0)
				count_overwrite(slot, nt_load_32(&h->event_count));
		}
		return chunk_init(h, seq, old, thread, base_ticks, first_event);
	}
	return NULL;
}

void nt_chunk_close(nt_chunk_header *chunk, uint32_t event_count)
{
	uint64_t claim = nt_load_64(&chunk->claim);
	nt_store_32(&chunk->event_count, event_count);
	nt_store_release_64(&chunk->claim, claim & ~(uint64_t)1);
	/* After the close: a kill between the two leaves a closed chunk not yet counted, never
	 * a count of events no chunk shows (the reader's truncation check needs count <= shown).
	 * One atomic add per chunk, not per event. */
	if (nt_S.events_closed != NULL)
		nt_add_64(nt_S.events_closed, event_count);
}

uint32_t nt_chunk_walk(const nt_chunk_header *h, uint32_t *events)
{
	/* Bounded by the slot, since a record can be half-published by a racing writer. */
	const uint8_t *payload = (const uint8_t *)(h + 1);
	const uint32_t cap = nt_S.chunk_size - (uint32_t)sizeof(*h);
	uint32_t off = 0, n = 0;
	uint64_t size;
	while (nt_live_record_frame(payload, off, cap - off, &size) == NT_FRAME_OK) {
		n += nt_record_is_event_at(payload + off);
		off += (uint32_t)size;
	}
	*events = n;
	return off;
}

void nt_arena_close_all_chunks(void)
{
	for (uint32_t s = 0; s < nt_S.nslots; s++) {
		nt_chunk_header *h = nt_chunk_slot(s);
		if (nt_record_kind(nt_load_acquire_64((const uint64_t *)(void *)h)) != NT_KIND_CHUNK ||
		    !(nt_load_64(&h->claim) & 1u))
			continue;
		uint32_t events;
		nt_chunk_walk(h, &events);
		nt_chunk_close(h, events);
	}
}

void nt_arena_clear(int durable)
{
	memset(nt_S.rolling, 0, (size_t)nt_S.nslots * nt_S.chunk_size);
	memset(nt_S.slot_overwritten, 0, (size_t)nt_S.nslots * sizeof(uint64_t));
	/* The sequences start again: a stale saved-claim word could match a new claim. */
	memset(nt_S.saved_claim, 0, (size_t)nt_S.nslots * sizeof(uint64_t));
	nt_S.next_seq = 0;
	nt_S.rolling_full = 0;
	if (durable) {
		memset(nt_S.durable, 0, nt_S.durable_size);
		nt_S.durable_head = 0;
	}
}
