/*
 * nanotrace_reader.h - read nanotrace archives, which are treated as untrusted input.
 *
 *     nt_reader_error err;
 *     nt_reader *r = nt_reader_open("out.ntrace", &err);
 *     if (!r) { fprintf(stderr, "%s\n", err.message); exit(2); }
 *     nt_reader_callbacks cb = { .on_event = print_event };
 *     nt_reader_visit(r, &cb, ctx, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP);
 *     nt_reader_close(r);
 *
 * Both archive layouts are read: Stream (what nt_finish() writes) and Arena (the live
 * memory-mapped arena a killed process leaves; its chunks are ordered by start time, and
 * per thread by event ordinal; in streaming mode the saved stream comes first and arena
 * events it already holds are skipped).
 *
 * Opening maps the file, verifies the ArchiveHeader FlatBuffer, then walks the record stream
 * once, checking every record's kind, size and references against the file bounds and the
 * durable tables (strings, threads, call sites). Visiting decodes the chunks and delivers
 * events to callbacks, in stream order or in timestamp order (a k-way merge of the threads'
 * chunk streams). Nothing read from the file is trusted: every size and index is checked
 * before use, and a problem is reported with its byte offset.
 *
 * Memory is O(threads + strings + call sites), never O(events): the file is mapped, not
 * loaded, and the merge keeps one cursor per thread.
 *
 * MANY PROCESSES
 *   One reader also holds many processes: a bundle (the archive trace-record writes,
 *   format/nt_bundle.h: one section per provider), a directory of archives, or several
 *   files given together (nt_reader_open_many). Each process is a *section*, an archive
 *   opened on its own (nt_reader_section_at; a plain archive is one section). On such a
 *   many-process reader every function below answers for all sections together:
 *   - threads are numbered globally: a section's thread i is thread_base + i (thread_base
 *     is the previous sections' nt_reader_thread_index_limit() summed), each names its
 *     section, and pid is the process's; Trace2 processes likewise (process_base);
 *   - nt_reader_visit() in NT_ORDER_TIME merges every thread of every section by time_ns
 *     (CLOCK_MONOTONIC, which all processes of one machine share); NT_ORDER_STREAM visits
 *     section after section. Event and damage offsets are byte offsets in the file that
 *     holds the section, and damage messages start with the file and the section;
 *   - nt_reader_info() is a summary: the earliest section's clock and start (so times
 *     count from the first process's start), the loss counters and the writers' waits for
 *     the saver (blocked_*) summed over the sections, blocking_timeout_us the largest,
 *     pid 0 and process name "" (see the sections for each process's own header);
 *     nt_reader_ticks_to_ns() uses that clock: convert a section's ticks with the section's
 *     own reader;
 *   - the summary and nt_reader_count_records() are sums over the sections.
 *   A section whose archive cannot be opened is kept with its reason, and reported to
 *   on_error first by every visit, as are a bundle cut short and a recording that ended
 *   early (END frame MANAGER_LOST); the other sections are read in full. Opening costs
 *   O(sections + their threads, strings and call sites); memory is never O(events). A
 *   bundle of 256 sections or more is opened on two threads when the process may run on
 *   two CPUs (a thread that the open starts and joins before it returns counts the
 *   bundle's sections while the open reads the first ones, then opens half of those left;
 *   NANOTRACE_READER_AHEAD=off keeps it to one, a number forces it from 4 sections on):
 *   the reader is the same either way.
 */
#ifndef NANOTRACE_READER_H
#define NANOTRACE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nt_archive_header.h"
#include "nt_format.h"
#include "nt_version.h" /* NT_VERSION_STRING, NT_VERSION_MAJOR ... NT_VERSION_NUMBER */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nt_reader nt_reader;

/* The version of the reader library the program runs with, "MAJOR.MINOR.PATCH" (the
 * NT_VERSION_STRING of its build, which may differ from the header's). Cost: none. */
const char *nt_reader_version(void);

/* Where and what: filled by nt_reader_open() when it fails. */
typedef struct nt_reader_error {
	uint64_t offset;   /* byte offset of the problem in the file, if any */
	char message[512]; /* one line: "<path>: <problem> at byte <offset>" */
} nt_reader_error;

typedef struct nt_reader_thread {
	uint32_t index;
	uint32_t pid;
	uint32_t tid;
	const char *name; /* NUL-terminated; "" when the archive named none */
	uint32_t process; /* index of its Trace2 process (nt_reader_process_at) */
	uint32_t section; /* its section (nt_reader_section_at): 0 in a plain archive */
} nt_reader_thread;

/* A Trace2 process (ProcessRecord): the writer's archive has one (index 0) once Trace2 is
 * initialized; an imported Trace2 log has one per SID. */
typedef struct nt_reader_process {
	uint32_t index;
	uint32_t pid;
	uint32_t flags;       /* NT_PROCESS_BRIEF, NT_PROCESS_UTC_OFFSET_KNOWN */
	uint64_t start_ticks; /* t_abs counts from here */
	int32_t utc_offset;   /* seconds east of UTC, when NT_PROCESS_UTC_OFFSET_KNOWN */
	const char *sid;      /* NUL-terminated; may hold raw bytes from the archive */
	uint32_t sid_len;
	int defined;
} nt_reader_process;

typedef struct nt_reader_arg {
	const char *name; /* NUL-terminated */
	uint8_t type;     /* NT_ARG_* (nt_format.h); 32-bit types are widened below */
	union {
		int64_t i64;  /* NT_ARG_INT32, NT_ARG_INT64 */
		uint64_t u64; /* NT_ARG_UINT32, NT_ARG_UINT64, NT_ARG_BOOL, NT_ARG_POINTER */
		double f64;   /* NT_ARG_DOUBLE */
		struct {
			const char *ptr; /* NOT NUL-terminated; raw bytes from the archive */
			uint32_t len;
		} str;            /* NT_ARG_STRING, NT_ARG_STRING_REF */
		struct {
			const uint8_t *ptr; /* count x (uint32 length, bytes), validated */
			uint32_t count;
			uint32_t bytes;
		} list;           /* NT_ARG_STRING_LIST: walk it with nt_reader_list_next() */
		struct {
			const char *ptr;   /* the value's JSON text as written; NOT NUL-terminated,
			                      raw bytes, not validated as JSON */
			uint32_t len;
			uint32_t position; /* where its key stood among the line's keys */
		} json;           /* NT_ARG_JSON, a Trace2 key this version does not know. ptr and
			             len are also value.str's (a common initial sequence), so code
			             that shows strings shows it as a string */
	} value;
} nt_reader_arg;

/* Next element of a NT_ARG_STRING_LIST argument: *pos starts at 0; returns 0 after the last
 * element, else sets *s and *len (raw bytes, not NUL-terminated). */
int nt_reader_list_next(const nt_reader_arg *a, uint32_t *pos, const char **s, uint32_t *len);

/* An event, valid during the callback (or until the cursor's next call). The library fills
 * it; callers only read it, so fields are added at its end without breaking a program built
 * against an older header (id and id_scope came with format 2.2). */
typedef struct nt_reader_event {
	uint8_t kind; /* NT_KIND_BEGIN, _END, _INSTANT, _COMPLETE, _COUNTER, an async or flow
	                 event (NT_KIND_ASYNC_BEGIN ... NT_KIND_FLOW_END, or'ed with
	                 NT_KIND_ID_GLOBAL when its id is global: nt_kind_id_base() drops it),
	                 or a Trace2 message (NT_KIND_T2_FIRST + nt_t2_event: nt_kind_is_t2()) */
	const char *category, *name, *file; /* NUL-terminated; Trace2: "" = none */
	uint32_t line;
	uint32_t callsite;
	uint32_t callsite_repo; /* Trace2: the call site's repository id + 1; 0 = none */
	const nt_reader_thread *thread;
	uint64_t ticks;       /* raw clock value; for Complete, the start */
	int64_t time_ns;      /* CLOCK_MONOTONIC ns; for Complete, the start */
	int64_t wall_ns;      /* CLOCK_REALTIME ns since the Unix epoch */
	uint64_t duration_ns; /* Complete only */
	uint32_t arg_count;
	const nt_reader_arg *args;
	uint64_t offset;      /* byte offset of the record in the file */
	uint64_t id;          /* async and flow events: their id; 0 for the others */
	uint8_t id_scope;     /* NT_ID_PROCESS or NT_ID_GLOBAL for async and flow events (a
	                         process id is unique within ->thread->pid only), else NT_ID_NONE */
} nt_reader_event;

