/*
 * nt_format.h - the record layout of a nanotrace archive, in C.
 *
 * This header mirrors schema/nanotrace.fbs, which is normative; tests/format/layout_test.cpp proves
 * at compile time, against the code flatc generates from the schema, that every struct here
 * has the same size, alignment and field offsets. The writer and the reader share nothing
 * but format/.
 *
 * Rules that keep the C and FlatBuffers layouts identical: same field order and widths as
 * the schema; every field at its natural alignment with explicit reserved fields, so no
 * compiler inserts padding; enums stored as uint8_t; 64-bit members aligned to 8 even on
 * ABIs that align them to 4 in structs.
 */
#ifndef NT_FORMAT_H
#define NT_FORMAT_H

#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "nanotrace archives are little-endian and the writer fills records with plain stores"
#endif

#ifdef __cplusplus
#define NT_ALIGN8 alignas(8)
#define NT_STATIC_ASSERT static_assert
#else
#define NT_ALIGN8 _Alignas(8)
#define NT_STATIC_ASSERT _Static_assert
#endif

#define NT_FILE_IDENTIFIER "NTRC"
/* Major 2: compact records (4-byte events and values-only arguments, nt_record.h) inside
 * chunks, and CallSiteArgs durable records. A reader of major 1 cannot frame them, so it
 * refuses the archive by its version ("unsupported format version 2.0"); this version reads
 * majors NT_FORMAT_MAJOR_OLDEST to NT_FORMAT_MAJOR (1.0 and 1.1 archives have no compact
 * records, and 1.1's CompressedChunk records are part of 2.0).
 * Minor history of major 1: 1.1 added CompressedChunk records and the header's compression
 * fields. Of major 2: 2.1 added the ZstdLanes4 codec (a 2.0 reader names it as a codec it
 * does not support); 2.2 the event kinds 64..127 (nt_record.h: events by their kind's range,
 * so that a reader meets a newer one as an event it skips, and counts), of which the async and
 * flow records (IdEventRecord) are the first. A reader of 2.1 takes those records for
 * unknown non-events and skips them (its ordinals then run short: it may report gaps there).
 * 2.3 added the BlockedRecord (kind 9, no event: a streaming writer waited for its saver) and
 * the header's blocking fields; a 2.2 reader skips the record as an unknown kind. 2.4 added
 * the header's traceparent (a table field an older reader does not look for). */
#define NT_FORMAT_MAJOR 2
#define NT_FORMAT_MAJOR_OLDEST 1
#define NT_FORMAT_MINOR 4
#define NT_RECORD_ALIGN 8u

/* RecordKind */
enum {
	NT_KIND_INVALID = 0,
	NT_KIND_PADDING = 1,
	NT_KIND_STRING = 2,
	NT_KIND_THREAD = 3,
	NT_KIND_CALLSITE = 4,
	NT_KIND_CHUNK = 5,
	NT_KIND_PROCESS = 6,
	NT_KIND_ZCHUNK = 7,
	NT_KIND_CALLSITE_ARGS = 8,
	NT_KIND_BLOCKED = 9,
	NT_KIND_BEGIN = 16,
	NT_KIND_END = 17,
	NT_KIND_INSTANT = 18,
	NT_KIND_COMPLETE = 19,
	NT_KIND_COUNTER = 20,
	NT_KIND_TIMESTAMP = 21,
	/* Git Trace2 messages: NT_KIND_T2_FIRST + nt_t2_event. */
	NT_KIND_T2_FIRST = 32,
	NT_KIND_T2_LAST = 62,
	/* Events that carry a 64-bit id (IdEventRecord): async spans and flows. Bit 3 set is the
	 * same event with a global id (NT_KIND_ID_GLOBAL); 64..127 are all events (nt_record.h),
	 * those of no name here are a newer writer's, skipped by this reader. */
	NT_KIND_ASYNC_BEGIN = 64,
	NT_KIND_ASYNC_INSTANT = 65,
	NT_KIND_ASYNC_END = 66,
	NT_KIND_FLOW_BEGIN = 67,
	NT_KIND_FLOW_STEP = 68,
	NT_KIND_FLOW_END = 69,
	NT_KIND_ID_GLOBAL = 8,
	NT_KIND_EVENT_EXT_FIRST = 64,
	NT_KIND_EVENT_EXT_LAST = 127,
};

