/*
 * nt_reader_internal.h - the reader's state, shared by its mechanisms (not installed).
 *
 * reader/decode from the bottom up; each file calls only files on its own line or below:
 *   state and helpers  this header, nt_reader_error.c (nt_reader_fail), nt_reader_frame.c
 *                      (top-level records), nt_reader_durable.c, nt_reader_clock.c,
 *                      nt_reader_access.c (accessors), nt_follow_snapshot.c,
 *                      nt_reader_decoder.c (the spare zstd decoder)
 *   mechanisms         nt_reader_open.c (one archive), nt_reader_count.c, nt_reader_ahead.c,
 *                      nt_reader_visit.c, then nt_reader_many.c, nt_reader_time.c and
 *                      nt_reader_cursor.c (which drives nt_reader_time.c)
 *   top                nt_reader.c (every call that differs for one archive and for many),
 *                      nt_reader_follow.c (built on the public calls)
 *
 * Errors. A public call that fails returns NULL (a pointer), -1 (a status) or 0 (a count)
 * and, where it takes an nt_reader_error, fills it through nt_reader_fail(): one line,
 * "<input>: <problem>", and the offset. Damage inside an archive that opened fails no call:
 * a visit reports it to on_error. Inside the folder: a function that can only run out of
 * memory returns 1 or 0; one with several outcomes returns an enum (nt_frame,
 * durable_result, open_step); a problem found in the input is a static string, returned
 * (NULL: none) by a function whose work is to find it, or through `const char **why` by one
 * that returns something else (a size, a yes or no); a visit's steps return -1 to stop it.
 */
#ifndef NT_READER_INTERNAL_H
#define NT_READER_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <nanotrace/nanotrace_reader.h>
#include "format/nt_archive_header_decode.h"
#include "format/nt_record.h"
#include "format/nt_unaligned.h"
#include "format/nt_zchunk.h"

typedef struct reader_string {
	const char *str; /* NUL-terminated copy in the pool; NULL = index not defined */
	uint32_t len;
} reader_string;

typedef struct reader_callsite {
	uint32_t category, name, file, line; /* string indices, validated at definition */
	uint32_t repo;                       /* Trace2 repository id + 1; 0 = none */
	int defined;
	/* The CallSiteArgs record's arguments (compact events' values), validated at definition:
	 * names are defined strings, types those a compact value can have. */
	uint32_t nargs;
	uint16_t arg_names[NT_MAX_CALLSITE_ARGS];
	uint8_t arg_types[NT_MAX_CALLSITE_ARGS];
} reader_callsite;

/* A reader of many processes (nt_reader_many.c): the sections, each an archive opened on
 * its own, and what was found about the inputs as wholes. */
typedef struct reader_problem {
	uint64_t offset;
	char *message; /* "<file>: <problem>" */
} reader_problem;

/* Where a many-process reader packs its sections' readers (nt_reader_pack.c): blocks
 * freed together at its close. */
typedef struct nt_reader_slab {
	struct nt_reader_slab_block *head;
	size_t bytes; /* of all its blocks */
} nt_reader_slab;

/* A section opened on demand (nt_reader_lazy.c): what a visit needs to open it again, and
 * what the reader's calls need while it is closed. Its string pool is kept for the
 * reader's life, and every reader of it opened later points its strings there, so that an
 * event's names stay valid as long as a plain archive's do. */
typedef struct lazy_section {
	int lazy;                  /* 0: open for the reader's life (sections[i].reader) */
	const uint8_t *data;       /* its archive, in a mapping the many-process reader owns */
	size_t size;
	const char *pool;          /* its strings as the first open laid them out */
	size_t pool_len;
	uint64_t blocked_waits;
	nt_reader_thread *threads; /* its threads as its reader had them (names in the pool) */
	int64_t *keys;             /* each one's first chunk's base time, INT64_MAX for none: what
	                              a time-ordered merge waits by */
	uint32_t thread_limit;     /* its nt_reader_thread_index_limit */
} lazy_section;

