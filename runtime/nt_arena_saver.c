/*
 * nt_arena_saver.c - turns a live arena into archive bytes (nt_arena_saver.h): the one saver
 * of the writer's in-process streaming thread, of its finish-time compaction, and of the
 * trace manager.
 *
 * The protocol with the writers (writer/core/nt_arena.c claims and closes chunks):
 *   writers   a thread owns a chunk from its claim to its close; it appends records with
 *             plain stores, each published by a release store of its first word, and closes
 *             the chunk by storing event_count and then (release) the claim word without the
 *             active bit. In streaming mode a writer reuses a slot only once the slot's
 *             saved-claim word (acquire) equals the claim word of the chunk there: the saver
 *             holds all of it.
 *   saver     a save appends everything published since the previous save: first the new
 *             durable records, then, in claim order, each chunk's new records as a chunk
 *             piece of its own (time base and event ordinal recomputed at the cut), so every
 *             piece decodes alone and each thread's pieces stay in order. A chunk still being
 *             written is saved up to its last published record (acquire loads of first
 *             words) and continued at the next save. Once the output has the bytes, the
 *             saver commits (out->commit) and only then release-stores the claim word of
 *             each closed chunk it holds in full into the slot's saved-claim word.
 * The saver never writes anything else into the arena.
 *
 * The arena is hostile: another process may change any byte at any moment. So the saver
 * takes every size from its own layout, copies each chunk header once (atomic loads) and
 * checks it, frames records with format/nt_record.h within the chunk (once, live: a record
 * changed after that is the reader's to frame and report), bounds thread indices by
 * NT_MAX_THREAD_INDEX, and does a bounded amount of work per save: a few passes over the
 * slots, one walk of each chunk and of the durable region. A lie costs the liar's records,
 * never memory safety or termination.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nt_arena_saver.h"
#include "nt_saver_pace.h"
#include "format/nt_record.h"
#include "format/nt_zchunk.h"

typedef struct slot_progress {
	uint64_t claim;       /* chunk being tracked (0 = none) */
	uint32_t saved;       /* payload bytes already in the output */
	uint32_t events;      /* events among them */
	uint64_t ticks;       /* running clock at the cut */
	nt_chunk_clock after; /* per save: the clock at the end of what the measuring walked */
	uint64_t first_event; /* the chunk's, as first seen */
	uint32_t thread;      /* the chunk's, as first seen */
	uint64_t held_since;  /* open chunk: when new records were first held (0: none) */
} slot_progress;

/* A chunk header as read once: claim 0 when the slot holds no usable chunk. */
typedef struct chunk_view {
	uint64_t claim;
	uint32_t thread;
	uint64_t base_ticks, first_event;
} chunk_view;

typedef struct piece {
	uint32_t slot;
	uint64_t sequence;
} piece;

struct nt_arena_saver {
	uint8_t *map;
	nt_arena_layout layout;
	uint64_t end;           /* the output's end: start + bytes appended */
	uint64_t events;        /* events in the pieces appended */
	uint64_t durable_saved; /* bytes of the durable region in the output */
	int failure;            /* the errno that stopped the saving, or 0 */
	slot_progress *progress;
	piece *order;
	uint32_t *used, *full; /* per save: published bytes per slot; slots saved in full */
	uint64_t *seen;        /* per save: each slot's claim word in the first pass */
	uint64_t *block;       /* per save, by thread: oldest unsaved chunk seen too late */
	uint32_t nblock;
	uint8_t *buf; /* one chunk piece */
	/* Compression (nt_arena_saver_set_compression): NULL = pieces stored as they are. */
	nt_zchunk_encoder *zenc;
	uint8_t *zbuf;               /* one CompressedChunk record (at most a piece's size) */
	uint64_t bytes_in, bytes_out; /* chunk pieces: their size, and what was appended */
	/* The writers' progress while a save compresses (writers_outrun): the highest claim
	 * sequence found. */
	uint64_t frontier;
	int live; /* writers may wait for this saver: compress only while they do not */
	/* Live compression holds the new records of an open chunk (hold_open) up to hold_ns,
	 * unless this save cuts every open chunk (nt_arena_saver_save_all). */
	uint64_t hold_ns, now;
	int cut_all;
};

static uint8_t *slot_at(const nt_arena_saver *s, uint32_t slot)
{
	return s->map + s->layout.rolling_offset + (uint64_t)slot * s->layout.chunk_size;
}