/* The scope of an IdEventRecord's id (nt_reader_event.id_scope). */
enum {
	NT_ID_NONE = 0,    /* the event carries no id */
	NT_ID_PROCESS = 1, /* the id names a span or flow within its process */
	NT_ID_GLOBAL = 2,  /* the id names it in every process of the trace */
};

/* Trace2 message types, in RecordKind order (record kind = NT_KIND_T2_FIRST + value). The
 * enum constants are NT_T2E_<ID>: NT_T2_<NAME> is the writer's macro namespace
 * (nanotrace_trace2.h), and one name has one meaning (tests/format/test_t2_names.py).
 * UNKNOWN is no Git message: it keeps an event a newer Git wrote that this version does not
 * know (trace-import); its Git name is its "event" argument, not the name here. */
#define NT_T2_EVENTS(X)                                                                    \
	X(VERSION, "version")                                                              \
	X(TOO_MANY_FILES, "too_many_files")                                                \
	X(START, "start")                                                                  \
	X(EXIT, "exit")                                                                    \
	X(SIGNAL, "signal")                                                                \
	X(ATEXIT, "atexit")                                                                \
	X(ERROR, "error")                                                                  \
	X(CMD_PATH, "cmd_path")                                                            \
	X(CMD_ANCESTRY, "cmd_ancestry")                                                    \
	X(CMD_NAME, "cmd_name")                                                            \
	X(CMD_MODE, "cmd_mode")                                                            \
	X(ALIAS, "alias")                                                                  \
	X(CHILD_START, "child_start")                                                      \
	X(CHILD_EXIT, "child_exit")                                                        \
	X(CHILD_READY, "child_ready")                                                      \
	X(THREAD_START, "thread_start")                                                    \
	X(THREAD_EXIT, "thread_exit")                                                      \
	X(EXEC, "exec")                                                                    \
	X(EXEC_RESULT, "exec_result")                                                      \
	X(DEF_PARAM, "def_param")                                                          \
	X(DEF_REPO, "def_repo")                                                            \
	X(REGION_ENTER, "region_enter")                                                    \
	X(REGION_LEAVE, "region_leave")                                                    \
	X(DATA, "data")                                                                    \
	X(DATA_JSON, "data_json")                                                          \
	X(PRINTF, "printf")                                                                \
	X(TIMER, "timer")                                                                  \
	X(TH_TIMER, "th_timer")                                                            \
	X(COUNTER, "counter")                                                              \
	X(TH_COUNTER, "th_counter")                                                        \
	X(UNKNOWN, "unknown")

typedef enum nt_t2_event {
#define NT_T2_ENUM_(id, name) NT_T2E_##id,
	NT_T2_EVENTS(NT_T2_ENUM_)
#undef NT_T2_ENUM_
	NT_T2_EVENT_COUNT
} nt_t2_event;

NT_STATIC_ASSERT(NT_KIND_T2_FIRST + NT_T2_EVENT_COUNT - 1 == NT_KIND_T2_LAST,
		 "every Trace2 message has a record kind");

/* Git's name of each Trace2 message ("region_enter"), by nt_t2_event. */
static const char *const nt_t2_event_names[NT_T2_EVENT_COUNT] = {
#define NT_T2_NAME_(id, name) name,
	NT_T2_EVENTS(NT_T2_NAME_)
#undef NT_T2_NAME_
};

static inline int nt_kind_is_t2(unsigned kind)
{
	return kind >= NT_KIND_T2_FIRST && kind <= NT_KIND_T2_LAST;
}