/* Events a thread lost (dropped, or overwritten in circular mode) between two of its chunks,
 * found from the chunks' event ordinals. Delivered just before the first event after the
 * gap. Losses after a thread's last chunk show only in the header's counters. */
typedef struct nt_reader_gap {
	const nt_reader_thread *thread;
	uint64_t events;  /* how many events are missing */
	int64_t time_ns;  /* the gap ends at or before this time (the next chunk's start) */
	uint64_t offset;  /* byte offset of the chunk after the gap */
} nt_reader_gap;

typedef struct nt_reader_callbacks {
	/* Each event. Return nonzero to stop the visit (nt_reader_visit returns 1). */
	int (*on_event)(void *ctx, const nt_reader_event *event);
	/* Corruption: what is wrong and where. The visit goes on or stops per nt_corrupt_policy. */
	void (*on_error)(void *ctx, uint64_t offset, const char *message);
	/* Lost events, where they were lost (may be NULL). */
	void (*on_gap)(void *ctx, const nt_reader_gap *gap);
} nt_reader_callbacks;

typedef enum nt_order {
	NT_ORDER_STREAM = 0, /* file order: chunk by chunk */
	NT_ORDER_TIME = 1,   /* timestamp order across threads */
} nt_order;

typedef enum nt_corrupt_policy {
	NT_ON_CORRUPT_STOP = 0, /* stop at the first damaged record */
	NT_ON_CORRUPT_SKIP = 1, /* skip the damaged record or chunk and go on */
} nt_corrupt_policy;

/* Open and validate an archive. Returns NULL and fills *err (if not NULL) when the file is
 * missing, unreadable, empty, truncated, or its header or durable records are damaged.
 * A damaged chunk is not an open error: it is reported when visited. path == NULL fails.
 * A bundle (trace-record's archive of many processes, recognised by its preamble) opens as
 * a many-process reader, exactly as nt_reader_open_many() opens it. */
nt_reader *nt_reader_open(const char *path, nt_reader_error *err);

/* The same over a caller-owned buffer, which must outlive the reader (tests, fuzzing). A
 * bundle in memory opens as a many-process reader too. */
nt_reader *nt_reader_open_memory(const void *data, size_t size, const char *name,
				 nt_reader_error *err);

/* Open files, bundles and directories as one reader (see MANY PROCESSES): a directory
 * stands for its non-empty regular files, by name (names starting with '.' skipped); a
 * bundle for its sections; any other file is one section. One path naming a plain archive
 * opens exactly as nt_reader_open(). Returns NULL and fills *err (naming the path) when
 * paths is NULL, n is 0, a path cannot be opened or read, a directory holds no file, or a
 * bundle's preamble is damaged; otherwise a file (of a directory or of several paths) or a
 * bundle's section whose archive is damaged is kept as a section that could not be opened
 * (nt_reader_section.reader == NULL, .error says why) and the others are read.
 * Cost: O(paths + files + sections + their durable tables); each file is mapped. */
nt_reader *nt_reader_open_many(const char *const *paths, size_t n, nt_reader_error *err);

/* Closes every section's reader and frees the zstd decoder (a context of ~100 KiB and a
 * 64 KiB buffer) that the reader keeps from the first visit or count that decompressed a
 * chunk, so that later visits and counts do not make their own (visits of its sections'
 * readers share it too). NULL is ignored. */
void nt_reader_close(nt_reader *r);


/* The decoded header (format, clock, process, geometry, final state and loss counters). */
const nt_archive_info *nt_reader_info(const nt_reader *r);

/* Name of the archive, as given to open. */
const char *nt_reader_name(const nt_reader *r);

/* Threads the archive defines (thread records), and the i-th of them in index order
 * (0 <= i < count), or NULL for i >= count. O(1) each (the order is built at open).
 * r == NULL: 0 and NULL. */
uint32_t nt_reader_thread_count(const nt_reader *r);
const nt_reader_thread *nt_reader_thread_at(const nt_reader *r, uint32_t i);

/* The thread whose nt_reader_thread.index is `index` (what an event's thread has), or NULL
 * when the archive defines none there or r == NULL. O(1). */
const nt_reader_thread *nt_reader_thread_by_index(const nt_reader *r, uint32_t index);

/* One past the highest thread index the archive defines (0 when none, or r == NULL): a
 * table indexed by nt_reader_thread.index needs this many entries, and every event's and
 * gap's thread has an index below it. O(1). */
uint32_t nt_reader_thread_index_limit(const nt_reader *r);

/* Trace2 processes: indices 0 .. count - 1; NULL for an index with no record. r == NULL: 0
 * and NULL. */
uint32_t nt_reader_process_count(const nt_reader *r);
const nt_reader_process *nt_reader_process_at(const nt_reader *r, uint32_t index);

/* Longest category name and thread name over the archive (for column alignment). */
uint32_t nt_reader_max_category_len(const nt_reader *r);
uint32_t nt_reader_max_name_len(const nt_reader *r);
/* Longest event name (a call site's name) over the archive's call sites; 0 when there are
 * none, or r == NULL. O(1): computed at open. */
uint32_t nt_reader_max_event_name_len(const nt_reader *r);

/* Counts from the open-time walk. */
typedef struct nt_reader_summary {
	uint64_t file_bytes;
	uint64_t header_bytes;
	uint64_t durable_bytes;
	uint64_t chunk_bytes;  /* chunk headers and payload */
	uint64_t chunks;
	uint32_t strings, threads, callsites;
	uint64_t open_errors;  /* damaged records skipped while opening (skip policy) */
} nt_reader_summary;
void nt_reader_get_summary(const nt_reader *r, nt_reader_summary *out);

/* Compression of the chunks (CompressedChunk records, zstd): *compressed_chunks gets how many
 * of summary.chunks are compressed, *chunk_bytes_uncompressed what summary.chunk_bytes (the
 * bytes they take in the file) would be uncompressed; summed over every section of a
 * many-process reader. Either pointer may be NULL; r == NULL gives zeros. O(sections). */
void nt_reader_get_compression(const nt_reader *r, uint64_t *compressed_chunks,
			       uint64_t *chunk_bytes_uncompressed);

/* One process of a reader (see MANY PROCESSES). */
typedef struct nt_reader_section {
	uint32_t index;        /* 0 .. nt_reader_section_count() - 1 */
	uint32_t pid;          /* the bundle frame's pid; else the archive header's (0: none) */
	uint32_t provider_id;  /* the manager's number for the provider; 0 outside a bundle */
	uint8_t end_state;     /* NT_SECTION_* (format/nt_bundle.h); 0 outside a bundle */
	uint8_t mode;          /* NT_MODE_*: the frame's, else the header's */
	const char *end_text;  /* the state's name ("finished", "killed", ...; "" for 0) */
	const char *name;      /* the provider's name, else the archive's process name */
	const char *message;   /* what the manager found ("" = nothing) */
	const char *source;    /* the file the section was read from */
	uint64_t offset;       /* where its archive starts in that file (0: a plain file) */
	uint64_t size;         /* bytes of its archive */
	int64_t end_wall_ns;   /* the frame's CLOCK_REALTIME end; 0 outside a bundle */
	nt_reader *reader;     /* its archive as a reader of its own, owned by r; its visits
	                          also give offsets in the file and name the section in
	                          damage messages; NULL when it could not be opened */
	const char *error;     /* why it could not be opened ("" when it was) ... */
	uint64_t error_offset; /* ... and where in the file */
	const nt_archive_info *info; /* its header; NULL when it could not be opened */
	uint32_t thread_base;  /* its thread i is the reader's thread thread_base + i */
	uint32_t process_base; /* its Trace2 process i is the reader's process_base + i */
	nt_reader_summary summary;   /* its counts (zero when it could not be opened) */
	/* From its header, kept so that a list of many sections needs no header decoded for
	 * the usual one that lost nothing (both zero when it could not be opened): */
	uint64_t events_written; /* the header's events_written */
	uint32_t header_notes;   /* NT_HEADER_NOTE_*: what else the header counts */
} nt_reader_section;

/* nt_reader_section.header_notes: set when the header has any of these nonzero; clear means
 * each of them is 0 (or "") in nt_reader_section_header()'s copy. */
