/*
 * nt_follow_snapshot.c - copies a live file-backed arena with the writers' protocol
 * (writer/core/nt_arena.c, runtime/nt_arena_saver.c), so that a follower decodes only
 * memory nobody changes.
 *
 * Why this order:
 *   slots first  a chunk's records are published by a release store of their first word;
 *                a slot is copied from its header (acquire) through its last published
 *                record (nt_live_record_frame: acquire head loads), and its header is read
 *                again after: a slot reused meanwhile (its first word invalidated, or a new
 *                header) is dropped from the copy, never shown torn or under another owner;
 *   durable next a call site or thread is published before any event that names it, so
 *                the durable region copied after the slots defines everything they use;
 *   header next  and the saved stream up to the STREAM_END it gives: the saver commits
 *                the bytes before it moves STREAM_END, and a streaming writer reuses a slot
 *                only once the saver holds all of it, so an event is in the slots copied
 *                or in the stream read after them.
 * Every load from the shared mapping is atomic (acquire: what is loaded after it is not
 * loaded before it), so a concurrent writer is no data race even while it reuses the slot
 * being copied, and a slot's header read again after its records is read after them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/nt_archive_header_decode.h"
#include "format/nt_archive_header_encode.h"
#include "format/nt_arena_layout.h"
#include "nt_follow_snapshot.h"
#include "format/nt_format.h"
#include "format/nt_record.h"
#include "format/nt_unaligned.h"
#include "format/nt_zchunk.h"

static uint64_t load64(const uint8_t *p, int order)
{
	return __atomic_load_n((const uint64_t *)(const void *)p, order);
}

/* `n` bytes (a multiple of 4, 4-aligned) copied with acquire loads: a load after the copy
 * (the slot's header read again) is not done before any of them. x86: plain moves. */
static void copy_words32(uint8_t *dst, const uint8_t *src, uint64_t n)
{
	for (uint64_t i = 0; i < n; i += 4) {
		uint32_t v = __atomic_load_n((const uint32_t *)(const void *)(src + i),
					     __ATOMIC_ACQUIRE);
		memcpy(dst + i, &v, 4);
	}
}

/* What identifies the chunk in a slot: its first word (with the slot's wrap count), its
 * owner, clock base and first ordinal, and the claim's sequence (the active bit and the
 * event count change when the owner closes it, which changes nothing already published). */
typedef struct chunk_id {
	uint64_t w0, seq, base, first;
	uint32_t thread;
} chunk_id;

static chunk_id read_id(const uint8_t *h)
{
	chunk_id id;
	id.w0 = load64(h, __ATOMIC_ACQUIRE);
	id.thread = __atomic_load_n((const uint32_t *)(const void *)(h + offsetof(nt_chunk_header, thread)),
				    __ATOMIC_RELAXED);
	id.seq = load64(h + offsetof(nt_chunk_header, claim), __ATOMIC_RELAXED) >> 1;
	id.base = load64(h + offsetof(nt_chunk_header, base_ticks), __ATOMIC_RELAXED);
	id.first = load64(h + offsetof(nt_chunk_header, first_event), __ATOMIC_RELAXED);
	return id;
}

static int same_id(const chunk_id *a, const chunk_id *b)
{
	return a->w0 == b->w0 && a->thread == b->thread && a->seq == b->seq &&
	       a->base == b->base && a->first == b->first;
}

/* Is the chunk with identity `id` closed and every event of it delivered already (below its
 * thread's next ordinal)? Then the copy leaves it out: the reader sees a gap over events the
 * follower counts as delivered, and a poll costs what is new, not the whole arena. */
static int delivered_already(const uint8_t *h, const chunk_id *id, const uint64_t *next,
			     size_t nnext)
{
	uint64_t claim = load64(h + offsetof(nt_chunk_header, claim), __ATOMIC_ACQUIRE);
	if ((claim & NT_CLAIM_WRITER_ACTIVE) || (claim >> 1) != id->seq || id->thread >= nnext)
		return 0;
	uint32_t count = __atomic_load_n((const uint32_t *)(const void *)(h + offsetof(nt_chunk_header, event_count)),
					 __ATOMIC_RELAXED);
	return id->first + count <= next[id->thread];
}

/* One slot of `cs` bytes at src into dst: 1 copied (2: while its writer was still adding
 * to it), 0 empty or left out, -1 reused meanwhile (left out). What dst held before is never read: a left-out slot gets a zero
 * first word, a copied one a zero head after its last record, where the reader stops. */