/* The async and flow kinds (IdEventRecord), process or global: an 8-byte id after word 0. */
static inline int nt_kind_has_id(unsigned kind)
{
	unsigned base = kind & ~(unsigned)NT_KIND_ID_GLOBAL;
	return kind >= NT_KIND_EVENT_EXT_FIRST && base >= NT_KIND_ASYNC_BEGIN &&
	       base <= NT_KIND_FLOW_END;
}

/* An IdEventRecord kind without its scope bit: NT_KIND_ASYNC_BEGIN ... NT_KIND_FLOW_END. */
static inline unsigned nt_kind_id_base(unsigned kind)
{
	return nt_kind_has_id(kind) ? kind & ~(unsigned)NT_KIND_ID_GLOBAL : kind;
}

/* The scope of the id an event of `kind` carries: NT_ID_NONE, _PROCESS or _GLOBAL. */
static inline unsigned nt_kind_id_scope(unsigned kind)
{
	if (!nt_kind_has_id(kind))
		return NT_ID_NONE;
	return (kind & NT_KIND_ID_GLOBAL) ? NT_ID_GLOBAL : NT_ID_PROCESS;
}

/* The argument (uint64) in which child_exit, child_ready and thread_exit carry their run
 * time in the archive's ticks: the reader turns it into Git's t_rel with the conversion it
 * applies to event ticks, so it is exact whatever the writer's start-up calibration said.
 * (An imported log carries Git's own "t_rel" in microseconds instead.) */
#define NT_T2_ARG_T_REL_TICKS "t_rel_ticks"

/* ProcessFlags */
enum { NT_PROCESS_BRIEF = 1u, NT_PROCESS_UTC_OFFSET_KNOWN = 2u };

/* Codec: how an archive's chunks may be compressed (ArchiveHeader.compression) and how one
 * CompressedChunk's payload is (nt_zchunk_record.codec). */
enum { NT_CODEC_NONE = 0, NT_CODEC_ZSTD = 1, NT_CODEC_ZSTD_LANES4 = 2 };
#define NT_CODEC_LAST NT_CODEC_ZSTD_LANES4

/* How tools name a codec (the archive header's compression field). */
static inline const char *nt_codec_name(unsigned codec)
{
	static const char *const names[] = { "none", "zstd", "zstd, 4 byte lanes" };
	return codec <= NT_CODEC_LAST ? names[codec] : "unknown";
}

/* ArgType */
enum {
	NT_ARG_NONE = 0,
	NT_ARG_INT32 = 1,
	NT_ARG_UINT32 = 2,
	NT_ARG_INT64 = 3,
	NT_ARG_UINT64 = 4,
	NT_ARG_DOUBLE = 5,
	NT_ARG_BOOL = 6,
	NT_ARG_POINTER = 7,
	NT_ARG_STRING = 8,
	NT_ARG_STRING_REF = 9,
	NT_ARG_STRING_LIST = 10,
	NT_ARG_JSON = 11,
};

/* BufferingMode */
enum { NT_MODE_ONESHOT = 0, NT_MODE_CIRCULAR = 1, NT_MODE_STREAMING = 2 };

/* The arena a session gets when it asks for none (nt_config.buffer_size 0, trace-record
 * without --buffer-size). Streaming gets more: its saver must absorb its own stalls
 * (page-cache writeback, a busy core), and 4 MiB written at 1.3 GB/s by one thread is 3 ms
 * of them; 16 MiB lost no event at that rate where 4 MiB lost up to 1.4% (bench/). */
#define NT_DEFAULT_BUFFER_BYTES (4u << 20)
#define NT_DEFAULT_STREAMING_BUFFER_BYTES (16u << 20)
static inline uint64_t nt_default_buffer_bytes(int mode)
{
	return mode == NT_MODE_STREAMING ? NT_DEFAULT_STREAMING_BUFFER_BYTES
					 : NT_DEFAULT_BUFFER_BYTES;
}