enum {
	NT_HEADER_NOTE_LOSSES = 1,       /* events_dropped, its four reasons, events_overwritten */
	NT_HEADER_NOTE_SAVE_STOPPED = 2, /* save_errno */
	NT_HEADER_NOTE_BLOCKED = 4,      /* blocking_timeout_us, blocked_waits */
	NT_HEADER_NOTE_TRACEPARENT = 8,  /* traceparent */
};

/* Sections: 1 for a plain archive (describing it), one per process otherwise, in the order
 * read (a bundle's frames, then files by the order given, a directory's by name); the i-th,
 * or NULL for i >= count or r == NULL.
 *
 * Memory: a bundle of more than 64 sections keeps most of them closed between visits
 * (their names, counts, threads and strings stay, their readers go: a 2,000-process
 * bundle's text rendering took 0.8 KiB of reader memory a section, against 2.6 open),
 * and a visit opens each when it reaches it. nt_reader_section_at() opens the i-th for the
 * reader's life, so that .reader and .info are what they say (O(1) for an open one, the
 * section's durable records for a closed one: about 0.4 us for a small process; .reader
 * stays NULL when memory runs out); nt_reader_section_peek() opens nothing, and gives a
 * closed section with .reader and .info NULL and .error "" (what one that could not be
 * opened never has). The environment's NANOTRACE_READER_SECTIONS=open keeps every section
 * open from the start, =closed closes every one it can in a bundle of any size (any other
 * value: one line on stderr, once per process, and the default). */
uint32_t nt_reader_section_count(const nt_reader *r);
const nt_reader_section *nt_reader_section_at(const nt_reader *r, uint32_t i);
const nt_reader_section *nt_reader_section_peek(const nt_reader *r, uint32_t i);

/* The i-th section's decoded header into *out, opening nothing (a closed section's is
 * decoded from its bytes again: O(header), a cold read of the file among thousands). A list
 * of sections reads .events_written and .header_notes first and decodes only the headers
 * whose notes say there is more (trace-dump's --stats, text and warnings do). 0, or -1
 * when the section could not be opened, i >= count, r == NULL or out == NULL. */
int nt_reader_section_header(const nt_reader *r, uint32_t i, nt_archive_info *out);

/* What a many-process reader found about its inputs as wholes, besides their sections: a
 * bundle cut short ("cut short after N sections"), a frame that lies (bad magic, unknown
 * kind, a name or message over its limit, an archive past the end of the file), or an END
 * frame saying the recording ended early. Returns how many there are (0 for a plain
 * archive); problem_at returns the i-th message ("<file>: <problem>") and sets *offset
 * (if not NULL) to where in that file, or NULL for i >= count. Every visit reports them
 * to on_error first. O(1). */
uint32_t nt_reader_problem_count(const nt_reader *r);
const char *nt_reader_problem_at(const nt_reader *r, uint32_t i, uint64_t *offset);

/* Records that carry no event, by kind: sets counts[k] (256 entries, one per record kind
 * byte, NT_KIND_*) to how many records of kind k the archive holds where its layout keeps
 * records: every top-level record that frames (durable records, chunks, kinds this reader
 * does not know) and, inside each chunk the reader can decode, the records that are not
 * events (timestamp escapes, padding) and the events of kinds this reader does not know (a
 * newer writer's kinds of 64..127: the visit skips them, keeping the ordinals after them;
 * nt_kind_is_known() tells them apart, and trace-dump --stats lists them). Events are what nt_reader_visit() delivers; they
 * are not counted here. Damage is skipped the way the visit skips it, and not reported.
 * Cost: one pass over the records, O(file size) time, no allocation; O(1) once a
 * stream-order visit of r has read every record without meeting damage (in an archive
 * without an Arena layout section), since that visit keeps the count it made as it went
 * (2 KiB, freed at close): the same numbers, each chunk decompressed once for both.
 * r == NULL or counts == NULL: does nothing. */
void nt_reader_count_records(const nt_reader *r, uint64_t counts[256]);

/* A thread's waits for its streaming saver (nt_config.blocking_timeout_us; BlockedRecord). */
typedef struct nt_reader_blocked {
	uint64_t waits;    /* times it found no free chunk and waited */
	uint64_t timeouts; /* waits that ended without a chunk (time ran out, or recording
	                      stopped): the event was dropped (rolling full) */
	uint64_t ns;       /* nanoseconds spent waiting (CLOCK_MONOTONIC) */
} nt_reader_blocked;

/* Sums the archive's BlockedRecords by thread: zeroes per_thread[0..n) and adds each
 * record into the entry of its chunk's thread index (n = nt_reader_thread_index_limit(r)
 * takes every thread; an index at or past n is left out). Returns the records found. The
 * header's totals (nt_archive_info.blocked_waits, blocked_timeouts, blocked_ns) count
 * every wait; these miss the waits that ended in a drop and were the thread's last (the
 * record goes into the thread's next chunk); a live streaming arena's image (a killed
 * process) may show a record twice, in its saved stream and in the slot not yet reused, as
 * nt_reader_count_records counts it. An archive or section whose header counts no
 * wait is not read. Cost: as nt_reader_count_records; none without waits. r == NULL, or
 * per_thread == NULL with n != 0: 0, nothing written. */
uint64_t nt_reader_count_blocked(const nt_reader *r, nt_reader_blocked *per_thread, uint32_t n);

/* Deliver every event to cb->on_event in `order`. Returns 0 when the whole archive was
 * read, 1 when on_event asked to stop, -1 when damage stopped it (NT_ON_CORRUPT_STOP) or
 * memory ran out; every damaged place is reported to cb->on_error (if set) first. r or cb
 * NULL, or an order or policy that is none of the enums' values: -1, nothing visited. It
 * is the CURSOR below run to its end, with events pushed from the orders' own loops. */
int nt_reader_visit(nt_reader *r, const nt_reader_callbacks *cb, void *ctx, nt_order order,
		    nt_corrupt_policy policy);

/* CURSOR
 *   The same visit, pulled one event at a time instead of pushed to on_event: for a caller
 *   that hands events out in batches (a binding to another language, an iterator) without
 *   a thread. nt_reader_visit() is this loop, so both give the same events, gaps and damage
 *   reports, in the same order, with the same memory bounds (and the same helper thread,
 *   DECOMPRESSING AHEAD, which a cursor holds from its first next to its end or close).
 *
 *     nt_reader_cursor *c = nt_reader_cursor_open(r, &cb, ctx, NT_ORDER_TIME,
 *                                                 NT_ON_CORRUPT_STOP);
 *     const nt_reader_event *ev;
 *     while (nt_reader_cursor_next(c, &ev) > 0)
 *             use(ev);
 *     nt_reader_cursor_close(c);
 *
 *   nt_reader_cursor_open() keeps cb's on_error and on_gap (cb may be NULL: none; on_event
 *   is never called) and ctx, and allocates the cursor alone (cost: one small allocation);
 *   it returns NULL when r is NULL, order or policy is not one of the enums' values, or
 *   memory runs out. Visits do not change what the reader reports (one may keep what
 *   nt_reader_count_records() answers, published atomically): several cursors (and
 *   visits) may run over one reader at once, interleaved on one thread; the reader must
 *   stay open until its cursors are closed.
 *   nt_reader_cursor_next() returns 1 and sets *event to the next event, valid (with its
 *   arguments) until the next call or the close; 0 at the end of the archive; -1 when
 *   damage stopped the visit (NT_ON_CORRUPT_STOP) or memory ran out. Every damaged place
 *   and gap before that event is reported to on_error / on_gap during the call, as the
 *   visit reports them; after 0 or -1 every call returns the same again. The first call
 *   does the visit's setup (damage found at open reported, the time order's first chunk of
 *   every thread decoded). NULL cursor or event: -1. Cost: per event, what the visit
 *   spends on it.
 *   nt_reader_cursor_close() ends the visit early or late (joins its helper thread, frees
 *   its memory); NULL is ignored. */
typedef struct nt_reader_cursor nt_reader_cursor;
nt_reader_cursor *nt_reader_cursor_open(nt_reader *r, const nt_reader_callbacks *cb, void *ctx,
					nt_order order, nt_corrupt_policy policy);
int nt_reader_cursor_next(nt_reader_cursor *c, const nt_reader_event **event);
void nt_reader_cursor_close(nt_reader_cursor *c);