/* The sections' headers added up as they open (nt_reader_merge.c): the reader's, or a
 * thread's that opens a range of a bundle's sections, added to the reader's after. */
typedef struct open_totals {
	nt_archive_info first;   /* the earliest section's header */
	int have_first;
	nt_archive_info sum;     /* every section's counts summed */
	nt_reader_summary summary;
	uint32_t max_category_len, max_name_len, max_event_name_len;
	uint64_t zchunks, plain_chunk_bytes; /* nt_reader_get_compression's sums */
} open_totals;

typedef struct reader_many {
	nt_reader_section *sections;
	size_t nsections, sections_cap;
	lazy_section *lazy;       /* one per section, NULL until a section is kept closed */
	size_t lazy_cap;
	nt_reader_slab kept;      /* what the closed sections keep */
	int sections_mode;        /* NT_SECTIONS_*: NANOTRACE_READER_SECTIONS */
	open_totals totals;       /* the sections' headers as they open, into m->info at the end */
	pthread_mutex_t pin_lock; /* nt_many_section_pin's: sections[i].reader set once */
	/* A closed section's reader given back, whose allocations the next section opened
	 * takes over (nt_section_recycle); exchanged atomically, NULL when none. */
	nt_reader *spare_section;
	reader_problem *problems;
	size_t nproblems, problems_cap;
	struct reader_map {
		const uint8_t *data;
		size_t size;
	} *maps;                 /* bundles mapped here: their sections read slices of them */
	size_t nmaps, maps_cap;
	char **sources;          /* the input files' names: the sections' source */
	size_t nsources, sources_cap;
	nt_reader_slab slab;     /* the sections' readers, packed */
} reader_many;

/* The archive's clock conversion, prepared once at open (nt_reader_prepare_clock) for the
 * per-event fast path below; nt_reader_ticks_to_ns() and nt_reader_ns_to_wall() stay the
 * exact definitions, which the fast path gives way to whenever it could differ. */
typedef struct nt_clock_conv {
	int identity;          /* the ticks are CLOCK_MONOTONIC nanoseconds */
	uint64_t start_ticks;
	int64_t start_ns;      /* start_monotonic_ns, when it is at most INT64_MAX */
	uint64_t num, den;     /* ns = start_ns + (ticks - start_ticks) * num / den; den 0: none */
	int wall_ok;           /* both start times are at most INT64_MAX */
	int64_t wall_offset;   /* start_realtime_ns - start_monotonic_ns */
} nt_clock_conv;

/* What an open found wrong, kept for the visits to report first: allocated at the first
 * finding (most archives have none, and a bundle holds a reader per section). */
#define NT_READER_MAX_OPEN_DAMAGE 16
typedef struct reader_notes {
	struct {
		uint64_t offset;
		const char *message;
	} damage[NT_READER_MAX_OPEN_DAMAGE];
	/* The events the header's count says are missing from the chunks (a file cut short),
	 * and the header's account of a stopped save that does not add up, in words: two of the
	 * damage messages. */
	char truncation[200];
	char save_lie[160];
} reader_notes;

/* Records counted by kind, a few kinds at most (full: more kinds than that were met, and
 * the count is not kept). */
#define NT_KIND_TALLY_KINDS 6
typedef struct nt_kind_tally {
	uint8_t kind[NT_KIND_TALLY_KINDS];
	uint8_t n, full;
	uint64_t count[NT_KIND_TALLY_KINDS];
} nt_kind_tally;

/* Pool offsets are turned into pointers once the pool stops moving. Every list here is
 * O(the records that define), never O(the highest index defined): a hostile archive names
 * an index at the top of its field while defining one entry (a table by index of such an
 * archive is a fresh allocation whose untouched pages cost nothing, and a walk of it at
 * open would read every page: 3.4 MB of call sites for index 65,535). */