static int copy_slot(uint8_t *dst, const uint8_t *src, uint32_t cs, const uint64_t *next,
		     size_t nnext)
{
	chunk_id before = read_id(src);
	memset(dst, 0, 8);
	if (nt_record_kind(before.w0) != NT_KIND_CHUNK || delivered_already(src, &before, next, nnext))
		return 0;
	copy_words32(dst, src, sizeof(nt_chunk_header));
	memcpy(dst, &before.w0, 8); /* the word the identity was read from */
	const uint8_t *payload = src + sizeof(nt_chunk_header);
	uint64_t cap = cs - sizeof(nt_chunk_header), off = 0, size;
	while (nt_live_record_frame(payload, off, cap - off, &size) == NT_FRAME_OK) {
		copy_words32(dst + sizeof(nt_chunk_header) + off, payload + off, size);
		off += size;
	}
	if (cap - off >= 8)
		memset(dst + sizeof(nt_chunk_header) + off, 0, 8);
	else
		memset(dst + sizeof(nt_chunk_header) + off, 0, cap - off);
	chunk_id after = read_id(src);
	if (!same_id(&before, &after)) {
		memset(dst, 0, 8);
		return -1;
	}
	uint64_t claim = nt_load_le64(dst + offsetof(nt_chunk_header, claim));
	return claim & NT_CLAIM_WRITER_ACTIVE ? 2 : 1;
}

/* The published records of the durable region [d, d + ds): up to the first zero word. */
static void copy_durable(uint8_t *dst, const uint8_t *map, uint64_t d, uint64_t ds)
{
	uint64_t off = d, end = d + ds, size;
	while (off + 8 <= end) {
		uint64_t w0 = load64(map + off, __ATOMIC_ACQUIRE);
		if (nt_record_kind(w0) == NT_KIND_INVALID ||
		    nt_record_frame(w0, end - off, 0, &size) != NT_FRAME_OK)
			break; /* not published yet (or damage, which the copy then ends at) */
		memcpy(dst + off, &w0, 8);
		copy_words32(dst + off + 8, map + off + 8, size - 8);
		off += size;
	}
	if (off + 8 <= end)
		memset(dst + off, 0, 8); /* where the reader's walk of the region stops */
}

/* The header's 4 KiB, copied and decoded. A oneshot or circular arena's events_written
 * counts the chunks closed up to the header's copy, which is later than the slots': chunks
 * that closed in between are open in the copy, or gone from it, and the reader would take
 * the difference for a file cut short. The copy's count is cleared (re-encoded: 0 is "not
 * counted"); the follower accounts for what it did not see by its own gaps. */
static const char *copy_header(nt_follow_snapshot *s, const uint8_t *map, char *why, size_t n)
{
	for (uint32_t i = 0; i < NT_ARENA_HEADER_BYTES; i += 8) {
		uint64_t v = load64(map + i, __ATOMIC_ACQUIRE);
		memcpy(s->buf + i, &v, 8);
	}
	uint64_t where;
	if (nt_header_decode(s->buf, NT_ARENA_HEADER_BYTES, &s->info, why, n, &where) == 0)
		return why;
	if (s->info.layout == NT_LAYOUT_ARENA && s->info.buffering_mode != NT_MODE_STREAMING &&
	    s->info.events_written != 0) {
		s->info.events_written = 0;
		if (nt_header_encode(&s->info, s->buf, NT_ARENA_HEADER_BYTES, NULL) == 0)
			return "arena header: too large to copy";
	}
	return NULL;
}

/* The geometry the copied header gives, checked against the mapping. */
typedef struct geometry {
	uint64_t d, ds, rolling, cs, nslots, counters;
} geometry;

static const char *check_geometry(const nt_archive_info *in, size_t map_len, geometry *g)
{
	if (in->layout != NT_LAYOUT_ARENA)
		return "the header no longer describes a live arena";
	g->d = in->data_offset;
	g->ds = in->durable_size;
	g->cs = in->chunk_size;
	g->nslots = 2 * (uint64_t)in->chunks_per_half;
	if (g->d < NT_ARENA_HEADER_BYTES || g->d % 8 || g->ds % 8 || g->ds > NT_MAX_DURABLE_BYTES ||
	    g->d > map_len || g->ds > map_len - g->d)
		return "arena header: durable region lies outside the file";
	if (g->cs < NT_MIN_CHUNK || g->cs > NT_MAX_CHUNK || (g->cs & (g->cs - 1)) != 0)
		return "arena header: chunk size is not usable";
	g->rolling = g->d + g->ds;
	if (g->nslots == 0 || g->nslots > (map_len - g->rolling) / g->cs)
		return "arena header: chunk slots lie outside the file";
	g->counters = in->slot_overwritten_offset;
	if (g->counters != 0 &&
	    (g->counters % 8 || g->counters < g->rolling + g->nslots * g->cs ||
	     g->counters > map_len || g->nslots > (map_len - g->counters) / 8))
		return "arena header: the slot overwrite counters lie outside the file";
	if (in->stream_offset != 0 && in->stream_offset != map_len)
		return "arena header: the saved stream does not start where the arena ends";
	return NULL;
}