/* DECOMPRESSING AHEAD
 *   A compressed archive's chunks (CompressedChunk records) can be decompressed on a helper
 *   thread while the visit decodes the chunk before: on two cores a visit then goes at
 *   about the rate of an uncompressed archive. What the callbacks see is the same either
 *   way, in the same order: every event, gap and damage report (offset and message).
 *   - Thread: one helper thread per nt_reader_visit() call (per section of more than two
 *     compressed chunks in NT_ORDER_STREAM on a many-process reader, whose sections ahead
 *     below decompress the first two; one for the whole merge in NT_ORDER_TIME), started by the
 *     visit and joined before it returns, also when a callback stops it or damage does (the
 *     helper stops within one chunk's decompression). Callbacks still run on the caller's
 *     thread, one at a time. Nothing outlives the visit: nt_reader_close() has no thread
 *     to wait for.
 *   - Sections ahead: in NT_ORDER_STREAM over a bundle with at least 64 sections closed
 *     between visits (MANY PROCESSES), a second helper opens those sections again, and
 *     decompresses the first two compressed chunks of each, up to 64 sections ahead of the
 *     visit (in a bundle of short processes that is most of a section's cost besides its
 *     events). Same rules: the same events, gaps and messages in the same order, joined
 *     before the visit returns, and its use is what this setting says (off: none).
 *   - Memory: besides the serial visit's buffers, at most 2 x `buffers` decompressed chunks
 *     of NT_MAX_ZCHUNK_BYTES (64 KiB) and one zstd context (~100 KiB), for the whole visit,
 *     whatever its size; a table of `buffers` small entries per thread in NT_ORDER_TIME.
 *     Sections ahead: at most 64 sections' readers (about 2.5 KiB each) and 128 buffers of
 *     NT_MAX_ZCHUNK_BYTES, allocated as sections with compressed chunks need them and
 *     written only as far as a chunk decompresses, and a second zstd context.
 *   - When: NT_READER_AHEAD_AUTO (the default) decompresses ahead when the archive (all its
 *     sections in NT_ORDER_TIME; the section in NT_ORDER_STREAM) holds at least 8
 *     compressed chunks, in NT_ORDER_TIME at least two per thread (a bundle of short
 *     processes is merged serially), and the process may run on more than one CPU
 *     (sched_getaffinity),
 *     with NT_READER_AHEAD_BUFFERS buffers; then the environment variable
 *     NANOTRACE_READER_AHEAD decides first when it is set: "0" or "off" never, "auto" the
 *     rule above, a number 1..NT_READER_AHEAD_MAX_BUFFERS always (any compressed chunk, any
 *     CPU count) with that many buffers; any other value prints one line on stderr (once
 *     per process) and the rule above applies. A helper that cannot be started (no
 *     memory, no thread) leaves the visit serial, never failing it. So does one found to
 *     run instead of the visit rather than beside it, forced or not: over two intervals
 *     of 2 ms in a row in which the visit's thread never slept, it had under 90 % of the
 *     time on a CPU and the process under 110 % (the helper held to the visit's CPU, or a
 *     host that runs the guest's CPUs on one core and counts it as steal time): the helper
 *     is stopped, and the visit does the rest itself. Cost of that check: a clock read
 *     per chunk or per 64 sections, two system calls per 2 ms.
 *   nt_reader_set_decompress_ahead() sets it for one reader, and wins over the variable:
 *   NT_READER_AHEAD_OFF (0) never, NT_READER_AHEAD_AUTO (-1) back to the default above, 1 ..
 *   NT_READER_AHEAD_MAX_BUFFERS always with that many buffers (the latter for tests and
 *   measurement). Returns 0, or -1 (nothing changed) when r is NULL or `buffers` is out of
 *   that range. On a many-process reader it governs visits of that reader; each section's
 *   own reader (nt_reader_section.reader) keeps its own setting. Do not call it during a
 *   visit of r. Cost: a store. */
#define NT_READER_AHEAD_AUTO (-1)
#define NT_READER_AHEAD_OFF 0
#define NT_READER_AHEAD_BUFFERS 8
#define NT_READER_AHEAD_MAX_BUFFERS 64
int nt_reader_set_decompress_ahead(nt_reader *r, int buffers);

/* LIVE FOLLOW
 *   Read an archive while its writer still writes it, as `tail -f` reads a log: a
 *   file-backed arena (oneshot or circular) or a streaming file, and the finished archive
 *   that replaces it. Each nt_follow_poll() delivers, to the same callbacks a visit takes,
 *   the events published since the previous poll, and only those:
 *   - each thread's events in their order, and a poll's new events merged by time across
 *     threads as NT_ORDER_TIME merges them (an event published after a later one of another
 *     thread was delivered comes in a later poll: time order holds within a poll);
 *   - never a record whose first word the writer has not published: the live arena is
 *     copied with the writers' protocol (acquire loads of each record's head, each chunk
 *     slot's header read again after its copy) and decoded from private memory, and a slot
 *     reused while it was copied is left out of that copy;
 *   - events the follower never saw (dropped by the writer, or overwritten in circular mode
 *     before a poll could copy them) are delivered as a gap (on_gap) before the thread's
 *     next event; nt_follow_lost() sums them;
 *   - times of a live TSC-clock arena use the calibrated rate; the finished archive
 *     interpolates between its start and finish, which can move a time by the calibration's
 *     error (NT_CLOCK_MONOTONIC archives are exact).
 *   The file is untrusted as any archive is: every size is taken from a copy of the header
 *   and checked against the file's size at each poll. Damage in a copy of a live arena is
 *   looked for again in a fresh copy, 1 ms later (a copy can meet a writer between two
 *   stores): the poll fails when three copies show damage, or at once when a fresh copy
 *   holds the same bytes as the one that showed it; damage in a finished archive, which
 *   no longer changes, fails it at once. The file mapped shared must not be truncated while a poll copies it (SIGBUS, as
 *   for any mapped reader).
 *
 * nt_follow_open(): opens `path` (a live arena, a streaming file or a finished archive) and
 * reads its header; NULL and *err (if not NULL) when path is NULL or the file is missing,
 * not a regular file, a bundle, or its header is damaged. A caller that waits for a file
 * to appear retries. Cost: one open, one 4 KiB read, one mapping of the arena (not read).
 *
 * nt_follow_poll(): one look at the file; delivers what is new (see above) and returns
 *   NT_FOLLOW_RUNNING  the writer is still recording: poll again later;
 *   NT_FOLLOW_FINISHED the writer finished its archive (a Stream-layout file is now at the
 *                      path, or the followed file became one): everything it holds was
 *                      delivered;
 *   NT_FOLLOW_ENDED    the writer's process (the header's pid) is gone, or a zombie,
 *                      without finishing, and this poll found nothing new: what the file
 *                      holds was delivered (a killed writer's archive). A writer in another
 *                      pid namespace looks gone: its follow ends at its first idle poll;
 *   NT_FOLLOW_STOPPED  on_event returned nonzero (the rest of that poll is not delivered);
 *   NT_FOLLOW_FAILED   damage, a file that no longer fits its header, a path replaced by
 *                      another recording, or no memory: nt_follow_error() says what and
 *                      where; on_error is not called.
 *   Once a poll returns anything but RUNNING, every later poll returns the same and
 *   delivers nothing. f == NULL or cb == NULL: NT_FOLLOW_FAILED. Cost: a copy of the arena
 *   and of the stream bytes saved since the previous poll, and one open and one visit of
 *   the whole copy (O(file) time per poll); memory: one copy of the file, plus the new
 *   events of the poll.
 *
 * nt_follow_reader(): the reader of the last poll's copy (thread names, header counters),
 * valid until the next poll or nt_follow_close(); NULL before the first poll or f == NULL.
 * nt_follow_error(): the last failure, one line ("" when none). nt_follow_lost(): events
 * delivered as gaps so far. nt_follow_close(): frees everything (NULL is ignored). Each O(1).
 * A follower is used by one thread at a time. */
typedef struct nt_follower nt_follower;
enum {
	NT_FOLLOW_FAILED = -1,
	NT_FOLLOW_RUNNING = 0,
	NT_FOLLOW_FINISHED = 1,
	NT_FOLLOW_ENDED = 2,
	NT_FOLLOW_STOPPED = 3,
};
nt_follower *nt_follow_open(const char *path, nt_reader_error *err);
int nt_follow_poll(nt_follower *f, const nt_reader_callbacks *cb, void *ctx);
const nt_reader *nt_follow_reader(const nt_follower *f);
const char *nt_follow_error(const nt_follower *f);
uint64_t nt_follow_lost(const nt_follower *f);
void nt_follow_close(nt_follower *f);