static uint64_t *saved_claim_word(const nt_arena_saver *s, uint32_t slot)
{
	return (uint64_t *)(void *)(s->map + s->layout.saved_claim_offset) + slot;
}

static uint64_t load_acquire_64(const void *p)
{
	return __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE);
}

/* The claim word of slot `slot`'s chunk when its first word (acquire, after the claim word)
 * is a chunk header of that claim's wrap, else 0 (empty, or being re-claimed: the writer
 * changes the claim word before it invalidates and rewrites the header, so a consistent
 * pair is this claim's chunk). */
static uint64_t chunk_claim(const nt_arena_saver *s, uint32_t slot)
{
	const nt_chunk_header *h = (const nt_chunk_header *)(const void *)slot_at(s, slot);
	uint64_t claim = __atomic_load_n(&h->claim, __ATOMIC_ACQUIRE);
	uint64_t w0 = load_acquire_64(h);
	if (nt_record_kind(w0) != NT_KIND_CHUNK || claim < 2 ||
	    nt_record_bits16(w0) != (uint16_t)(nt_claim_sequence(claim) / s->layout.nslots))
		return 0;
	return claim;
}

/* The rest of the chunk header of `claim`, copied once; read only for a chunk that is not
 * marked saved, which its writer cannot give up until this saver marks it. 0 when the
 * thread index is past NT_MAX_THREAD_INDEX (such a chunk is never saved). */
static int chunk_details(const nt_arena_saver *s, uint32_t slot, uint64_t claim, chunk_view *v)
{
	const nt_chunk_header *h = (const nt_chunk_header *)(const void *)slot_at(s, slot);
	v->claim = claim;
	v->thread = __atomic_load_n(&h->thread, __ATOMIC_RELAXED);
	v->base_ticks = __atomic_load_n(&h->base_ticks, __ATOMIC_RELAXED);
	v->first_event = __atomic_load_n(&h->first_event, __ATOMIC_RELAXED);
	return v->thread <= NT_MAX_THREAD_INDEX;
}

static int marked_saved(const nt_arena_saver *s, uint32_t slot, uint64_t claim)
{
	return __atomic_load_n(saved_claim_word(s, slot), __ATOMIC_RELAXED) == claim;
}

/* The end of the published records in a slot's payload (at most the payload), walking from
 * p->saved, the end already saved, and the chunk's clock at that end (p->after): a chunk
 * saved piece by piece is walked once in all, and only here (again from the same end while
 * its new records are held: hold_open). */
static uint32_t walk_chunk(const nt_arena_saver *s, uint32_t slot, slot_progress *p)
{
	const uint8_t *payload = slot_at(s, slot) + sizeof(nt_chunk_header);
	const uint32_t cap = s->layout.chunk_size - (uint32_t)sizeof(nt_chunk_header);
	uint32_t off = p->saved;
	uint64_t size;
	p->after = (nt_chunk_clock){ p->ticks, p->events };
	for (;;) {
		/* Each record's size says where the next starts, so the walk is a chain of
		 * loads of lines another core just wrote: ask for them well ahead. */
		__builtin_prefetch(payload + off + 512);
		if (nt_live_record_frame(payload, off, cap - off, &size) != NT_FRAME_OK)
			break;
		nt_chunk_clock_step(&p->after, payload + off, size);
		off += (uint32_t)size;
	}
	return off;
}

/* The end of a closed chunk's records for a compressing saver, without walking them: the
 * whole payload, and the event count its writer stored before closing it (acquire-ordered
 * by chunk_claim's load of the claim word). Past its records a payload is zero (writers
 * clear a slot they reuse, nt_arena.c), which ends the records for a reader and costs a
 * compressed piece a few bytes; the walk, a chain of loads of lines another core has just
 * written, cost as much as compressing them (perf: 18% of the samples of one thread
 * streaming zones, zstd 18%). Returns 0 (walk instead) when the count shows no new event:
 * a piece of zeros is not worth a frame. A lying count gives a piece the reader reports.
 * A chunk whose middle word is zero was closed early (its thread or process ended) and
 * holds records in its first half at most: it is walked too, so that its piece ends where
 * its records do. Whole, it cost every reader a decompression and a checksum of the full
 * chunk: the last chunk of each of a bundle's short processes was 4 KiB of which about 600
 * bytes were records, and decompressing it took 1.9 us against 0.9 (zstd 1.5.4). */