/* ClockSource: what an archive's ticks are. Named apart from nanotrace.h's nt_clock_choice
 * (NT_CLOCK_AUTO, NT_CLOCK_USE_*), what a program asks for, so that one is never written
 * for the other: `cfg.clock = NT_CLOCK_TSC` does not compile. */
typedef enum nt_clock_source { NT_CLOCK_SOURCE_MONOTONIC = 0, NT_CLOCK_SOURCE_TSC = 1 } nt_clock_source;

/* ArchiveLayout */
enum { NT_LAYOUT_STREAM = 0, NT_LAYOUT_ARENA = 1 };

/* EndReason */
enum { NT_END_UNKNOWN = 0, NT_END_FINISHED = 1, NT_END_EXIT = 2, NT_END_SIGNAL = 3 };

/* FinalState */
enum {
	NT_FINAL_RECORDING = 0,
	NT_FINAL_FINISHED = 1,
	NT_FINAL_DURABLE_FULL = 2,
	NT_FINAL_INDEX_FULL = 3,
};

/* Limits that follow from the field widths. */
#define NT_MAX_RECORD_WORDS 255u                  /* size_words is a ubyte */
#define NT_MAX_RECORD_BYTES (NT_MAX_RECORD_WORDS * 8u)
#define NT_MAX_STRING_LENGTH (NT_MAX_RECORD_BYTES - 8u) /* 2032 */
#define NT_MAX_THREAD_NAME_LENGTH (NT_MAX_RECORD_BYTES - 24u)
#define NT_MAX_SID_LENGTH (NT_MAX_RECORD_BYTES - 32u)
#define NT_MAX_STRING_INDEX 65535u                /* ArgHeader.name is a ushort */
#define NT_MAX_CALLSITE_INDEX 65535u              /* EventRecord.callsite is a ushort */
/* Compact records (nt_record.h): the call sites they can name, the tick deltas they can
 * carry, the 4-byte values they can hold. */
#define NT_COMPACT_CALLSITE_BITS 10u
#define NT_COMPACT_MAX_CALLSITE ((1u << NT_COMPACT_CALLSITE_BITS) - 1u) /* 1023 */
#define NT_COMPACT_DELTA_BITS 14u
#define NT_COMPACT_MAX_DELTA ((1u << NT_COMPACT_DELTA_BITS) - 1u)          /* 16383 ticks */
#define NT_COMPACT_MAX_VALUES 7u
/* Arguments a CallSiteArgs record describes: those of a compact record. */
#define NT_MAX_CALLSITE_ARGS NT_COMPACT_MAX_VALUES
/* The largest chunk piece a CompressedChunk may hold (its decompressed size_bytes): what a
 * reader allocates at most per decompressed chunk. Equal to NT_MAX_CHUNK
 * (nt_arena_layout.h), the largest chunk a saver cuts pieces from. */
#define NT_MAX_ZCHUNK_BYTES 65536u
/* The durable region of an arena is at most this large (format/nt_arena_layout.h). */
#define NT_MAX_DURABLE_BYTES (1u << 20)
/* The highest thread index a writer can give: each thread has a Thread record of at least
 * 24 bytes (nt_thread_record) in the durable region. Bounds the per-thread state of a saver
 * of an untrusted arena (runtime/nt_arena_saver.h). */
#define NT_MAX_THREAD_INDEX (NT_MAX_DURABLE_BYTES / 24u)
/* Process indices a reader accepts (ThreadRecord.process, ProcessRecord.index): bounds the
 * table a corrupt index could demand. */
#define NT_MAX_PROCESS_INDEX 65536u
/* A slot's overwrite counter (ArchiveHeader.slot_overwritten_offset): the events of the
 * chunk now in the slot are already counted in it (bit 63). */
#define NT_SLOT_CHUNK_COUNTED (1ull << 63)
/* ChunkHeader.claim: ((sequence + 1) << 1) | writer-active. */
#define NT_CLAIM_WRITER_ACTIVE 1u
static inline uint64_t nt_claim_sequence(uint64_t claim)
{
	return (claim >> 1) - 1u;
}
/* ChunkHeader.slot_wrap of the chunk a claim of `sequence` makes in an arena of `nslots`
 * slots: how many times its slot was claimed before (mod 2^16). A claim word whose sequence
 * gives another wrap than the header's belongs to a new owner that has not yet rewritten
 * the slot: the header is the previous, closed chunk's. */