/* Convert raw ticks of this archive to CLOCK_MONOTONIC ns and to wall-clock ns. */
int64_t nt_reader_ticks_to_ns(const nt_reader *r, uint64_t ticks);
int64_t nt_reader_ns_to_wall(const nt_reader *r, int64_t monotonic_ns);

/* ---- Renderers (trace-dump is a thin layer over these) ---------------------------------- */

/* GROWING STRUCTS
 *   nt_render_options and nt_trace2_options may gain fields in later versions, always at
 *   their end. Fill one with its init function (which sets struct_size to the size this
 *   program was compiled with), then set fields by name; never build one from scratch or
 *   with an initializer list. The library reads only the caller's struct_size bytes:
 *   fields a caller compiled against an older header does not have take their defaults.
 *   A struct_size that is not the struct's (0: never initialized) makes the renderer print
 *   one line "nanotrace: <function>: ... call <init function>" on stderr and return -1
 *   without writing anything; so does a field this library does not know, set to a
 *   non-zero value by a program built against a newer header. nt_render_text, _chrome and
 *   _stats take NULL options for the defaults. */
typedef struct nt_render_options {
	size_t struct_size;       /* set by nt_render_options_init() */
	nt_order order;           /* default NT_ORDER_TIME */
	nt_corrupt_policy policy; /* default NT_ON_CORRUPT_SKIP */
	/* Called for every damaged place, in addition to what the renderer shows (may be NULL,
	 * the default). */
	void (*on_error)(void *ctx, uint64_t offset, const char *message);
	void *error_ctx;
} nt_render_options;

/* Fill *opt with the defaults above and opt->struct_size. Cost: a few stores. NULL is
 * ignored. */
void nt_render_options_init(nt_render_options *opt);

/* OUTPUT
 *   nt_render_text, nt_render_chrome and nt_render_trace2 format into a 64 KiB block of
 *   their own (no stdio call per field) and hand it to `out` with fwrite when full and at
 *   the end, then fflush(out). The first write that fails (ENOSPC, EPIPE when SIGPIPE is
 *   ignored, EIO) stops the rendering: the function returns -1 with errno set to that
 *   failure's and ferror(out) set, which tells a write error from damage or a lack of
 *   memory. Cost: O(events) time, one fwrite per 64 KiB of output. */

/* One line per event, aligned columns: time since start, thread, phase, category, name,
 * duration, arguments (an async or flow event's phase is b/n/e or s/t/f, its id first among
 * them: "id=0x2a", a global one "gid=0x2a"). A many-process reader (more than one section) adds a PID column
 * before the thread (the thread's pid: two processes may share a tid), and its gap lines
 * name the pid; a single archive's output has neither. After the events, for each process
 * whose writer lost some: "-- lost: " and nt_render_losses()'s line ("-- pid P: lost: " for
 * a many-process reader), and "-- " and nt_render_save_stopped()'s when saving stopped.
 * Returns nt_reader_visit's result, or -1 when memory runs out or a write fails (see
 * OUTPUT). */
int nt_render_text(nt_reader *r, FILE *out, const nt_render_options *opt);

/* Follow a live archive as text (see LIVE FOLLOW): polls f every interval_ms (0: as fast as
 * it can) and writes each poll's new events as nt_render_text's lines, then flushes `out`,
 * until the writer finishes or ends, keep_going(arg) returns 0 (asked between polls and
 * every 1024 events a poll delivers, so a stop never waits for a whole batch; may be NULL),
 * or a poll fails. The column titles come first, once the file is read; the thread,
 * category and name columns are 32 wide (names the writer defines later must fit), so
 * lines equal nt_render_text's up to spaces; gaps are nt_render_text's gap lines. Options
 * as nt_render_text's (order and policy are not used: a poll is merged by time and damage
 * fails it). When the writer finishes or ends, nt_render_text's closing lines follow. Returns the last poll's NT_FOLLOW_* (NT_FOLLOW_STOPPED when keep_going said
 * stop), or NT_FOLLOW_FAILED with errno set when a write failed (see OUTPUT), and
 * NT_FOLLOW_FAILED when f or out is NULL or memory ran out. Cost: a poll (nt_follow_poll)
 * and an fflush per interval. */
int nt_render_text_follow(nt_follower *f, FILE *out, const nt_render_options *opt,
			  unsigned interval_ms, int (*keep_going)(void *arg), void *arg);

/* Chrome Trace Event JSON ("traceEvents", ph B/E/X/i/C, ts in microseconds, thread and
 * process name metadata) that chrome://tracing and Perfetto UI open. Async spans are ph
 * b/n/e with "id2" {"local": "0x.."} (the viewers scope it to the pid) or {"global": ...};
 * flows are ph s/t/f with an "id" (a process-scoped id mixed with the pid, one-to-one per
 * process, since viewers key flows across the whole trace; a global id as it is) and, on
 * "f", "bp":"e": each binds to the slice that encloses it on its thread. An End with no open
 * Begin on its thread (overwritten, lost, or never made) is left out; a Begin never ended
 * stays open. "otherData", after "traceEvents", holds the losses and both counts
 * ("unmatched_ends", "unended_begins"), and, each only when it applies: the drops by reason
 * ("events_dropped_by_reason": rolling_full, durable_full, stopped, not_saved), the events
 * lost in gaps ("events_lost_in_gaps"), the async spans and flows it cannot pair
 * ("async_unended", "async_unbegun", "flows_unfinished", "flow_points_unbegun": the sums of
 * nt_render_stats's per-category counts), saving stopped ("saving_stopped",
 * "dropped_unsaved"), and the damage ("damaged_places", and "damage": the first 100 as
 * {"offset", "message"}; a truncated archive's says how many events are missing). A counter carries its thread's tid as "id": one
 * series per thread. Returns nt_reader_visit's result, or -1 when memory runs out or a
 * write fails (see OUTPUT). */
int nt_render_chrome(nt_reader *r, FILE *out, const nt_render_options *opt);

/* Perfetto's native trace format: a protobuf `Trace` (perfetto_trace.proto, vendored in
 * third_party/perfetto/ with the upstream commit it came from) that Perfetto UI,
 * trace_processor and Android's and Chrome's tools load, written to `out` as a stream of
 * TracePackets in the visit's order.
 * - Tracks: a process track per section (pid, name) and a thread track per thread (pid,
 *   tid, name), described first on sequence 1 after a ClockSnapshot that relates
 *   CLOCK_MONOTONIC (the events' clock, made the trace's clock) to CLOCK_REALTIME at the
 *   start, so times equal trace-dump's and line up with other Perfetto data of the machine.
 * - Events: each thread's on a sequence of its own (trusted_packet_sequence_id 2 + the
 *   thread's index) whose first packet clears the incremental state and sets the defaults
 *   (the thread's track, timestamps as deltas on a sequence clock); event names,
 *   categories and annotation names are interned per sequence, and so are string
 *   argument values of at most 64 bytes, the first 1024 distinct ones of each sequence
 *   (later ones are written whole: memory stays bounded). Begin/End and Trace2
 *   regions are slices (an End with no open Begin on its thread is left out, as
 *   nt_render_chrome leaves it out), a Complete a slice from its start to its end,
 *   instants and other Trace2 messages instants, a counter's numeric arguments values on a
 *   counter track per thread, counter name and argument ("<name> <argument>"); arguments
 *   are typed debug annotations. A Trace2 process is a slice "process" from "start" to
 *   "atexit", a child process a slice "child" (child_start to child_exit) on a track of its
 *   own under its thread.
 * - Losses: a gap is an instant "events lost" (annotation "lost") on its thread; each
 *   process whose writer lost events (dropped by reason, overwritten, wraps, saving
 *   stopped) gets an instant "nanotrace losses" on its track at the end of the trace with
 *   one annotation per count, the first process also the rendering's own counts
 *   (events_lost_in_gaps, unmatched_ends, unended_begins, damaged_places and the first 100
 *   places as "damage", counter_args_not_numeric, timestamps_clamped); none when nothing
 *   was lost.
 * Strings that are not valid UTF-8 are written with U+FFFD for each bad byte. Returns
 * nt_reader_visit's result, or -1 when r or out is NULL (EINVAL), memory runs out or a
 * write fails (see OUTPUT). Cost: O(events) time; memory O(threads x (their distinct names
 * and counter tracks + 1024 short values)), never O(events). */