static uint32_t closed_chunk_end(const nt_arena_saver *s, uint32_t slot, slot_progress *p)
{
	const nt_chunk_header *h = (const nt_chunk_header *)(const void *)slot_at(s, slot);
	uint32_t count = __atomic_load_n(&h->event_count, __ATOMIC_RELAXED);
	if (count <= p->events)
		return 0;
	const uint32_t cap = s->layout.chunk_size - (uint32_t)sizeof(nt_chunk_header);
	const uint64_t *middle = (const uint64_t *)(const void *)((const uint8_t *)(h + 1) +
								   (cap / 2 & ~7u));
	if (__atomic_load_n(middle, __ATOMIC_RELAXED) == 0)
		return 0;
	p->after = (nt_chunk_clock){ p->ticks, count };
	return cap;
}

nt_arena_saver *nt_arena_saver_new(uint8_t *map, const nt_arena_layout *layout, uint64_t start)
{
	if (map == NULL || layout == NULL || layout->nslots == 0 ||
	    layout->chunk_size < NT_MIN_CHUNK || layout->chunk_size > NT_MAX_CHUNK)
		return NULL;
	nt_arena_saver *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	uint32_t n = layout->nslots;
	s->map = map;
	s->layout = *layout;
	s->end = start;
	s->progress = calloc(n, sizeof(*s->progress));
	s->order = calloc(n, sizeof(*s->order));
	s->used = calloc(n, sizeof(*s->used));
	s->full = calloc(n, sizeof(*s->full));
	s->seen = calloc(n, sizeof(*s->seen));
	s->buf = malloc(layout->chunk_size);
	if (!s->progress || !s->order || !s->used || !s->full || !s->seen || !s->buf) {
		nt_arena_saver_free(s);
		return NULL;
	}
	return s;
}

void nt_arena_saver_free(nt_arena_saver *s)
{
	if (s == NULL)
		return;
	free(s->progress);
	free(s->order);
	free(s->used);
	free(s->full);
	free(s->seen);
	free(s->block);
	free(s->buf);
	nt_zchunk_encoder_free(s->zenc);
	free(s->zbuf);
	free(s);
}

int nt_arena_saver_set_compression(nt_arena_saver *s, int level, int live)
{
	if (s == NULL || !nt_zchunk_level_ok(level))
		return EINVAL;
	s->live = live;
	s->hold_ns = live && level != 0 ? NT_SAVER_HOLD_MS * 1000000ull : 0;
	nt_zchunk_encoder_free(s->zenc);
	s->zenc = NULL;
	if (level == 0)
		return 0;
	if (s->zbuf == NULL)
		s->zbuf = malloc(s->layout.chunk_size);
	s->zenc = nt_zchunk_encoder_new(level);
	return s->zenc != NULL && s->zbuf != NULL ? 0 : ENOMEM;
}

void nt_arena_saver_bytes(const nt_arena_saver *s, uint64_t *pieces, uint64_t *appended)
{
	*pieces = s ? s->bytes_in : 0;
	*appended = s ? s->bytes_out : 0;
}

uint64_t nt_arena_saver_events(const nt_arena_saver *s)
{
	return s ? s->events : 0;
}

uint64_t nt_arena_saver_end(const nt_arena_saver *s)
{
	return s ? s->end : 0;
}

uint64_t nt_arena_saver_unsaved_events(nt_arena_saver *s)
{
	uint64_t unsaved = 0;
	for (uint32_t i = 0; s != NULL && i < s->layout.nslots; i++) {
		uint64_t claim = chunk_claim(s, i);
		if (claim == 0 || marked_saved(s, i, claim))
			continue;
		/* Walked from what is saved of this chunk, or from its start. */
		slot_progress p = s->progress[i];
		if ((p.claim | 1u) != (claim | 1u))
			p = (slot_progress){ .claim = claim };
		(void)walk_chunk(s, i, &p);
		unsaved += p.after.events - p.events;
	}
	return unsaved;
}

/* Appends to the output; the first failure stops the saving for good. */
static int append(nt_arena_saver *s, const nt_saver_output *out, const void *data, size_t len)
{
	if (s->failure != 0)
		return 0;
	if (len == 0)
		return 1;
	int err = out->append(out->ctx, data, len);
	if (err != 0) {
		s->failure = err;
		return 0;
	}
	s->end += len;
	return 1;
}

static int by_sequence(const void *a, const void *b)
{
	const piece *x = a, *y = b;
	return x->sequence < y->sequence ? -1 : x->sequence > y->sequence;
}