typedef struct pending_names {
	/* Every string and thread definition, in file order (a later one of an index names
	 * it). r->thread_order is grown as thread indices are first defined and sorted at the
	 * walk's end (order_cap: its entries allocated). */
	struct pending_name {
		uint32_t index;
		long at; /* pool offset of the string, or of the thread's name */
	} *string_defs, *thread_defs;
	size_t nstring_defs, string_defs_cap, nthread_defs, thread_defs_cap, order_cap;
	uint32_t string_limit;   /* highest defined string index + 1 (0: none) */
	/* Call-site indices as first defined, and the highest + 1 (0: none). */
	uint32_t *callsite_defs;
	size_t ncallsite_defs, callsite_defs_cap;
	uint32_t callsite_limit;
} pending_names;

struct nt_reader {
	const uint8_t *data;
	size_t size;
	int mapped;
	int packed;             /* its tables live in a many-process reader's slab */
	char *name;             /* as given to open (NUL-terminated, owned) */
	nt_archive_info info;
	nt_clock_conv clock;
	uint64_t records_start; /* first record, after the header */

	/* Tables by index, grown with nt_grow (reader/common/nt_grow.h): n* is the number of
	 * entries allocated, so an index below it may be looked up. */
	reader_string *strings; /* [0] unused */
	size_t nstrings;
	char *pool;             /* NUL-terminated copies of all strings */
	size_t pool_len, pool_cap;

	nt_reader_thread *threads; /* [0] unused; name == NULL = not defined */
	size_t nthreads;
	uint32_t thread_limit;     /* highest defined thread index + 1 (0: none) */
	uint32_t *thread_order;    /* the defined indices, ascending: nt_reader_thread_at() */

	nt_reader_process *processes; /* defined == 0: no record */
	size_t nprocesses;

	reader_callsite *callsites;
	size_t ncallsites;
	/* The highest string and call-site indices defined + 1 (0: none): what a table uses. */
	uint32_t string_limit, callsite_limit;

	uint32_t max_category_len, max_name_len, max_event_name_len;

	/* Arena layout: the valid chunk slots (at most nslots), in time order. */
	int arena;
	struct arena_chunk {
		uint64_t offset, sequence, base_ticks, first_event;
		uint32_t thread;
	} *chunks;
	uint32_t nchunks;
	uint64_t chunk_size;
	/* Arena layout of a streaming process: the saved stream [records_start, size) comes
	 * first; covered[thread] is the event ordinal it holds up to, so the arena's copies of
	 * those events are skipped. */
	int tail;
	uint64_t *covered;
	size_t ncovered;   /* entries of covered: the saved stream may define threads later */
	size_t mapped_size;

	/* Damage found while opening (notes->damage[0 .. ndamage - 1]); the visit reports it
	 * first. notes_lost: memory ran out for notes (the open fails). */
	reader_notes *notes;
	uint32_t ndamage;
	int notes_lost;
	/* The events the top-level chunks' headers count. */
	uint64_t chunk_events;
	/* The record stream's first chunk record and the end of its last (both the file's size
	 * when it has none): nt_chunks_from/nt_chunks_to. */
	uint64_t chunks_from, chunks_to;
	/* The records before the first chunk record and after the last (the durable ones the
	 * open read and validated), by kind, and those after the last chunk seen while the open
	 * walks: a stream-order visit of a stream nt_stream_whole walks from chunks_from to
	 * chunks_to and counts these from here (nt_count_outside). Not used otherwise. */
	nt_kind_tally outside, after_chunk;
	/* A live oneshot or circular arena: the events its closed chunks' headers count (its
	 * header's events_written counts those that closed, overwritten ones included). */
	uint64_t closed_events;
	nt_reader_summary summary;
	/* Compressed chunks found while opening, and the chunk bytes decompressed (a plain
	 * chunk counts its own size): nt_reader_get_compression(). */
	uint64_t zchunks, plain_chunk_bytes;