static inline uint16_t nt_chunk_slot_wrap(uint64_t sequence, uint64_t nslots)
{
	return (uint16_t)(sequence / nslots);
}
/* Whether the chunk header a slot holds is closed, its events final: its owner released the
 * claim, or a new owner claimed the slot (a claim of another wrap) and has not yet rewritten
 * the header, which is still the previous chunk's. The reader of an arena and the manager
 * counting a provider's arena both judge a slot so. */
static inline int nt_chunk_closed(uint64_t claim, uint16_t slot_wrap, uint64_t nslots)
{
	return !(claim & NT_CLAIM_WRITER_ACTIVE) ||
	       nt_chunk_slot_wrap(nt_claim_sequence(claim), nslots) != slot_wrap;
}

typedef struct nt_record_prefix {
	uint8_t kind;
	uint8_t size_words;
} nt_record_prefix;

typedef struct nt_large_prefix {
	uint8_t kind;
	uint8_t size_words;
	uint16_t flags;
	uint32_t size_bytes;
} nt_large_prefix;

typedef struct nt_padding_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t reserved0;
	uint32_t reserved1;
} nt_padding_record;

typedef struct nt_string_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t length;
	uint32_t index;
} nt_string_record;

typedef struct nt_thread_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t name_length;
	uint32_t index;
	uint32_t pid;
	uint32_t tid;
	uint32_t process;
	uint32_t reserved0;
} nt_thread_record;

typedef struct nt_process_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t sid_length;
	uint32_t index;
	uint32_t pid;
	uint32_t flags;
	NT_ALIGN8 uint64_t start_ticks;
	int32_t utc_offset;
	uint32_t reserved0;
} nt_process_record;

typedef struct nt_callsite_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t index;
	uint32_t line;
	uint32_t category;
	uint32_t name;
	uint32_t file;
	uint32_t repo;
} nt_callsite_record;

/* Followed by `count` nt_arg_slot, zero-padded to 8: the arguments of every compact record
 * of call site `callsite`, in order (nt_record.h). Written once per call site, after its
 * CallSite record, only for a site whose events can be compact. */
typedef struct nt_callsite_args_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t callsite;
	uint32_t count;
} nt_callsite_args_record;

/* One argument of a CallSiteArgs record: its name and the type the writer declared. A
 * compact record's 4-byte value i is read by slot i's type: Int32 and Int64 are a signed
 * 32-bit value (delivered as Int32), UInt32 and UInt64 an unsigned one (as UInt32), Bool
 * nonzero or zero. Any other type is damage. */
typedef struct nt_arg_slot {
	uint16_t name;
	uint8_t type;
	uint8_t reserved0;
} nt_arg_slot;

/* A compact record's head (its bits: nt_record.h, which reads and writes them). */
typedef struct nt_compact_record {
	uint32_t head;
} nt_compact_record;

typedef struct nt_chunk_header {
	uint8_t kind;
	uint8_t size_words;
	uint16_t slot_wrap;
	uint32_t size_bytes;
	uint32_t thread;
	uint32_t event_count;
	NT_ALIGN8 uint64_t claim;
	NT_ALIGN8 uint64_t base_ticks;
	NT_ALIGN8 uint64_t first_event;
} nt_chunk_header;

/* A CompressedChunk (large record): word 0, a copy of the chunk piece's header (its
 * size_bytes is the decompressed piece's: header + records, at most NT_MAX_ZCHUNK_BYTES),
 * then `compressed_bytes` bytes of one frame of `codec` holding the piece's records (what
 * follows its 40-byte header), zero-padded to 8. format/nt_zchunk.h makes and opens them. */