/* The per-thread table covers thread index `t` (at most NT_MAX_THREAD_INDEX). */
static int grow_block(nt_arena_saver *s, uint32_t t)
{
	uint32_t cap = s->nblock ? s->nblock : 16;
	while (cap <= t)
		cap *= 2;
	if (cap > NT_MAX_THREAD_INDEX + 1)
		cap = NT_MAX_THREAD_INDEX + 1;
	uint64_t *b = realloc(s->block, cap * sizeof(*b));
	if (b == NULL) {
		s->failure = ENOMEM;
		return 0;
	}
	for (uint32_t i = s->nblock; i < cap; i++)
		b[i] = UINT64_MAX;
	s->block = b;
	s->nblock = cap;
	return 1;
}

/* Step 1 of a save: which chunks this save may take. Each thread's pieces must reach the
 * output in order, and a thread publishes a chunk completely (and closes it) before it
 * claims the next. So: (a) a first pass notes every slot's chunk; (b) a second pass finds
 * the chunks that appeared since and are not saved in full: a thread with such a chunk keeps
 * its newer chunks for the next save (block holds, per thread, the oldest such sequence);
 * (c) the measuring pass (measure_slots) walks the rest, and anything older than a chunk
 * seen in (a) is complete by then. A slot whose chunk changed after (a) waits for the next
 * save. Returns 0 when memory runs out. */
static int find_slots(nt_arena_saver *s)
{
	const uint32_t nslots = s->layout.nslots;
	s->frontier = 0;
	for (uint32_t i = 0; i < nslots; i++) {
		s->seen[i] = chunk_claim(s, i);
		if (s->seen[i] != 0 && nt_claim_sequence(s->seen[i]) > s->frontier)
			s->frontier = nt_claim_sequence(s->seen[i]);
	}
	for (uint32_t t = 0; t < s->nblock; t++)
		s->block[t] = UINT64_MAX;
	for (uint32_t i = 0; i < nslots; i++) {
		uint64_t claim = chunk_claim(s, i);
		chunk_view v;
		if (claim == 0 || (claim | 1u) == (s->seen[i] | 1u) || marked_saved(s, i, claim) ||
		    !chunk_details(s, i, claim, &v))
			continue;
		if (v.thread >= s->nblock && !grow_block(s, v.thread))
			return 0;
		if (nt_claim_sequence(v.claim) < s->block[v.thread])
			s->block[v.thread] = nt_claim_sequence(v.claim);
	}
	return 1;
}

/* Does this save leave the new records of the open chunk `p` (a writer still appends to it)
 * for a later one? Each piece is compressed on its own (a zstd frame, a chunk header), and
 * a live saver saves every millisecond while there is something new (nt_saver_pace.h): a
 * thread writing a few MB/s would be cut into pieces of a few KiB, which compress to twice
 * the bytes of whole chunks (measured: mixed shape paced to ~2 MB/s, 2.86 B/event streamed
 * against 1.50 for the same events saved whole). So an open chunk's records are held until
 * the chunk closes or NT_SAVER_HOLD_MS after they were first seen, whichever is first, and
 * cut at once by nt_arena_saver_save_all. Holding costs nobody: writers never reuse an open
 * chunk's slot, a follower and a reader of a killed process's file-backed arena read its
 * slots, and a manager's last save of a provider that died is a save_all. */
static int hold_open(nt_arena_saver *s, slot_progress *p)
{
	if (s->hold_ns == 0 || s->cut_all || !(p->claim & 1u))
		return 0;
	if (p->held_since == 0)
		p->held_since = s->now;
	return s->now - p->held_since < s->hold_ns;
}

/* Step 1 (c): measures the chunks this save takes. Sets used[slot] (published payload
 * bytes), lists the slots with new records in order (*n) and the slots whose chunk is
 * closed and already saved in full in full (*nfull). Every durable record the measured
 * records use was published before them, so the durable copy that follows covers it. */