	/* Many processes: the tables above are the sections' renumbered (thread and process
	 * names point into the sections' readers), data is NULL, and the visit walks the
	 * sections. NULL for one plain archive, which describes itself as section 0 in `self`. */
	reader_many *many;
	nt_reader_section self;
	/* A section of a many-process reader: its visits report offsets in the file that holds
	 * it (file_base + offset) and name it (by its reader name) in damage messages. */
	int in_many;
	uint64_t file_base;
	/* A bundle's section (nt_section_over): its tables keep the slack of their growth, and
	 * the walk's pending names (`pending`) keep their arrays, for nt_section_recycle. */
	int untrimmed;
	pending_names pending;
	/* nt_reader_set_decompress_ahead(): 0 = never called (the environment, then the
	 * default rule); else the buffers asked + 1 (1: off; NT_READER_AHEAD_AUTO stores 0). */
	int ahead_setting;
	/* A zstd decoder kept between visits and counts (nt_reader_decoder.c); NULL: none. */
	nt_zchunk_decoder *spare_decoder;
	/* A section's many-process reader, whose spare decoder its own visits share (20,000
	 * sections visited one by one kept 20,000 decoders, 1.7 GB); NULL otherwise. */
	const nt_reader *decoder_owner;
	/* nt_reader_count_records()'s answer (256 counts), kept by the first stream-order
	 * visit that read every record without damage (nt_reader_cursor.c), so --stats
	 * decompresses each chunk once; NULL until then. Set once, atomically. */
	uint64_t *counted;
};

/* The header decoder is format/'s (nt_archive_header_decode.h), shared with the manager. */


/* nt_reader_error.c: fills *err (when not NULL) with "<name>: <fmt ...>" and `off`: the one
 * way a public call of the reader says why it failed. */
void nt_reader_fail(nt_reader_error *err, const char *name, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* nt_reader_decoder.c: a decoder for one visit or count of r (the one of a many-process
 * reader, for all its sections): the reader's spare, or a new one (NULL when memory runs
 * out); given back when done (NULL is nothing), kept as the spare or freed when another
 * already is. Safe from any thread. nt_reader_decoder_free frees the spare (at close). */
nt_zchunk_decoder *nt_reader_decoder_take(const nt_reader *r);
void nt_reader_decoder_give(const nt_reader *r, nt_zchunk_decoder *d);
void nt_reader_decoder_free(nt_reader *r);

/* nt_reader_open.c: map a regular, non-empty file read-only; 0 and *err on failure. */
int nt_map_path(const char *path, const uint8_t **data, size_t *size, nt_reader_error *err);
/* A reader over `data` (which it unmaps at close when `mapped`), named `name`; NULL and
 * *err when it is no archive (a mapping is unmapped then too). Not for bundles. */
nt_reader *nt_reader_over(const uint8_t *data, size_t size, int mapped, const char *name,
			  nt_reader_error *err);
/* The same for a section of a bundle (in memory the many-process reader owns): its tables
 * keep the slack of their growth, which trimming gives back with four reallocs an open, a
 * twentieth of --stats's time on 20,000 sections. A section is closed again once read, or
 * packed (nt_reader_pack copies what the tables use), so nothing keeps the slack long. */
nt_reader *nt_section_over(nt_reader **spare, const uint8_t *data, size_t size,
			   const char *name, nt_reader_error *err);
/* Closes a section's reader, keeping its tables' memory (emptied) in *spare for the next
 * nt_section_over(spare, ...) to take: a bundle's sections are opened one after another,
 * twice each, and the ten allocations and frees of each open were an eighth of --stats's
 * time on 20,000 sections. A table as large as nt_grow allocates fresh is freed (a sparse
 * one's untouched pages would be written by emptying it), as is the reader *spare held. A
 * reader not of nt_section_over, or packed, is closed as nt_single_close closes it. */
void nt_section_recycle(nt_reader **spare, nt_reader *r);
/* Frees a reader of one archive (nt_reader_over's; NULL is nothing). A packed one gives
 * back only what is its own (mapping, notes, covered table, spare decoder): its slab goes
 * with the many-process reader. */