/* The image is anonymous memory: its pages are zero until written and cost nothing until
 * then, so a 64 MiB arena's first copy does not first write 64 MiB of zeros; growing keeps
 * what is there (mremap). */
static int reserve(nt_follow_snapshot *s, uint64_t need)
{
	if (need <= s->cap)
		return 1;
	if (need > SIZE_MAX / 2)
		return 0;
	size_t cap = s->cap ? s->cap : 1u << 16;
	while (cap < need)
		cap *= 2;
	void *p = s->buf == NULL ? mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
				 : mremap(s->buf, s->cap, cap, MREMAP_MAYMOVE);
	if (p == MAP_FAILED)
		return 0;
	s->buf = p;
	s->cap = cap;
	return 1;
}

/* The copy's header of the chunk record at `off` of `size` bytes (a Chunk's own, a
 * CompressedChunk's copy), or NULL when the record is too short to be one. */
static const uint8_t *stream_chunk_header(const uint8_t *rec, unsigned kind, uint64_t size)
{
	if (kind == NT_KIND_CHUNK && size >= sizeof(nt_chunk_header))
		return rec;
	if (kind == NT_KIND_ZCHUNK && size >= sizeof(nt_zchunk_record))
		return rec + offsetof(nt_zchunk_record, chunk);
	return NULL;
}

/* Saved chunks whose events were all delivered (below next[their thread]) become empty
 * plain chunks of the same size and header in the copy: nothing to decompress or decode
 * again, while the reader still frames them and counts their events (its truncation check
 * and the ordinals the follower reads gaps from stay as they were). The scan resumes at
 * the first chunk that still had events to deliver. */
static void empty_delivered(nt_follow_snapshot *s, const uint64_t *next, size_t nnext)
{
	uint64_t off = s->empty_from > s->info.stream_offset ? s->empty_from : s->info.stream_offset;
	int advancing = 1;
	while (off + 8 <= s->size) {
		uint64_t size;
		if (nt_top_record_frame(s->buf, s->size, off, &size) != NT_FRAME_OK)
			break; /* damage: the reader reports it */
		const uint8_t *hp = stream_chunk_header(s->buf + off, s->buf[off], size);
		if (hp != NULL) {
			nt_chunk_header h;
			memcpy(&h, hp, sizeof(h));
			if (h.thread < nnext && h.first_event + h.event_count <= next[h.thread]) {
				h.kind = NT_KIND_CHUNK;
				h.size_words = 0;
				h.slot_wrap = 0;
				h.size_bytes = (uint32_t)size;
				memcpy(s->buf + off, &h, sizeof(h));
				memset(s->buf + off + sizeof(h), 0, size - sizeof(h));
			} else {
				advancing = 0;
			}
		}
		off += size;
		if (advancing)
			s->empty_from = off;
	}
}

/* The saved stream [stream_offset, stream_end): bytes below stream_end are committed and
 * never change, so only what is new since the previous call is read. */