static void measure_slots(nt_arena_saver *s, uint32_t *n, uint32_t *nfull)
{
	for (uint32_t i = 0; i < s->layout.nslots; i++) {
		s->used[i] = 0;
		if (s->seen[i] == 0)
			continue;
		uint64_t claim = chunk_claim(s, i);
		if (claim == 0 || (claim | 1u) != (s->seen[i] | 1u))
			continue;
		if (marked_saved(s, i, claim))
			continue; /* saved in full already: the slot may be reused right now */
		/* From here the slot cannot be reused before this save marks it saved, so its
		 * header and published records are stable (in an honest arena). */
		chunk_view v;
		if (!chunk_details(s, i, claim, &v))
			continue;
		if (v.thread < s->nblock && nt_claim_sequence(v.claim) > s->block[v.thread])
			continue; /* an older chunk of its thread is not saved yet */
		slot_progress *p = &s->progress[i];
		if ((p->claim | 1u) != (v.claim | 1u)) { /* a new chunk in this slot */
			p->saved = 0;
			p->events = 0;
			p->ticks = v.base_ticks;
			p->first_event = v.first_event;
			p->thread = v.thread;
			p->held_since = 0;
		}
		p->claim = v.claim; /* the active bit may have cleared since */
		uint32_t bytes = s->zenc != NULL && !(v.claim & 1u) ? closed_chunk_end(s, i, p) : 0;
		if (bytes == 0)
			bytes = walk_chunk(s, i, p);
		if (bytes > p->saved && hold_open(s, p))
			bytes = p->saved;
		s->used[i] = bytes;
		if (bytes > p->saved)
			s->order[(*n)++] = (piece){ i, nt_claim_sequence(v.claim) };
		else if (!(v.claim & 1u))
			s->full[(*nfull)++] = i; /* closed, and all of it saved before */
	}
}

/* Step 2: the new durable records, up to the first one not yet published. */
static void save_durable(nt_arena_saver *s, const nt_saver_output *out)
{
	const uint8_t *durable = s->map + s->layout.durable_offset;
	const uint64_t dsize = s->layout.durable_size;
	uint64_t end = s->durable_saved, size;
	while (end + 8 <= dsize &&
	       nt_record_frame(load_acquire_64(durable + end), dsize - end, 0, &size) == NT_FRAME_OK)
		end += size;
	if (append(s, out, durable + s->durable_saved, end - s->durable_saved))
		s->durable_saved = end;
}

/* Would compressing the next piece (of claim sequence `seq`) make writers wait? Writers
 * claim chunks in sequence and reuse a slot once its chunk is saved (nt_arena.c), so they
 * drop when they come a whole arena ahead of the oldest unsaved piece. The frontier (the
 * highest claim found) advances by probing the slots after it: a few loads, amortized O(1)
 * per piece. The piece is compressed while the writers are at most an
 * NT_SAVER_Z_BACKLOG_DIV-th of the arena ahead of it (the backlog); past that it is stored
 * as it is (a copy and a write: about twice as fast) until the saver is back within it. A
 * lying arena only changes which pieces are compressed.
 *
 * Why a backlog and not a rate. A stored piece costs 10 to 25 times the bytes of a
 * compressed one (mixed, zones), so a streaming archive within 1.2x of a oneshot one needs
 * nearly every piece compressed. The rule before this one also stored pieces whenever the
 * writers claimed more than one chunk per two pieces saved during a save (compression at
 * under twice the writers' rate): one writer at full rate then had 96% of its zone pieces
 * and 91% of its mixed ones stored (15.7x and 8.8x the oneshot bytes, bench/nt_bench_peers
 * --part disk). A saver that compresses slower than the writers write lets the backlog grow
 * to the bound and then stores pieces until it is back under, so the writers keep 7/8 of
 * the arena for the saver's own stalls. Why an eighth: 2 writers at full rate on 2 shared
 * cores (the saver cannot keep up), 15 interleaved runs of 3 M mixed iterations each, events
 * lost median / mean: compression off 2.3% / 3.5%; an eighth 2.8% / 3.4%; a half 8.9% /
 * 10.1%; a half while the save gains on the writers, else an eighth, 8.5% / 8.3%. A larger
 * bound compresses more under load and loses more. With closed_chunk_end and the pace of
 * nt_saver_pace.h added, the same runs (the machine loaded 9 deep): off 2.8% / 3.7%,
 * compressing at an eighth 0.0% / 0.16%: a compressed piece is fewer bytes to write, and
 * compression never costs the writers an event. (NT_SAVER_Z_BACKLOG_DIV is in
 * nt_saver_pace.h: the writers' nudge is derived from it.) */

static int writers_outrun(nt_arena_saver *s, uint64_t seq)
{
	const uint32_t nslots = s->layout.nslots;
	for (int probe = 0; probe < 64; probe++) {
		uint64_t claim = chunk_claim(s, (uint32_t)((s->frontier + 1) % nslots));
		if (claim == 0 || nt_claim_sequence(claim) != s->frontier + 1)
			break;
		s->frontier++;
	}
	return s->frontier > seq + nslots / NT_SAVER_Z_BACKLOG_DIV;
}