int nt_render_perfetto(nt_reader *r, FILE *out, const nt_render_options *opt);

/* OPENTELEMETRY (OTLP)
 *   The archive as OpenTelemetry spans and gauges, in the messages of the official
 *   opentelemetry-proto (vendored in third_party/opentelemetry-proto/ with the upstream
 *   commit): ExportTraceServiceRequest and ExportMetricsServiceRequest, what an OTLP
 *   receiver (the Collector, Jaeger, Tempo) takes. The mapping (doc/otlp.md):
 * - Resource: one per section (process): service.name (OTEL_SERVICE_NAME, else the
 *   provider's or process name), process.pid, process.executable.name, telemetry.sdk.*
 *   (name "nanotrace"), OTEL_RESOURCE_ATTRIBUTES, and what the header says the writer lost
 *   (nanotrace.events_dropped and by reason, nanotrace.events_overwritten,
 *   nanotrace.wraps, nanotrace.saving_stopped, how a bundle's section ended).
 * - Instrumentation scope: the event's category (a scope groups what one component
 *   emits, and a category is nanotrace's name for that).
 * - Spans: Begin/End pairs (and NT_SCOPE), Complete, Trace2 regions, a Trace2 process
 *   (start .. atexit) and its child processes (child_start .. child_exit), async spans;
 *   each span's parent is the span open on its thread when it began (a Complete, recorded
 *   when it ends: the span open then), an async span's the span open where it began; the
 *   roots of a Trace2 process's other threads go under its process span. As trace2receiver
 *   makes them, a Trace2 process span is of kind SERVER (the others INTERNAL), Trace2
 *   spans carry trace2.span.type (process, region, child), and a Trace2 process's Resource
 *   its SID (trace2.cmd.sid, service.instance.id). Arguments are
 *   attributes of their types (unsigned values and pointers as int64 bits, string lists
 *   as arrays), with code.filepath, code.lineno, thread.id and thread.name.
 * - Instants and Trace2 messages: span events on the span open on their thread (a
 *   zero-length span of their own when none is); Trace2 data and data_json: attributes
 *   "<category>.<key>" of that span.
 * - Flows: links: the span where a flow step or end happens links to the span of the
 *   flow's previous point.
 * - Counters: gauges, one metric "<name>.<argument>" per numeric argument, a data point
 *   per event with thread.id.
 * - Trace ids: a root span starts a trace, unless its first event is a flow step or end
 *   whose earlier point is known (then it joins that flow's trace), or a TRACEPARENT (W3C
 *   trace context) names one: then every root is a child of that parent. A process's
 *   TRACEPARENT is the one it was started with (nt_archive_info.traceparent), else the
 *   exporting program's own environment's. Span
 *   and trace ids are hashes of each section's pid, start time and event places: the same
 *   archive gives the same ids, and a section exported alone (its reader) the ids it has in
 *   the whole bundle's export; a global async id's trace is a hash of the id alone.
 * - Losses: a span never ended ends at its section's last event with nanotrace.unended;
 *   what the rendering found (events lost in gaps, damage, Ends with no Begin, spans past
 *   the nesting bound, ids past the memory bound) is a span "nanotrace losses" (scope
 *   "nanotrace") with one attribute per count, sent last; none when nothing was lost.
 * Requests hold about 128 KiB of spans (their JSON lines stay under 1 MiB); memory is O(threads x open nesting + open
 *   async spans + remembered flows), each bounded (65536 ids), never O(events). */
typedef enum nt_otlp_signal {
	NT_OTLP_TRACES = 0,  /* an ExportTraceServiceRequest */
	NT_OTLP_METRICS = 1, /* an ExportMetricsServiceRequest */
} nt_otlp_signal;
/* Receives one serialized request (valid during the call); returns 0 to go on, nonzero
 * to stop the export (nt_otlp_export then returns -1, errno as the callback left it). */
typedef int (*nt_otlp_emit)(void *ctx, nt_otlp_signal signal, const uint8_t *msg,
			    size_t len);
/* Visits r (opt as nt_render_perfetto's: order, policy, on_error) and hands emit every
 * request, in order; a request is complete on its own (what a live exporter sends as one
 * OTLP/HTTP body). Give it a section's reader (nt_reader_section.reader) to export one
 * process. Returns nt_reader_visit's result, or -1 when r or emit is NULL (EINVAL), memory
 * runs out (ENOMEM) or emit asked to stop. Cost: O(events) time; memory as above. */
int nt_otlp_export(nt_reader *r, const nt_render_options *opt, nt_otlp_emit emit, void *ctx);

/* An export in parts (a live shipper's, as a streaming section's buffers are saved): each
 * part is a reader of the next piece of the same processes (the same sections: pid and
 * start), whose durable records (strings, threads, call sites) include the earlier parts'
 * and may add to them, and whose events follow them. The parts are visited as one archive
 * of their events: a span begun in one part and ended in a later one is one span, and
 * stacks, async spans, flows, per-section event places (ids) and the loss counts carry
 * over. Each part's events are visited in opt's order among themselves only, so ids equal
 * those of one nt_otlp_export of the whole only where that visits the events in the same
 * order (a part per save of a streaming section: a thread's events keep their order, but
 * two threads' saves interleave differently in time). */
typedef struct nt_otlp_exporter nt_otlp_exporter;
/* A new exporter handing requests to emit (opt as nt_otlp_export's, copied). Returns NULL
 * with errno EINVAL when emit is NULL or opt is bad, ENOMEM when memory runs out. O(1). */
nt_otlp_exporter *nt_otlp_exporter_new(const nt_render_options *opt, nt_otlp_emit emit,
				       void *ctx);
/* Visits part as the next piece and sends every request that is complete: the spans that
 * ended, the metrics (open spans wait for their ends). The Resources of the requests sent
 * from then on are made from part's section headers (a later part's may count more
 * losses: give the last part the final header). part may be closed once this returns: the
 * names of the spans still open are copied. Returns nt_reader_visit's result
 * for part, or -1: EINVAL when x or part is NULL, x is finished or failed, or part's
 * sections are not the earlier parts' processes (then x is as it was); ENOMEM or emit's
 * stop (errno as emit left it), after which x only takes nt_otlp_exporter_free. Cost:
 * O(part's events + its threads and sections + the spans open at its end); memory as
 * nt_otlp_export's, plus the open spans' names. */
int nt_otlp_exporter_add(nt_otlp_exporter *x, nt_reader *part);
/* Ends what is still open (spans end at their section's last event seen, with
 * nanotrace.unended), sends the losses spans and the last requests. Returns 0, or -1:
 * EINVAL when x is NULL or already finished or failed, ENOMEM, or emit's stop. O(open
 * spans + threads + sections). */
int nt_otlp_exporter_finish(nt_otlp_exporter *x);
/* Frees x (finished or not: what is open is dropped unsent); NULL is ignored. */
void nt_otlp_exporter_free(nt_otlp_exporter *x);

typedef enum nt_otlp_format {
	/* A protobuf message whose field 1 is each ExportTraceServiceRequest and field 2 each
	 * ExportMetricsServiceRequest, in order (doc/otlp_file.proto): protoc --decode reads
	 * it whole, and each request is one tag and length away. */
	NT_OTLP_PROTOBUF = 0,
	/* OTLP/JSON lines, one request per line (the Collector's otlpjsonfile receiver). */
	NT_OTLP_JSON = 1,
} nt_otlp_format;
/* nt_otlp_export's requests written to out in `format` (see OUTPUT). Returns as
 * nt_otlp_export, -1 with errno when a write fails or the format is none of the enum's. */
int nt_render_otlp(nt_reader *r, FILE *out, nt_otlp_format format,
		   const nt_render_options *opt);

/* Counts per record kind and per thread, drops, wraps, bytes per event, Ends and Begins
 * left unmatched (by nt_render_chrome's rule), and the Trace2 processes present; includes
 * a line "events: N", and the line of nt_render_save_stopped() when saving stopped. With
 * async or flow events, "async: S spans (...); flows: F (...)" and, per category with
 * something unpaired, "  category C: A async spans never ended, B async ends never begun,
 * F flows never finished, G flow steps or ends never begun" (by (scope, pid of a process
 * id, category, name, id), whatever the order); records of kinds this reader does not know
 * as "unknown kinds: N records skipped (kinds a newer writer made: K ...)". Its lines per
 * thread and per section (a many-process reader's providers) are formatted as OUTPUT says,
 * the others with stdio; a list of 4,096 lines or more has its later 47 % formatted on a
 * helper thread, started and joined within the call, into memory (about 100 bytes a line),
 * when helpers may run as DECOMPRESSING AHEAD's variable says (off: never; a number: from
 * 2 lines): the bytes are the same either way. Returns nt_reader_visit's result, or -1 when
 * memory runs out or a write of those lists fails (errno set; a failed write of any line
 * leaves ferror(out) set). Memory: one entry per async span and flow. */