void nt_single_close(nt_reader *r);
/* Frees the reader and the parts of it a pack moves (its name and tables): the rest of
 * nt_single_close for a reader that is not packed, and the old copy of one just packed. */
void nt_reader_free_tables(nt_reader *r);
/* Describes a plain archive as its own one section (r->self), from its tables. */
void nt_reader_describe_self(nt_reader *r);
/* nt_reader_section.header_notes of a decoded header. */
uint32_t nt_header_notes(const nt_archive_info *in);

/* nt_reader_lazy.c: sections opened on demand. A section of a bundle of more than
 * NT_SECTIONS_KEPT_OPEN sections is read once at open and closed (nt_many_close_now),
 * unless its archive is one a visit reads with what only its open finds (damage, an Arena
 * layout, Trace2 processes) or has a table by a sparse index. NANOTRACE_READER_SECTIONS=open
 * keeps every section open, =closed closes every one it can, in any bundle. */
#define NT_SECTIONS_KEPT_OPEN 64
enum { NT_SECTIONS_AUTO, NT_SECTIONS_OPEN, NT_SECTIONS_CLOSED };
int nt_many_sections_mode(void);
/* Does that rule close s, just opened, of a bundle of `bundle_sections` (0: not of a
 * bundle)? Then nt_many_close_now keeps what the reader's tables and its visits need (its
 * string pool, its threads, their first chunks) and closes it: -1 when memory runs out. */
int nt_many_section_may_close(const nt_reader *m, const nt_reader *s, size_t bundle_sections);
/* What it keeps goes into `kept`, its reader into *spare (nt_section_recycle): the reader's
 * own, or those of a thread opening a range of sections. */
int nt_many_close_now(nt_reader *m, uint32_t i, nt_reader_slab *kept, nt_reader **spare);
/* Section i's thread index limit, and its j-th thread (j < its summary.threads), open or
 * closed. */
uint32_t nt_many_section_thread_limit(const nt_reader *m, uint32_t i);
const nt_reader_thread *nt_many_section_thread(const nt_reader *m, uint32_t i, uint32_t j);
/* Is section i closed between visits? */
int nt_many_section_closed(const nt_reader *m, uint32_t i);
/* Section i's reader for one visit or count: its own when it is open for the reader's life,
 * else one opened now (NULL, and *why, when it cannot be, which a file that changed under
 * its mapping or memory running out cause); give it back with nt_many_section_done. A
 * reader opened now takes over the allocations of the one given back into *spare (NULL:
 * the reader's own slot, shared by every thread; a helper keeps its own, nearer). */
nt_reader *nt_many_section_open(const nt_reader *m, uint32_t i, nt_reader **spare,
				const char **why);
void nt_many_section_done(const nt_reader *m, uint32_t i, nt_reader *s, nt_reader **spare);
/* nt_reader_section_at's: section i opened for the reader's life; NULL when it cannot be. */
nt_reader *nt_many_section_pin(const nt_reader *m, uint32_t i);
/* The name a section's reader has, which its damage messages start with. */
void nt_many_section_label(const nt_reader_section *s, char *label, size_t n);

/* nt_reader_pack.c: r, just opened (no visit has run: no spare decoder, no count kept),
 * moved into one block of `slab` and its old parts freed; returns the packed reader, or r
 * itself when memory runs out or a table by index is a sparse one's (it is then closed as
 * before). nt_reader_slab_free frees
 * every block. */
nt_reader *nt_reader_pack(nt_reader *r, nt_reader_slab *slab);
void nt_reader_slab_free(nt_reader_slab *slab);
/* `n` bytes of `slab`, aligned as malloc's; NULL when memory runs out. */
void *nt_reader_slab_alloc(nt_reader_slab *slab, size_t n);
/* Every block of `from` moved into `to` (freed with it); `from` is empty after. */
void nt_reader_slab_adopt(nt_reader_slab *to, nt_reader_slab *from);
/* Points r's strings and thread names at `pool`, a copy of r->pool laid out the same. */
void nt_reader_use_pool(nt_reader *r, const char *pool);