/* Step 3, for one slot: its records from what was saved to what step 1 measured, as a chunk
 * piece of its own (time base and event ordinal recomputed at the cut, by step 1's walk: a
 * liar that changes its records between that walk and this copy gets a piece whose counts
 * disagree with its records, which the reader reports). The slot keeps this chunk until
 * the commit marks it saved. */
static int save_piece(nt_arena_saver *s, const nt_saver_output *out, uint32_t slot,
		      uint32_t *nfull)
{
	/* Before the copy: the probe reads slots, never this one's records. */
	int compress = s->zenc != NULL &&
		       !(s->live && writers_outrun(s, nt_claim_sequence(s->progress[slot].claim)));
	const uint8_t *payload = slot_at(s, slot) + sizeof(nt_chunk_header);
	slot_progress *p = &s->progress[slot];
	uint32_t from = p->saved, to = s->used[slot], len = to - from;
	uint8_t *body = s->buf + sizeof(nt_chunk_header);
	memcpy(body, payload + from, len);
	/* Pieces are whole words at the top level: one that ends after a compact record at a
	 * 4-byte boundary gets a zero word half, which ends its records (nt_record.h). */
	if (len % 8u != 0) {
		memset(body + len, 0, 4);
		len += 4;
	}
	const nt_chunk_clock after = p->after;
	nt_chunk_header hdr;
	memset(&hdr, 0, sizeof(hdr));
	hdr.kind = NT_KIND_CHUNK;
	hdr.slot_wrap = nt_chunk_slot_wrap(nt_claim_sequence(p->claim), s->layout.nslots);
	hdr.size_bytes = (uint32_t)sizeof(hdr) + len;
	hdr.thread = p->thread;
	hdr.event_count = (uint32_t)(after.events - p->events);
	hdr.claim = p->claim;
	hdr.base_ticks = p->ticks;
	hdr.first_event = p->first_event + p->events;
	memcpy(s->buf, &hdr, sizeof(hdr));
	/* Compressed when that is smaller (nt_zchunk.h), here on the saver's thread. */
	size_t plain = sizeof(hdr) + len;
	size_t z = compress ? nt_zchunk_encode(s->zenc, s->buf, plain, s->zbuf, plain) : 0;
	if (!append(s, out, z ? s->zbuf : s->buf, z ? z : plain))
		return 0;
	s->bytes_in += plain;
	s->bytes_out += z ? z : plain;
	p->ticks = after.ticks;
	p->events = (uint32_t)after.events;
	p->saved = to;
	p->held_since = 0;
	s->events += hdr.event_count;
	if (!(p->claim & 1u))
		s->full[(*nfull)++] = slot;
	return 1;
}

int nt_arena_saver_save_all(nt_arena_saver *s, const nt_saver_output *out, uint64_t *events)
{
	s->cut_all = 1;
	int err = nt_arena_saver_save(s, out, events);
	s->cut_all = 0;
	return err;
}

int nt_arena_saver_save(nt_arena_saver *s, const nt_saver_output *out, uint64_t *events)
{
	uint64_t before = s->events;
	uint32_t n = 0, nfull = 0;
	if (events != NULL)
		*events = 0;
	if (s->failure != 0)
		return s->failure;
	if (s->hold_ns != 0) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s->now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1; /* never 0 */
	}
	/* 1. Find the chunks, then measure them. */
	if (!find_slots(s))
		return s->failure;
	measure_slots(s, &n, &nfull);
	/* 2. The durable records the measured ones use. */
	save_durable(s, out);
	/* 3. The chunk pieces, in claim order. */
	qsort(s->order, n, sizeof(*s->order), by_sequence);
	for (uint32_t i = 0; i < n && s->failure == 0; i++)
		save_piece(s, out, s->order[i].slot, &nfull);
	if (events != NULL)
		*events = s->events - before;
	if (s->failure != 0)
		return s->failure;
	/* 4. Commit: the output is consistent up to here (a crash after this point loses
	 *    nothing this save wrote), and only now may writers reuse the slots it emptied. */
	if (out->commit != NULL)
		out->commit(out->ctx, s->end);
	for (uint32_t i = 0; i < nfull; i++)
		__atomic_store_n(saved_claim_word(s, s->full[i]), s->progress[s->full[i]].claim,
				 __ATOMIC_RELEASE);
	return 0;
}