int nt_render_stats(nt_reader *r, FILE *out, const nt_render_options *opt);

/* SAVING STOPPED. A writer whose archive could not be written whole (a full disk, a file
 * past RLIMIT_FSIZE, an I/O error) records why in the header (nt_archive_info.save_errno,
 * the errno of the first failed write) and counts the events it made but could not save
 * as dropped with reason dropped_unsaved, so decoded + dropped + overwritten is still every
 * event made. Such an archive is a complete account, not damage: trace-dump says so on
 * stderr and exits 0, as babeltrace2 does for discarded events; a file cut short is still
 * reported as truncated. The header's values are checked when the archive is opened (more
 * events not saved than dropped, events not saved without a reason, or a reason that is no
 * errno are damage at byte 0).
 *
 * Writes "saving stopped: <strerror>; N events not saved" (NUL-terminated, cut to fit) into
 * buf[cap] and returns buf when the header of `info` says saving stopped; NULL (buf
 * untouched) when it did not, or info, buf or cap is NULL or 0. For a many-process reader's
 * info, the reason is the first section's and N the sum. Cost: one snprintf. */
const char *nt_render_save_stopped(const nt_archive_info *info, char *buf, size_t cap);

/* LOSSES. A oneshot arena drops events once full and a circular one overwrites its oldest
 * chunks; neither leaves a gap between the chunks kept (nt_reader_gap) to show where.
 * Writes "N events dropped (rolling full a, durable full b, stopped c, not saved d), M
 * overwritten" (NUL-terminated, cut to fit) into buf[cap] and returns buf when the header
 * of `info` counts events dropped or overwritten; NULL (buf untouched) when it counts none,
 * or info, buf or cap is NULL or 0. nt_render_text ends with this line ("-- lost: ...",
 * one per process of a many-process reader), trace-dump writes it on stderr for Git's
 * Trace2 formats (whose bytes stay Git's). Cost: one snprintf. */
const char *nt_render_losses(const nt_archive_info *info, char *buf, size_t cap);

/* A Common Trace Format 1.8 trace in directory `dir`, which babeltrace2 and Trace Compass
 * read: a TSDL "metadata" file and one binary stream per thread ("stream-<pid>-<tid>-<n>").
 * - Time: a clock "monotonic" of 1 GHz whose values are the events' time_ns (CLOCK_MONOTONIC
 *   ns, the times trace-dump shows) and whose offset is the archive's CLOCK_REALTIME minus
 *   CLOCK_MONOTONIC at its start, so viewers show wall-clock times. A Complete event is
 *   stamped at its end (time_ns + duration_ns): a stream's times must not go back, and a
 *   Complete is recorded after the events inside it; its payload has _nt_duration_ns.
 * - Events: one event class per call-site shape (kind, category, name, argument names and
 *   types), named "<category>:<name>"; the payload starts with _nt_kind (an enumeration:
 *   begin, end, instant, complete, counter, trace2_<message>), then the arguments as
 *   fields "_<name>" of their own types (int32/64, uint32/64, double, a bool enumeration,
 *   a hexadecimal uint64 for pointers, strings, a count and a string array for lists).
 *   Every event's context holds _vpid and _vtid, as LTTng's do.
 * - Packets: at most 64 KiB; their context holds timestamp_begin/_end, content_size,
 *   packet_size, packet_seq_num, events_discarded (the thread's events lost in gaps so
 *   far), pid, tid, procname (the process or section name) and thread_name.
 * - Losses no gap shows (the header's drops and overwrites beyond its gaps; a damaged
 *   archive's events that its header counts as saved and the visit did not find) go into
 *   an empty packet that ends the process's stream that ended last, so babeltrace2 warns of
 *   them too (env events_lost_at_stream_ends counts them).
 * - The header's counters (drops by reason, saving stopped) and what the export changed
 *   (timestamps that would go back, only in a hostile archive; NUL bytes inside strings,
 *   written as U+FFFD) are in the metadata's env, with the damage reports' count.
 * `dir` is made 0700 if missing; an existing empty directory is used; anything else there
 * (a file, a link, which is never followed, a directory with entries) is refused. Files
 * are made 0600 with O_EXCL | O_NOFOLLOW. The metadata is written last. opt->order is
 * ignored (time order: each stream in its thread's order); opt->policy and on_error as for
 * the other renderers: with NT_ON_CORRUPT_SKIP damaged records are reported and left out,
 * and the trace says how many reports there were (env damage_reports).
 * Returns nt_reader_visit's result (0, or 1 never: nothing stops it), or -1 with errno
 * set and err->message (if err is not NULL) naming the directory or file and the reason
 * when r or dir is NULL, the directory cannot be used, a file cannot be made or written
 * (ENOSPC, EIO), memory runs out, or damage stopped the visit (NT_ON_CORRUPT_STOP): then
 * every file made is removed, and the directory if it was made here.
 * Cost: O(events) time; memory one packet (64 KiB) per thread plus O(call sites). */
int nt_render_ctf(nt_reader *r, const char *dir, const nt_render_options *opt,
		  nt_reader_error *err);

/* Git Trace2's three renderings, byte for byte as git 2.39.5 writes them (the formats of
 * Git's Documentation/technical/api-trace2.adoc and trace2/tr2_tgt_*.c): NORMAL and PERF
 * text, and EVENT JSON lines. Only Trace2 messages are rendered; low-level events are
 * skipped. */
typedef enum nt_trace2_format {
	NT_TRACE2_NORMAL = 0,
	NT_TRACE2_PERF = 1,
	NT_TRACE2_EVENT = 2,
} nt_trace2_format;

typedef struct nt_trace2_options {
	size_t struct_size;     /* set by nt_trace2_options_init() (see GROWING STRUCTS) */
	nt_trace2_format format; /* default NT_TRACE2_NORMAL */
	int brief;   /* -1 (default): as each process was captured; 0: full; 1: Git's brief mode (no clock
	                and file:line; EVENT keeps time on version and atexit only) */
	int nesting; /* EVENT: omit regions and data nested deeper than this; <= 0 means 2,
	                Git's default GIT_TRACE2_EVENT_NESTING */
	nt_corrupt_policy policy; /* default NT_ON_CORRUPT_SKIP */
	void (*on_error)(void *ctx, uint64_t offset, const char *message); /* may be NULL */
	void *error_ctx;
} nt_trace2_options;

/* Fill *opt with the defaults above (format NORMAL, brief -1, nesting 2, policy SKIP, no
 * on_error) and opt->struct_size. Cost: a few stores. NULL is ignored. */
void nt_trace2_options_init(nt_trace2_options *opt);

/* Render `n` archives as one Trace2 stream: each archive in its own order (an imported log
 * in file order, a recorded one by time), the archives interleaved by time as the processes
 * would have written one shared file. NORMAL and PERF print local time: the process's
 * recorded UTC offset, else the TZ of the caller. One archive streams; several are merged
 * in memory (O(lines)). A many-process reader stands for its sections (those that could
 * be opened), each one process, so a bundle renders every Trace2 process in order as git
 * would for a shared target. Returns 0, or -1 when damage stopped a visit
 * (NT_ON_CORRUPT_STOP), memory ran out or a write failed (see OUTPUT); NULL or empty
 * arguments return -1. */
int nt_render_trace2(nt_reader *const *readers, size_t n, FILE *out,
		     const nt_trace2_options *opt);

/* Follow a live archive as Git Trace2 (see LIVE FOLLOW): as nt_render_text_follow, each
 * poll's new Trace2 messages rendered as nt_render_trace2 renders them (opt->format, brief,
 * nesting; the region stacks carry over from poll to poll), `out` flushed after each poll.
 * Returns the last poll's NT_FOLLOW_*, NT_FOLLOW_STOPPED when keep_going(arg) said stop,
 * NT_FOLLOW_FAILED when a write failed (errno set), memory ran out, an argument is NULL or
 * opt's struct_size is not an nt_trace2_options' (one line on stderr). */