/* nt_reader_count.c: adds the records of one archive, or of every section of a
 * many-process reader that opened, by kind, to counts. */
void nt_count_records(const nt_reader *r, uint64_t counts[256]);
/* nt_reader_count_blocked's walk (nt_reader_count.c): adds into per_thread[0..n) and
 * returns the BlockedRecords found. */
uint64_t nt_count_blocked(const nt_reader *r, nt_reader_blocked *per_thread, uint32_t n);
/* The count a stream-order visit of r makes as it goes (nt_reader_count.c), to be kept as
 * nt_count_records' answer: wanted when r keeps none yet and the visit walks what the
 * count walks (no Arena layout); each top-level record that frames goes to nt_count_top,
 * each record of a chunk that is no event to tally[kind] (chunk_cursor.tally); kept (1:
 * r owns `tally` now) only by a visit that met no damage, the first to finish. */
int nt_count_wanted(const nt_reader *r);
void nt_count_top(uint64_t *tally, uint8_t kind);
int nt_count_keep(nt_reader *r, uint64_t *tally);
/* The open's count of the records outside the chunk range (r->outside) added into tally
 * (NULL: nothing to add): 1, or 0 (nothing added) when the open could not keep it (more
 * kinds than it holds): the visit walks those records itself then. */
int nt_count_outside(const nt_reader *r, uint64_t *tally);

/* nt_reader_many.c: is this the start of a bundle? */
int nt_is_bundle(const uint8_t *data, size_t size);
/* A many-process reader of one bundle at `data` (unmapped at close when `mapped`). */
nt_reader *nt_many_open_bundle(const uint8_t *data, size_t size, int mapped, const char *name,
			       nt_reader_error *err);
/* A many-process reader of `n` (> 0) paths, each a file or a directory of archives. */
nt_reader *nt_many_open_paths(const char *const *paths, size_t n, nt_reader_error *err);
void nt_many_close(nt_reader *r);

/* nt_reader_merge.c: section s (its reader r, just opened) into the totals; a range's
 * totals into those of the sections before it; and, every section open, the reader's
 * tables and header made from theirs (1; 0 and *err when memory runs out). */
void nt_open_totals_add_section(open_totals *t, const nt_reader_section *s, const nt_reader *r);
void nt_open_totals_add(open_totals *to, const open_totals *later);
int nt_many_finish(nt_reader *m, nt_reader_error *err);

/* nt_reader_frame.c: the top-level records (format/nt_record.h's framing).
 * Size in bytes of the top-level record at `off` (RecordPrefix or LargePrefix), or 0 when it
 * is malformed or runs past the end; *why says which. */
uint64_t nt_record_size(const nt_reader *r, uint64_t off, const char **why);

/* After damage at `off`: the offset of the next plausible chunk header, or the file size. */
uint64_t nt_resync(const nt_reader *r, uint64_t off);

/* Is the top-level record at `off` (of `size` bytes) a chunk, plain or compressed
 * (CompressedChunk), whose header the archive can decode? Compressed: framing, codec and
 * the header copy are checked, not the frame (nt_zchunk_decode does that). */
int nt_chunk_header_ok(const nt_reader *r, uint64_t off, uint64_t size, const char **why);

/* Where the record stream a visit walks starts: an Arena layout without a saved stream has
 * none (the file's end). */
static inline uint64_t nt_stream_start(const nt_reader *r)
{
	return r->arena && !r->tail ? r->size : r->records_start;
}

/* Where a scan for a thread's chunks looks: the whole record stream, or, when the open
 * found nothing damaged (and no Arena layout: its slots are not in the stream), only from
 * its first chunk record to the end of its last. Before and after them lie the durable
 * records, which the open has read and validated: a scan for a chunk would validate them
 * again for every thread (three times per section of a bundle in time order), and the same
 * framing from the same start finds the same records. */