typedef struct nt_zchunk_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t codec;
	uint32_t size_bytes;
	nt_chunk_header chunk;
	uint32_t compressed_bytes;
	uint32_t reserved0;
} nt_zchunk_record;

typedef struct nt_event_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t callsite;
	uint32_t delta;
} nt_event_record;

typedef struct nt_complete_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t callsite;
	uint32_t delta;
	NT_ALIGN8 uint64_t duration;
} nt_complete_record;

/* 16 bytes, then arguments: an async or flow event (NT_KIND_ASYNC_BEGIN ... FLOW_END, with
 * or without NT_KIND_ID_GLOBAL), an EventRecord and its id. */
typedef struct nt_id_event_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t callsite;
	uint32_t delta;
	NT_ALIGN8 uint64_t id;
} nt_id_event_record;

typedef struct nt_timestamp_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t reserved0;
	uint32_t reserved1;
	NT_ALIGN8 uint64_t ticks;
} nt_timestamp_record;

/* 24 bytes, inside a chunk (no event): the thread's waits for a streaming saver since its
 * previous BlockedRecord (schema: BlockedRecord). */
typedef struct nt_blocked_record {
	uint8_t kind;
	uint8_t size_words;
	uint16_t reserved0;
	uint32_t waits;
	uint32_t timeouts;
	uint32_t reserved1;
	NT_ALIGN8 uint64_t blocked_ns;
} nt_blocked_record;

typedef struct nt_arg_header {
	uint8_t type;
	uint8_t size_words;
	uint16_t name;
	uint32_t value32;
} nt_arg_header;

NT_STATIC_ASSERT(sizeof(nt_record_prefix) == 2, "RecordPrefix is 2 bytes");
NT_STATIC_ASSERT(sizeof(nt_large_prefix) == 8, "LargePrefix is 8 bytes");
NT_STATIC_ASSERT(sizeof(nt_padding_record) == 8, "PaddingRecord is 8 bytes");
NT_STATIC_ASSERT(sizeof(nt_string_record) == 8, "StringRecord is 8 bytes");
NT_STATIC_ASSERT(sizeof(nt_thread_record) == 24, "ThreadRecord is 24 bytes");
NT_STATIC_ASSERT(sizeof(nt_process_record) == 32, "ProcessRecord is 32 bytes");
NT_STATIC_ASSERT(sizeof(nt_callsite_record) == 24, "CallSiteRecord is 24 bytes");
NT_STATIC_ASSERT(sizeof(nt_chunk_header) == 40, "ChunkHeader is 40 bytes");
NT_STATIC_ASSERT(sizeof(nt_callsite_args_record) == 8, "CallSiteArgsRecord is 8 bytes");
NT_STATIC_ASSERT(sizeof(nt_arg_slot) == 4, "ArgSlot is 4 bytes");
NT_STATIC_ASSERT(sizeof(nt_compact_record) == 4, "CompactHead is 4 bytes");
NT_STATIC_ASSERT(sizeof(nt_zchunk_record) == 56, "CompressedChunk is 56 bytes");
NT_STATIC_ASSERT(sizeof(nt_event_record) == 8, "EventRecord is 8 bytes");
NT_STATIC_ASSERT(sizeof(nt_complete_record) == 16, "CompleteRecord is 16 bytes");
NT_STATIC_ASSERT(sizeof(nt_id_event_record) == 16, "IdEventRecord is 16 bytes");
NT_STATIC_ASSERT(sizeof(nt_timestamp_record) == 16, "TimestampRecord is 16 bytes");
NT_STATIC_ASSERT(sizeof(nt_blocked_record) == 24, "BlockedRecord is 24 bytes");
NT_STATIC_ASSERT(sizeof(nt_arg_header) == 8, "ArgHeader is 8 bytes");

/* Words a string payload of `len` bytes takes, rounded up to 8 bytes. */
static inline uint32_t nt_words_for_bytes(uint32_t len)
{
	return (len + 7u) / 8u;
}

#endif /* NT_FORMAT_H */