int nt_render_trace2_follow(nt_follower *f, FILE *out, const nt_trace2_options *opt,
			    unsigned interval_ms, int (*keep_going)(void *arg), void *arg);

/* TRACE2 FORWARDING
 *   Git's af_unix Trace2 target (git/git Documentation/technical/api-trace2.adoc) for a live
 *   archive: a thread of this library follows `archive` (see LIVE FOLLOW) and sends each of
 *   its new Trace2 messages, rendered as nt_render_trace2 renders NT_TRACE2_EVENT, to the
 *   socket `target` names, "af_unix:[stream:|dgram:]<absolute path>", one line (its '\n'
 *   included) per message: one write on a stream socket, one datagram on a dgram socket.
 *   With no type, a stream connection is tried, then a datagram one, as git does. A program
 *   traced with NANOTRACE_EVENT=af_unix:... starts one through dlopen() of this library
 *   (libnanotrace does so; the program links no reader), and `trace-dump --format event -o
 *   af_unix:... --follow` does the same through nt_trace2_socket_open.
 *   Every problem is one line on stderr, "<who>='<target>': <problem>", at most one per
 *   target, and the forwarding ends; nothing else changes.
 *
 * nt_trace2_socket_open(): a FILE (unbuffered; fclose() it) whose writes go to `target`
 *   one line per message: a line a write cuts waits for its '\n', and fclose sends a last
 *   piece without one as a line of its own. A bad value, no such socket or nobody
 *   listening: the warning and NULL. A send that blocks for more than a second (a listener
 *   that stopped reading) or fails (it went away; no SIGPIPE is raised) fails that write
 *   (errno EAGAIN, EPIPE, ECONNREFUSED...) after the warning, as any failed output fails a
 *   renderer. `who` starts the warnings (NULL: "nanotrace: target"). Cost: one connect;
 *   one send per line.
 * nt_trace2_forward_start(): opens the target as nt_trace2_socket_open does (NULL after its
 *   warning), opens `archive` for following (a missing or damaged file: the warning and
 *   NULL) and starts the thread, which polls every interval_ms (0: as fast as it can) and
 *   renders into that FILE; a failed send ends the forwarding.
 *   Cost: a connect and nt_follow_open's; then, in its own thread, each poll's copy of the
 *   archive (nt_follow_poll: O(file)) and one send per line; the archive's writer pays
 *   nothing.
 * nt_trace2_forward_stop(): asks for one last poll, which sends every line written before
 *   the call, and waits up to timeout_ms for it; when the wait runs out (warned), the
 *   socket is shut down, so that a blocked send fails at once, and the poll stops within
 *   1024 events. Then the thread is joined and the forwarder freed (a thread that still
 *   has not ended a second later is left running, with the forwarder: the wait is bounded
 *   whatever happens). Returns 0 when every line was sent, -1 when the target went off or
 *   the wait ran out. timeout_ms < 0 is for a
 *   fork() child of the process that started `fw`: its copy of the socket is closed, and
 *   nothing else is touched (the thread is the parent's). NULL is ignored (0). */
FILE *nt_trace2_socket_open(const char *target, const char *who);
typedef struct nt_trace2_forwarder nt_trace2_forwarder;
nt_trace2_forwarder *nt_trace2_forward_start(const char *archive, const char *target,
					      const char *who, unsigned interval_ms);
int nt_trace2_forward_stop(nt_trace2_forwarder *fw, int timeout_ms);

/* ---- Import -------------------------------------------------------------------------------- */

typedef struct nt_trace2_import_error {
	unsigned long line;    /* 1-based line of the problem (0: not tied to a line) */
	size_t column;         /* 1-based byte column in that line */
	unsigned long lines;   /* on success: lines read */
	char message[512];     /* one line: "line L, column C: <problem>" */
} nt_trace2_import_error;

/* Convert a Git Trace2 EVENT stream (JSON lines as GIT_TRACE2_EVENT writes them, raw
 * non-UTF-8 bytes included; blank lines are skipped) into an archive in memory, which
 * nt_render_trace2() renders back: EVENT byte for byte, NORMAL and PERF except for what
 * an EVENT stream does not carry (the clock's digits beyond microseconds, PERF's t_abs of
 * messages that have none in EVENT, and the self file:line of atexit, signal, timer and
 * counter messages). Every key is kept: a string that
 * is present but empty stays present ("msg":""), and a key or an event this version does
 * not know (a newer Git's) is kept verbatim (NT_ARG_JSON, NT_T2E_UNKNOWN), rendered back in
 * EVENT where it stood and left out of NORMAL and PERF. On success *archive (free() it)
 * and *archive_size are set and 0 is returned. On malformed input (not JSON, no event, sid
 * or thread, a known key with a value of the wrong type, a record over 2040 bytes) -1 is
 * returned and *err says where. NULL archive or archive_size, or NULL data with a size,
 * return -1 ("invalid argument"). Cost: O(input) time and memory. */
int nt_trace2_import(const void *data, size_t size, void **archive, size_t *archive_size,
		     nt_trace2_import_error *err);

/* Compresses the chunks of the finished (Stream-layout) archive `archive` of `size` bytes,
 * as nt_finish() does for the archives it writes: each Chunk record that zstd at `level`
 * (-50 fastest to 22 smallest; 0 = none) makes smaller becomes a CompressedChunk record of
 * the same events, and the header names the codec and level. trace-import uses it on what
 * the imports above return. On success *out (free() it, at most size + 1 KiB) and *out_size
 * are set and 0 is returned; otherwise -1 and *err (may be NULL) says what and where: NULL
 * arguments, a level out of range, a header that does not verify, an Arena-layout archive
 * (a live or killed one: not finished), a record that does not frame. Records are copied
 * as they are otherwise. Cost: one compression of every chunk, O(size) memory. */
int nt_archive_compress(const void *archive, size_t size, int level, void **out,
			size_t *out_size, nt_reader_error *err);

/* One EVENT stream in memory, for nt_trace2_import_many(). */
typedef struct nt_trace2_input {
	const char *name; /* where it comes from, for messages (NULL: none) */
	const void *data;
	size_t size;
} nt_trace2_input;

/* Several EVENT streams (one per process, as a GIT_TRACE2_EVENT directory target leaves
 * them) into one archive, as if the processes had written one shared file: each stream
 * keeps its own line order, and the streams' lines interleave by their "time" (a line
 * without one goes with the line before it); ties go to the stream whose first event is
 * earlier, then to the earlier in `inputs`. Everything else is as nt_trace2_import(); an
 * error message starts with the input's name. n == 0 imports nothing (an empty archive);
 * NULL inputs with n > 0 return -1. Cost: O(total input) memory, O(lines * log n) time. */
int nt_trace2_import_many(const nt_trace2_input *inputs, size_t n, void **archive,
			  size_t *archive_size, nt_trace2_import_error *err);

/* nt_trace2_import_many() over files and directories: a directory stands for its
 * non-empty regular files (names starting with '.' skipped; empty files are what git's
 * GIT_TRACE2_MAX_FILES pre-fills and target directories hold), as git names them after
 * the last SID component. An unreadable path, a directory entry that is not a regular
 * file, or a directory with no non-empty file returns -1 with the path in err->message;
 * so does a file that is not an EVENT stream, with its name, line and column. Reads every
 * file into memory: O(total size). NULL paths with n > 0 return -1. */
int nt_trace2_import_paths(const char *const *paths, size_t n, void **archive,
			   size_t *archive_size, nt_trace2_import_error *err);

/* nt_trace2_import_paths() that says how far it got: after reading the files, `progress`
 * (NULL: none) is called on the importing thread with the input bytes imported so far and
 * in all, about once per MiB of input and once at the end (done == total), with `ctx`. It
 * must not call back into the import. Cost: one call per MiB beyond nt_trace2_import_paths. */
typedef void (*nt_trace2_import_progress)(void *ctx, uint64_t done_bytes, uint64_t total_bytes);
int nt_trace2_import_paths_progress(const char *const *paths, size_t n, void **archive,
				    size_t *archive_size, nt_trace2_import_error *err,
				    nt_trace2_import_progress progress, void *ctx);

/* Writes `len` bytes as the body of a JSON string: escapes quotes, backslashes and control
 * characters, and replaces bytes that are not valid UTF-8 with U+FFFD. */
void nt_json_write_string(FILE *out, const char *s, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* NANOTRACE_READER_H */