static const char *copy_stream(nt_follow_snapshot *s, int fd, size_t map_len, uint64_t file_size,
			       const uint64_t *next, size_t nnext)
{
	uint64_t so = s->info.stream_offset, se = s->info.stream_end;
	if (so == 0) {
		s->size = map_len;
		return NULL;
	}
	struct stat st; /* the size now: the saver appended since the caller looked */
	if (se > file_size && fstat(fd, &st) == 0 && (uint64_t)st.st_size > file_size)
		file_size = (uint64_t)st.st_size;
	if (se < so || se > file_size)
		return "arena header: the saved stream runs past the end of the file";
	if (s->stream_have < so)
		s->stream_have = so;
	if (se < s->stream_have)
		return "arena header: the saved stream's end moved back";
	if (!reserve(s, se))
		return "out of memory copying the saved stream";
	while (s->stream_have < se) {
		ssize_t n = pread(fd, s->buf + s->stream_have, (size_t)(se - s->stream_have),
				  (off_t)s->stream_have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? "cannot read the saved stream" : "the file is shorter than its saved stream";
		s->stream_have += (uint64_t)n;
	}
	s->size = (size_t)se;
	empty_delivered(s, next, nnext);
	return NULL;
}

/* The overwrite counter of slot i, after its copy: "counted" then covers what was copied. */
static void copy_counter(nt_follow_snapshot *s, const uint8_t *map, const geometry *g, uint64_t i)
{
	if (g->counters != 0) {
		uint64_t c = load64(map + g->counters + 8 * i, __ATOMIC_ACQUIRE);
		memcpy(s->buf + g->counters + 8 * i, &c, 8);
	}
}

static int grow_u64(uint64_t **a, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 1;
	uint64_t *p = realloc(*a, need * sizeof(uint64_t));
	if (p == NULL)
		return 0;
	*a = p;
	*cap = need;
	return 1;
}

/* Slot i copied again, into the scratch slot first, and taken into the image only when it
 * holds the chunk `want` still (its identity, read_id). A later look at a slot must never
 * take whatever chunk is there now: a chunk claimed after the first copy of the slots may be
 * newer than its thread's chunks in the copy, and taking it would show the events between
 * as lost. Returns copy_slot's result, or 0 when the slot holds another chunk now; the
 * image keeps what it had unless the chunk was taken. */
static int copy_slot_again(nt_follow_snapshot *s, const uint8_t *map, const geometry *g,
			   uint64_t i, const chunk_id *want, const uint64_t *next, size_t nnext)
{
	uint64_t at = g->rolling + i * g->cs;
	int rc = copy_slot(s->scratch, map + at, (uint32_t)g->cs, next, nnext);
	if (rc <= 0)
		return rc;
	chunk_id got = read_id(s->scratch);
	if (!same_id(&got, want))
		return 0;
	memcpy(s->buf + at, s->scratch, (size_t)g->cs);
	copy_counter(s, map, g, i);
	return rc;
}

/* A second look at every slot, once the first copy of them all is done: a chunk that was
 * claimed in a slot after that slot was copied, and that is older than its thread's latest
 * chunk in the copy, is copied now. The slots are copied one after another, so a thread can
 * claim chunks in slots already copied and then one in a slot copied later: the copy would
 * hold the later chunk without the ones before it, and the follower would take the events
 * between for lost. Each of those was claimed before the thread's latest chunk in the copy,
 * so before this look: it is in its slot now, or its slot was reused since (a streaming
 * saver had saved it: it is in the stream read after; circular: it is truly overwritten).
 * Chunks newer than the thread's latest are left to the next poll: taking them could leave
 * the same kind of hole before them. */
static void copy_claimed_since(nt_follow_snapshot *s, const uint8_t *map, const geometry *g,
			       const uint64_t *next, size_t nnext)
{
	for (uint64_t i = 0; i < g->nslots; i++) {
		uint64_t at = g->rolling + i * g->cs;
		chunk_id now = read_id(map + at);
		if (nt_record_kind(now.w0) != NT_KIND_CHUNK || now.thread > NT_MAX_THREAD_INDEX ||
		    now.first + 1 >= s->latest[now.thread])
			continue; /* empty, or no older than its thread's latest chunk copied */
		chunk_id had = read_id(s->buf + at);
		if (nt_record_kind(had.w0) == NT_KIND_CHUNK && same_id(&had, &now))
			continue; /* the chunk the first copy took */
		copy_slot_again(s, map, g, i, &now, next, nnext);
	}
}

/* Every slot, then again each chunk copied while its writer was adding to it when the same
 * thread has a later chunk in the copy: the slots are copied one after another, so a
 * thread may close the chunk copied early and claim one copied later; the early copy then
 * lacks events that are in no other slot copied. The thread closed it before that claim,
 * so the second copy is whole; if the slot holds another chunk by then, the early copy, a
 * prefix of it, stays (the rest was saved: it is in the stream; circular: overwritten).
 * Then the chunks claimed in slots after they were copied (copy_claimed_since). */
static const char *copy_slots(nt_follow_snapshot *s, const uint8_t *map, const geometry *g,
			      const uint64_t *next, size_t nnext)
{
	size_t nactive = 0;
	if (s->latest == NULL) { /* zeroed once; each copy zeroes what the last one set */
		s->latest = calloc(NT_MAX_THREAD_INDEX + 1, sizeof(uint64_t));
		s->nlatest = s->latest != NULL ? NT_MAX_THREAD_INDEX + 1 : 0;
	}
	if (s->latest == NULL || !grow_u64(&s->latest_set, &s->latest_set_cap, g->nslots) ||
	    !grow_u64(&s->active, &s->nactive_cap, g->nslots))
		return "out of memory copying the arena";
	if (s->scratch_cap < g->cs) {
		uint8_t *p = realloc(s->scratch, (size_t)g->cs);
		if (p == NULL)
			return "out of memory copying the arena";
		s->scratch = p;
		s->scratch_cap = (size_t)g->cs;
	}
	/* first_event + 1 by thread: the last copy's entries zeroed (the table is 350 KiB, and
	 * a poll of a small arena sets a few) */
	for (size_t k = 0; k < s->nlatest_set; k++)
		s->latest[s->latest_set[k]] = 0;
	s->nlatest_set = 0;
	for (uint64_t i = 0; i < g->nslots; i++) {
		uint64_t at = g->rolling + i * g->cs;
		int rc = copy_slot(s->buf + at, map + at, (uint32_t)g->cs, next, nnext);
		s->reused += rc < 0;
		copy_counter(s, map, g, i);
		if (rc <= 0)
			continue;
		const nt_chunk_header *h = (const nt_chunk_header *)(const void *)(s->buf + at);
		if (h->thread <= NT_MAX_THREAD_INDEX && h->first_event + 1 > s->latest[h->thread]) {
			if (s->latest[h->thread] == 0) /* one a slot: latest_set holds nslots */
				s->latest_set[s->nlatest_set++] = h->thread;
			s->latest[h->thread] = h->first_event + 1;
		}
		if (rc == 2)
			s->active[nactive++] = i;
	}
	for (size_t k = 0; k < nactive; k++) {
		uint64_t i = s->active[k], at = g->rolling + i * g->cs;
		chunk_id had = read_id(s->buf + at);
		if (had.thread > NT_MAX_THREAD_INDEX || had.first + 1 >= s->latest[had.thread])
			continue; /* its thread's last chunk: a prefix of it is what a copy can be */
		s->reused += copy_slot_again(s, map, g, i, &had, next, nnext) < 0;
	}
	copy_claimed_since(s, map, g, next, nnext);
	return NULL;
}

const char *nt_follow_snapshot_take(nt_follow_snapshot *s, int fd, const uint8_t *map,
				    size_t map_len, uint64_t file_size, const uint64_t *next,
				    size_t nnext)
{
	static __thread char why[200];
	if (map_len < NT_ARENA_HEADER_BYTES || map_len > file_size)
		return "the file is shorter than its arena";
	if (!reserve(s, map_len))
		return "out of memory copying the arena";
	/* The geometry first, from a copy of its own; everything is copied again below. */
	const char *bad = copy_header(s, map, why, sizeof(why));
	geometry g;
	if (bad == NULL && s->info.layout != NT_LAYOUT_ARENA)
		return NULL; /* finished: s->info says so, and the caller reads the file as it is */
	if (bad == NULL)
		bad = check_geometry(&s->info, map_len, &g);
	if (bad != NULL)
		return bad;
	if ((bad = copy_slots(s, map, &g, next, nnext)) != NULL)
		return bad;
	copy_durable(s->buf, map, g.d, g.ds);
	nt_archive_info first = s->info;
	if ((bad = copy_header(s, map, why, sizeof(why))) != NULL)
		return bad;
	/* The geometry may not change under a follower: the slots were copied with it. */
	if (s->info.layout != first.layout || s->info.data_offset != first.data_offset ||
	    s->info.durable_size != first.durable_size || s->info.chunk_size != first.chunk_size ||
	    s->info.chunks_per_half != first.chunks_per_half ||
	    s->info.slot_overwritten_offset != first.slot_overwritten_offset ||
	    s->info.stream_offset != first.stream_offset)
		return s->info.layout != NT_LAYOUT_ARENA ? NULL /* finished meanwhile */
							  : "arena header: the geometry changed";
	return copy_stream(s, fd, map_len, file_size, next, nnext);
}

uint64_t nt_follow_snapshot_fingerprint(const nt_follow_snapshot *s)
{
	/* xxHash64's round and primes over each word: what a torn store changes (a word or a
	 * few) changes the result, but for a collision. */
	const uint64_t p1 = 0x9E3779B185EBCA87ull, p2 = 0xC2B2AE3D27D4EB4Full;
	uint64_t h = p2 ^ s->size, w;
	size_t i = 0;
	for (; i + 8 <= s->size; i += 8) {
		memcpy(&w, s->buf + i, 8);
		h ^= w * p2;
		h = ((h << 31) | (h >> 33)) * p1;
	}
	for (; i < s->size; i++)
		h = (h ^ s->buf[i]) * p1;
	return h ^ (h >> 29);
}

void nt_follow_snapshot_free(nt_follow_snapshot *s)
{
	if (s->buf != NULL)
		munmap(s->buf, s->cap);
	free(s->latest);
	free(s->latest_set);
	free(s->active);
	free(s->scratch);
	*s = (nt_follow_snapshot){ 0 };
}