static inline int nt_stream_whole(const nt_reader *r)
{
	return !r->arena && r->summary.open_errors == 0;
}
static inline uint64_t nt_chunks_from(const nt_reader *r)
{
	return nt_stream_whole(r) ? r->chunks_from : nt_stream_start(r);
}
static inline uint64_t nt_chunks_to(const nt_reader *r)
{
	return nt_stream_whole(r) ? r->chunks_to : r->size;
}

/* The chunk header of the chunk record at `off` (a Chunk's own, a CompressedChunk's copy,
 * 8 bytes in: 8-byte aligned either way). Only after nt_chunk_header_ok. */
static inline const nt_chunk_header *nt_chunk_at(const nt_reader *r, uint64_t off)
{
	const uint8_t *p = r->data + off;
	return (const nt_chunk_header *)(const void *)(p[0] == NT_KIND_ZCHUNK
							  ? p + offsetof(nt_zchunk_record, chunk)
							  : p);
}

/* Size of the top-level record at `off` as a visit takes it: nt_record_size, and for a chunk
 * (plain or compressed) nt_chunk_header_ok too; 0 and *why when it is damaged. */
static inline uint64_t nt_top_record_size(const nt_reader *r, uint64_t off, const char **why)
{
	uint64_t size = nt_record_size(r, off, why);
	if (size != 0 && nt_kind_is_chunk(r->data[off]) && !nt_chunk_header_ok(r, off, size, why))
		return 0;
	return size;
}

/* What reading a durable record came to. Damage is reported and the walk goes on; running
 * out of memory ends the open. */
typedef enum durable_result {
	DURABLE_OK = 0,
	DURABLE_DAMAGED,   /* *why says what is wrong */
	DURABLE_NO_MEMORY,
} durable_result;


/* A durable record (string, thread, process, call site, call-site arguments) into the
 * tables (nt_reader_durable.c); other kinds are not durable tables and are left alone. */
durable_result nt_durable_record(nt_reader *r, uint64_t off, uint64_t size, pending_names *pn,
				 const char **why);

/* nt_reader_clock.c: the clock conversion's fast path (below), from the header. */
void nt_reader_prepare_clock(nt_reader *r);

/* nt_reader_ticks_to_ns() for a tick at or after the start, in one multiply and one
 * 128-by-64 division (x86-64's divq: a __int128 division is a library call, a sixth of a
 * decode); the exact function for anything else. */
static inline int64_t nt_ticks_to_ns(const nt_reader *r, uint64_t ticks)
{
	const nt_clock_conv *c = &r->clock;
	if (c->identity)
		return (int64_t)ticks;
#if defined(__x86_64__)
	uint64_t d = ticks - c->start_ticks;
	if (ticks >= c->start_ticks && d <= (uint64_t)INT64_MAX && c->den != 0) {
		unsigned __int128 x = (unsigned __int128)d * c->num;
		uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x, q, rem;
		if (hi < c->den) { /* the quotient fits 64 bits: divq cannot fault */
			__asm__("divq %4" : "=a"(q), "=d"(rem) : "a"(lo), "d"(hi), "rm"(c->den));
			(void)rem;
			int64_t out;
			if (q <= (uint64_t)INT64_MAX && !__builtin_add_overflow(c->start_ns, (int64_t)q, &out))
				return out;
		}
	}
#endif
	return nt_reader_ticks_to_ns(r, ticks);
}

/* nt_reader_ns_to_wall() without 128-bit arithmetic where nothing can overflow. */
static inline int64_t nt_ns_to_wall(const nt_reader *r, int64_t monotonic_ns)
{
	int64_t out;
	if (r->clock.wall_ok && !__builtin_add_overflow(monotonic_ns, r->clock.wall_offset, &out))
		return out;
	return nt_reader_ns_to_wall(r, monotonic_ns);
}

#endif /* NT_READER_INTERNAL_H */
