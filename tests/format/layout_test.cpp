// layout_test.cpp - proves format/ (the C mirror) and schema/nanotrace.fbs describe the same
// bytes, using the code Debian's flatc generates from the schema.
//
//  1. Compile time: sizeof, alignof and every field's offset and size of each record struct
//     equal flatc's (fields made public in a test-only copy of the generated header), the
//     enum values are equal, and the ArchiveHeader field ids equal flatc's VT_ constants.
//  2. Run time: the embedded binary schema is walked with FlatBuffers reflection, so a field
//     added to the schema but missing in C (or the reverse) fails even if sizes still match.
//  3. Run time: flatc's Verifier accepts the header the C writer encodes, and the generated
//     accessors read back every value.
// Each numbered part is a cmocka test (argv[1]: a folder for the archive of part 3).
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "flatbuffers/reflection.h"
#include "nanotrace_bfbs_generated.h"
#include "nanotrace_generated_public.h"

#include <nanotrace/nanotrace.h>
#include "format/nt_archive_header.h"
#include "format/nt_archive_header_encode.h"
#include "format/nt_bundle.h"
#include "format/nt_fifo.h"
#include "format/nt_format.h"
#include "format/nt_wire.h"
#include "tests/support/nt_cmocka.h"


namespace fb = ntfmt;

/* Every struct of the format, once: the C mirror, the flatc struct, the record kind it has
 * in the schema (-1: not a record) and its fields in order. Both checks below (compile time
 * against flatc's C++, run time against the reflected schema) come from this one list. */
#define NT_FORMAT_STRUCTS(S)                                                               \
	S(nt_record_prefix, RecordPrefix, -1, kind, size_words)                             \
	S(nt_large_prefix, LargePrefix, -1, kind, size_words, flags, size_bytes)            \
	S(nt_padding_record, PaddingRecord, NT_KIND_PADDING, kind, size_words, reserved0,   \
	  reserved1)                                                                       \
	S(nt_string_record, StringRecord, NT_KIND_STRING, kind, size_words, length, index)  \
	S(nt_thread_record, ThreadRecord, NT_KIND_THREAD, kind, size_words, name_length,    \
	  index, pid, tid, process, reserved0)                                             \
	S(nt_process_record, ProcessRecord, NT_KIND_PROCESS, kind, size_words, sid_length,  \
	  index, pid, flags, start_ticks, utc_offset, reserved0)                           \
	S(nt_callsite_record, CallSiteRecord, NT_KIND_CALLSITE, kind, size_words, index,    \
	  line, category, name, file, repo)                                                \
	S(nt_chunk_header, ChunkHeader, NT_KIND_CHUNK, kind, size_words, slot_wrap,         \
	  size_bytes, thread, event_count, claim, base_ticks, first_event)                 \
	S(nt_zchunk_record, CompressedChunkRecord, NT_KIND_ZCHUNK, kind, size_words, codec, \
	  size_bytes, chunk, compressed_bytes, reserved0)                                  \
	S(nt_callsite_args_record, CallSiteArgsRecord, NT_KIND_CALLSITE_ARGS, kind,         \
	  size_words, callsite, count)                                                     \
	S(nt_arg_slot, ArgSlot, -1, name, type, reserved0)                                  \
	S(nt_compact_record, CompactHead, -1, head)                                         \
	S(nt_event_record, EventRecord, NT_KIND_BEGIN, kind, size_words, callsite, delta)   \
	S(nt_complete_record, CompleteRecord, NT_KIND_COMPLETE, kind, size_words, callsite, \
	  delta, duration)                                                                 \
	S(nt_id_event_record, IdEventRecord, NT_KIND_ASYNC_BEGIN, kind, size_words,         \
	  callsite, delta, id)                                                             \
	S(nt_timestamp_record, TimestampRecord, NT_KIND_TIMESTAMP, kind, size_words,        \
	  reserved0, reserved1, ticks)                                                     \
	S(nt_blocked_record, BlockedRecord, NT_KIND_BLOCKED, kind, size_words, reserved0,   \
	  waits, timeouts, reserved1, blocked_ns)                                          \
	S(nt_arg_header, ArgHeader, -1, type, size_words, name, value32)                    \
	S(nt_fifo_packet, FifoPacket, -1, request, data16, data32, data64)                 \
	S(nt_bundle_preamble, BundlePreamble, -1, magic, version, flags, created_wall_ns,   \
	  producer, reserved)                                                              \
	S(nt_bundle_frame, BundleFrame, -1, magic, kind, end_state, mode, pid, provider_id, \
	  name_len, message_len, sections, archive_size, end_wall_ns, reserved)            \
	S(nt_wire_msg, WireMessage, -1, magic, type, version, pid, name_len, text_len, a, b, \
	  c, d, name, text)

/* FOR_EACH(m, C, G, f1, ..., fn) expands to m(C, G, f1) ... m(C, G, fn), n <= 12. */
#define FE_1(m, C, G, f) m(C, G, f)
#define FE_2(m, C, G, f, ...) m(C, G, f) FE_1(m, C, G, __VA_ARGS__)
#define FE_3(m, C, G, f, ...) m(C, G, f) FE_2(m, C, G, __VA_ARGS__)
#define FE_4(m, C, G, f, ...) m(C, G, f) FE_3(m, C, G, __VA_ARGS__)
#define FE_5(m, C, G, f, ...) m(C, G, f) FE_4(m, C, G, __VA_ARGS__)
#define FE_6(m, C, G, f, ...) m(C, G, f) FE_5(m, C, G, __VA_ARGS__)
#define FE_7(m, C, G, f, ...) m(C, G, f) FE_6(m, C, G, __VA_ARGS__)
#define FE_8(m, C, G, f, ...) m(C, G, f) FE_7(m, C, G, __VA_ARGS__)
#define FE_9(m, C, G, f, ...) m(C, G, f) FE_8(m, C, G, __VA_ARGS__)
#define FE_10(m, C, G, f, ...) m(C, G, f) FE_9(m, C, G, __VA_ARGS__)
#define FE_11(m, C, G, f, ...) m(C, G, f) FE_10(m, C, G, __VA_ARGS__)
#define FE_12(m, C, G, f, ...) m(C, G, f) FE_11(m, C, G, __VA_ARGS__)
#define FE_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, N, ...) N
#define FOR_EACH(m, C, G, ...)                                                             \
	FE_PICK(__VA_ARGS__, FE_12, FE_11, FE_10, FE_9, FE_8, FE_7, FE_6, FE_5, FE_4, FE_3, \
		FE_2, FE_1)(m, C, G, __VA_ARGS__)

#define SAME_FIELD(C, G, f)                                                                \
	static_assert(offsetof(C, f) == offsetof(fb::G, f##_), #G "." #f ": offset");      \
	static_assert(sizeof(C::f) == sizeof(fb::G::f##_), #G "." #f ": size");
#define SAME_STRUCT(C, G, kind, ...)                                                       \
	static_assert(sizeof(C) == sizeof(fb::G), #G ": sizeof");                          \
	static_assert(alignof(C) == alignof(fb::G) || alignof(C) == 8, #G ": alignof");    \
	static_assert(std::is_standard_layout<fb::G>::value &&                             \
			      std::is_trivially_copyable<fb::G>::value,                    \
		      #G ": POD");                                                         \
	FOR_EACH(SAME_FIELD, C, G, __VA_ARGS__)
NT_FORMAT_STRUCTS(SAME_STRUCT)

#define SAME_ENUM(c, g) static_assert((int)(c) == (int)fb::g, #g ": value");
SAME_ENUM(NT_FIFO_STARTED, FifoRequest_Started)
SAME_ENUM(NT_FIFO_SAVE_BUFFER, FifoRequest_SaveBuffer)
SAME_ENUM(NT_FIFO_STOPPED, FifoRequest_Stopped)
SAME_ENUM(NT_FIFO_BUFFER_SAVED, FifoRequest_BufferSaved)
SAME_ENUM(NT_KIND_INVALID, RecordKind_Invalid)
SAME_ENUM(NT_KIND_PADDING, RecordKind_Padding)
SAME_ENUM(NT_KIND_STRING, RecordKind_String)
SAME_ENUM(NT_KIND_THREAD, RecordKind_Thread)
SAME_ENUM(NT_KIND_CALLSITE, RecordKind_CallSite)
SAME_ENUM(NT_KIND_CHUNK, RecordKind_Chunk)
SAME_ENUM(NT_KIND_ZCHUNK, RecordKind_CompressedChunk)
SAME_ENUM(NT_KIND_CALLSITE_ARGS, RecordKind_CallSiteArgs)
SAME_ENUM(NT_KIND_BLOCKED, RecordKind_Blocked)
SAME_ENUM(NT_CODEC_NONE, Codec_None)
SAME_ENUM(NT_CODEC_ZSTD, Codec_Zstd)
SAME_ENUM(NT_CODEC_ZSTD_LANES4, Codec_ZstdLanes4)
static_assert((int)fb::Codec_MAX == (int)NT_CODEC_LAST, "a codec was added");
SAME_ENUM(NT_KIND_BEGIN, RecordKind_Begin)
SAME_ENUM(NT_KIND_END, RecordKind_End)
SAME_ENUM(NT_KIND_INSTANT, RecordKind_Instant)
SAME_ENUM(NT_KIND_COMPLETE, RecordKind_Complete)
SAME_ENUM(NT_KIND_COUNTER, RecordKind_Counter)
SAME_ENUM(NT_KIND_TIMESTAMP, RecordKind_Timestamp)
SAME_ENUM(NT_KIND_ASYNC_BEGIN, RecordKind_AsyncBegin)
SAME_ENUM(NT_KIND_ASYNC_INSTANT, RecordKind_AsyncInstant)
SAME_ENUM(NT_KIND_ASYNC_END, RecordKind_AsyncEnd)
SAME_ENUM(NT_KIND_FLOW_BEGIN, RecordKind_FlowBegin)
SAME_ENUM(NT_KIND_FLOW_STEP, RecordKind_FlowStep)
SAME_ENUM(NT_KIND_FLOW_END, RecordKind_FlowEnd)
SAME_ENUM(NT_KIND_ASYNC_BEGIN | NT_KIND_ID_GLOBAL, RecordKind_AsyncBeginGlobal)
SAME_ENUM(NT_KIND_ASYNC_INSTANT | NT_KIND_ID_GLOBAL, RecordKind_AsyncInstantGlobal)
SAME_ENUM(NT_KIND_ASYNC_END | NT_KIND_ID_GLOBAL, RecordKind_AsyncEndGlobal)
SAME_ENUM(NT_KIND_FLOW_BEGIN | NT_KIND_ID_GLOBAL, RecordKind_FlowBeginGlobal)
SAME_ENUM(NT_KIND_FLOW_STEP | NT_KIND_ID_GLOBAL, RecordKind_FlowStepGlobal)
SAME_ENUM(NT_KIND_FLOW_END | NT_KIND_ID_GLOBAL, RecordKind_FlowEndGlobal)
SAME_ENUM(NT_ARG_NONE, ArgType_None)
SAME_ENUM(NT_ARG_INT32, ArgType_Int32)
SAME_ENUM(NT_ARG_UINT32, ArgType_Uint32)
SAME_ENUM(NT_ARG_INT64, ArgType_Int64)
SAME_ENUM(NT_ARG_UINT64, ArgType_Uint64)
SAME_ENUM(NT_ARG_DOUBLE, ArgType_Double)
SAME_ENUM(NT_ARG_BOOL, ArgType_Bool)
SAME_ENUM(NT_ARG_POINTER, ArgType_Pointer)
SAME_ENUM(NT_ARG_STRING, ArgType_String)
SAME_ENUM(NT_ARG_STRING_REF, ArgType_StringRef)
SAME_ENUM(NT_KIND_PROCESS, RecordKind_Process)
SAME_ENUM(NT_ARG_STRING_LIST, ArgType_StringList)
SAME_ENUM(NT_ARG_JSON, ArgType_JsonValue)
SAME_ENUM(NT_PROCESS_BRIEF, ProcessFlags_Brief)
SAME_ENUM(NT_PROCESS_UTC_OFFSET_KNOWN, ProcessFlags_UtcOffsetKnown)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_VERSION, RecordKind_Trace2Version)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_TOO_MANY_FILES, RecordKind_Trace2TooManyFiles)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_START, RecordKind_Trace2Start)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_EXIT, RecordKind_Trace2Exit)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_SIGNAL, RecordKind_Trace2Signal)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_ATEXIT, RecordKind_Trace2Atexit)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_ERROR, RecordKind_Trace2Error)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_CMD_PATH, RecordKind_Trace2CmdPath)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_CMD_ANCESTRY, RecordKind_Trace2CmdAncestry)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_CMD_NAME, RecordKind_Trace2CmdName)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_CMD_MODE, RecordKind_Trace2CmdMode)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_ALIAS, RecordKind_Trace2Alias)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_CHILD_START, RecordKind_Trace2ChildStart)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_CHILD_EXIT, RecordKind_Trace2ChildExit)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_CHILD_READY, RecordKind_Trace2ChildReady)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_THREAD_START, RecordKind_Trace2ThreadStart)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_THREAD_EXIT, RecordKind_Trace2ThreadExit)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_EXEC, RecordKind_Trace2Exec)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_EXEC_RESULT, RecordKind_Trace2ExecResult)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_DEF_PARAM, RecordKind_Trace2DefParam)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_DEF_REPO, RecordKind_Trace2DefRepo)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_REGION_ENTER, RecordKind_Trace2RegionEnter)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_REGION_LEAVE, RecordKind_Trace2RegionLeave)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_DATA, RecordKind_Trace2Data)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_DATA_JSON, RecordKind_Trace2DataJson)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_PRINTF, RecordKind_Trace2Printf)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_TIMER, RecordKind_Trace2Timer)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_TH_TIMER, RecordKind_Trace2ThTimer)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_COUNTER, RecordKind_Trace2Counter)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_TH_COUNTER, RecordKind_Trace2ThCounter)
SAME_ENUM(NT_KIND_T2_FIRST + NT_T2E_UNKNOWN, RecordKind_Trace2Unknown)
SAME_ENUM(NT_MODE_ONESHOT, BufferingMode_Oneshot)
SAME_ENUM(NT_MODE_CIRCULAR, BufferingMode_Circular)
SAME_ENUM(NT_MODE_STREAMING, BufferingMode_Streaming)
SAME_ENUM(NT_CLOCK_SOURCE_MONOTONIC, ClockSource_Monotonic)
SAME_ENUM(NT_CLOCK_SOURCE_TSC, ClockSource_Tsc)
SAME_ENUM(NT_LAYOUT_STREAM, ArchiveLayout_Stream)
SAME_ENUM(NT_LAYOUT_ARENA, ArchiveLayout_Arena)
SAME_ENUM(NT_END_UNKNOWN, EndReason_Unknown)
SAME_ENUM(NT_END_FINISHED, EndReason_Finished)
SAME_ENUM(NT_END_EXIT, EndReason_Exit)
SAME_ENUM(NT_END_SIGNAL, EndReason_Signal)
SAME_ENUM(NT_FINAL_RECORDING, FinalState_Recording)
SAME_ENUM(NT_FINAL_FINISHED, FinalState_Finished)
SAME_ENUM(NT_FINAL_DURABLE_FULL, FinalState_DurableFull)
SAME_ENUM(NT_FINAL_INDEX_FULL, FinalState_IndexFull)
SAME_ENUM(NT_BUNDLE_SECTION, BundleFrameKind_Section)
SAME_ENUM(NT_BUNDLE_END, BundleFrameKind_End)
SAME_ENUM(NT_SECTION_FINISHED, SectionState_Finished)
SAME_ENUM(NT_SECTION_EXITED, SectionState_Exited)
SAME_ENUM(NT_SECTION_KILLED, SectionState_Killed)
SAME_ENUM(NT_SECTION_TIMED_OUT, SectionState_TimedOut)
SAME_ENUM(NT_SECTION_DAMAGED, SectionState_Damaged)
SAME_ENUM(NT_SECTION_MANAGER_LOST, SectionState_ManagerLost)
SAME_ENUM(NT_SECTION_EXITED_UNSTOPPED, SectionState_ExitedUnstopped)
SAME_ENUM(NT_SECTION_EXECED, SectionState_Execed)
SAME_ENUM(NT_SECTION_ENDED_UNKNOWN, SectionState_EndedUnknown)
static_assert((int)fb::SectionState_MAX == (int)NT_SECTION_ENDED_UNKNOWN, "a section state was added");
SAME_ENUM(NT_WIRE_REGISTER, WireType_Register)
SAME_ENUM(NT_WIRE_REGISTERED, WireType_Registered)
SAME_ENUM(NT_WIRE_INITIALIZE, WireType_Initialize)
SAME_ENUM(NT_WIRE_START, WireType_Start)
SAME_ENUM(NT_WIRE_STOP, WireType_Stop)
SAME_ENUM(NT_WIRE_TERMINATE, WireType_Terminate)
SAME_ENUM(NT_WIRE_CTL_LIST, WireType_CtlList)
SAME_ENUM(NT_WIRE_CTL_SELECT, WireType_CtlSelect)
SAME_ENUM(NT_WIRE_CTL_START, WireType_CtlStart)
SAME_ENUM(NT_WIRE_CTL_STOP, WireType_CtlStop)
SAME_ENUM(NT_WIRE_CTL_PROVIDER, WireType_CtlProvider)
SAME_ENUM(NT_WIRE_CTL_END, WireType_CtlEnd)
SAME_ENUM(NT_WIRE_CTL_STARTED, WireType_CtlStarted)
SAME_ENUM(NT_WIRE_CTL_PROGRESS, WireType_CtlProgress)
SAME_ENUM(NT_WIRE_CTL_STOPPED, WireType_CtlStopped)
static_assert((int)fb::WireType_MAX == (int)NT_WIRE_CTL_STOPPED, "a wire message type was added");
static_assert(NT_WIRE_MAX_NAME <= sizeof(((nt_wire_msg *)0)->name) &&
		      NT_WIRE_MAX_TEXT <= sizeof(((nt_wire_msg *)0)->text),
	      "WireMessage: the limits fit the arrays");

#define SAME_VT(id, vt) static_assert(NT_HDR_VTABLE_OFFSET(id) == fb::ArchiveHeader::vt, #vt);
SAME_VT(NT_HDR_FORMAT_MAJOR, VT_FORMAT_MAJOR)
SAME_VT(NT_HDR_FORMAT_MINOR, VT_FORMAT_MINOR)
SAME_VT(NT_HDR_PRODUCER, VT_PRODUCER)
SAME_VT(NT_HDR_CLOCK_SOURCE, VT_CLOCK_SOURCE)
SAME_VT(NT_HDR_TICKS_PER_SECOND, VT_TICKS_PER_SECOND)
SAME_VT(NT_HDR_START_TICKS, VT_START_TICKS)
SAME_VT(NT_HDR_START_MONOTONIC_NS, VT_START_MONOTONIC_NS)
SAME_VT(NT_HDR_START_REALTIME_NS, VT_START_REALTIME_NS)
SAME_VT(NT_HDR_FINISH_TICKS, VT_FINISH_TICKS)
SAME_VT(NT_HDR_FINISH_MONOTONIC_NS, VT_FINISH_MONOTONIC_NS)
SAME_VT(NT_HDR_FINISH_REALTIME_NS, VT_FINISH_REALTIME_NS)
SAME_VT(NT_HDR_PID, VT_PID)
SAME_VT(NT_HDR_PROCESS_NAME, VT_PROCESS_NAME)
SAME_VT(NT_HDR_BUFFERING_MODE, VT_BUFFERING_MODE)
SAME_VT(NT_HDR_ARENA_SIZE, VT_ARENA_SIZE)
SAME_VT(NT_HDR_DURABLE_SIZE, VT_DURABLE_SIZE)
SAME_VT(NT_HDR_CHUNK_SIZE, VT_CHUNK_SIZE)
SAME_VT(NT_HDR_CHUNKS_PER_HALF, VT_CHUNKS_PER_HALF)
SAME_VT(NT_HDR_FINAL_STATE, VT_FINAL_STATE)
SAME_VT(NT_HDR_EVENTS_WRITTEN, VT_EVENTS_WRITTEN)
SAME_VT(NT_HDR_EVENTS_DROPPED, VT_EVENTS_DROPPED)
SAME_VT(NT_HDR_EVENTS_OVERWRITTEN, VT_EVENTS_OVERWRITTEN)
SAME_VT(NT_HDR_WRAPS, VT_WRAPS)
SAME_VT(NT_HDR_DURABLE_DROPPED, VT_DURABLE_DROPPED)
SAME_VT(NT_HDR_CHUNKS_CLAIMED, VT_CHUNKS_CLAIMED)
SAME_VT(NT_HDR_LAYOUT, VT_LAYOUT)
SAME_VT(NT_HDR_DATA_OFFSET, VT_DATA_OFFSET)
SAME_VT(NT_HDR_ENDED_BY, VT_ENDED_BY)
SAME_VT(NT_HDR_END_SIGNAL, VT_END_SIGNAL)
SAME_VT(NT_HDR_DROPPED_ROLLING_FULL, VT_DROPPED_ROLLING_FULL)
SAME_VT(NT_HDR_DROPPED_DURABLE_FULL, VT_DROPPED_DURABLE_FULL)
SAME_VT(NT_HDR_DROPPED_STOPPED, VT_DROPPED_STOPPED)
SAME_VT(NT_HDR_STREAM_OFFSET, VT_STREAM_OFFSET)
SAME_VT(NT_HDR_BUFFERS_SAVED, VT_BUFFERS_SAVED)
SAME_VT(NT_HDR_STREAM_END, VT_STREAM_END)
SAME_VT(NT_HDR_STREAM_ORDERED, VT_STREAM_ORDERED)
SAME_VT(NT_HDR_VALUES_TRUNCATED, VT_VALUES_TRUNCATED)
SAME_VT(NT_HDR_SLOT_OVERWRITTEN_OFFSET, VT_SLOT_OVERWRITTEN_OFFSET)
SAME_VT(NT_HDR_COMPRESSION, VT_COMPRESSION)
SAME_VT(NT_HDR_COMPRESSION_LEVEL, VT_COMPRESSION_LEVEL)
SAME_VT(NT_HDR_SAVE_ERRNO, VT_SAVE_ERRNO)
SAME_VT(NT_HDR_DROPPED_UNSAVED, VT_DROPPED_UNSAVED)
SAME_VT(NT_HDR_CHILDREN_FORKED, VT_CHILDREN_FORKED)
SAME_VT(NT_HDR_FORKED_FROM, VT_FORKED_FROM)
SAME_VT(NT_HDR_BLOCKING_TIMEOUT_US, VT_BLOCKING_TIMEOUT_US)
SAME_VT(NT_HDR_BLOCKED_WAITS, VT_BLOCKED_WAITS)
SAME_VT(NT_HDR_BLOCKED_TIMEOUTS, VT_BLOCKED_TIMEOUTS)
SAME_VT(NT_HDR_BLOCKED_NS, VT_BLOCKED_NS)
SAME_VT(NT_HDR_TRACEPARENT, VT_TRACEPARENT)
static_assert(NT_HDR_FIELD_COUNT == 49, "a header field was added: add its SAME_VT check");


struct c_field {
	size_t offset, size;
};
struct c_struct {
	size_t size;
	int record_kind; // -1: not a record
	std::map<std::string, c_field> fields;
};

#define MIRROR_FIELD(C, G, f) { #f, { offsetof(C, f), sizeof(C::f) } },
#define MIRROR_STRUCT(C, G, kind, ...)                                                     \
	{ "ntfmt." #G, { sizeof(C), (kind), { FOR_EACH(MIRROR_FIELD, C, G, __VA_ARGS__) } } },
static std::map<std::string, c_struct> c_mirror()
{
	return { NT_FORMAT_STRUCTS(MIRROR_STRUCT) };
}

static void check_reflection(void **)
{
	const auto *schema = reflection::GetSchema(fb::ArchiveHeaderBinarySchema::data());
	auto mirror = c_mirror();
	size_t structs = 0;
	for (const auto *obj : *schema->objects()) {
		if (!obj->is_struct())
			continue;
		structs++;
		std::string name = obj->name()->str();
		auto it = mirror.find(name);
		if (it == mirror.end()) {
			assert_msg(false, "%s is in the schema but not in format/nt_format.h", name.c_str());
			continue;
		}
		const c_struct &c = it->second;
		assert_msg((size_t)obj->bytesize() == c.size, "%s: schema %d bytes, C %zu", name.c_str(),
		      obj->bytesize(), c.size);
		assert_msg(obj->fields()->size() == c.fields.size(), "%s: schema %u fields, C %zu",
		      name.c_str(), obj->fields()->size(), c.fields.size());
		for (const auto *f : *obj->fields()) {
			auto cf = c.fields.find(f->name()->str());
			if (cf == c.fields.end()) {
				assert_msg(false, "%s.%s missing in C", name.c_str(), f->name()->c_str());
				continue;
			}
			/* A fixed array ([ubyte:8]) is its elements' size times its length. */
			/* A nested struct (CompressedChunkRecord.chunk) is its struct's size. */
			size_t sz = f->type()->base_type() == reflection::Array
					    ? flatbuffers::GetTypeSize(f->type()->element()) *
						      f->type()->fixed_length()
				    : f->type()->base_type() == reflection::Obj
					    ? (size_t)schema->objects()->Get(f->type()->index())->bytesize()
					    : flatbuffers::GetTypeSize(f->type()->base_type());
			assert_msg(cf->second.offset == f->offset() && cf->second.size == sz,
			      "%s.%s: schema @%u/%zu, C @%zu/%zu", name.c_str(), f->name()->c_str(),
			      f->offset(), sz, cf->second.offset, cf->second.size);
		}
		int kind = -1;
		if (obj->attributes())
			for (const auto *kv : *obj->attributes())
				if (kv->key()->str() == "record_kind")
					kind = std::stoi(kv->value()->str());
		assert_msg(kind == c.record_kind,
		      "%s: record_kind %d, C %d", name.c_str(), kind, c.record_kind);
	}
	assert_msg(structs == mirror.size(), "schema has %zu structs, C mirror %zu", structs, mirror.size());
	std::printf("reflection: %zu structs match field by field\n", structs);
}

static void check_header_encoding(void **)
{
	nt_archive_info in;
	std::memset(&in, 0, sizeof(in));
	in.format_major = 1;
	in.format_minor = 0;
	std::snprintf(in.producer, sizeof(in.producer), "nanotrace test");
	std::snprintf(in.process_name, sizeof(in.process_name), "proc \xc3\xa9");
	in.clock_source = NT_CLOCK_SOURCE_TSC;
	in.ticks_per_second = 2000000000ull;
	in.start_ticks = 0x0102030405060708ull;
	in.start_monotonic_ns = 11;
	in.start_realtime_ns = 1700000000000000000ull;
	in.finish_ticks = 0xfffffffffffffff0ull;
	in.finish_monotonic_ns = 12;
	in.finish_realtime_ns = 13;
	in.pid = 4242;
	in.buffering_mode = NT_MODE_CIRCULAR;
	in.arena_size = 4u << 20;
	in.durable_size = 1u << 18;
	in.chunk_size = 16384;
	in.chunks_per_half = 120;
	in.final_state = NT_FINAL_DURABLE_FULL;
	in.events_written = 99;
	in.events_dropped = 98;
	in.events_overwritten = 97;
	in.wraps = 96;
	in.durable_dropped = 95;
	in.chunks_claimed = 94;
	std::vector<uint8_t> buf(1024);
	in.layout = NT_LAYOUT_ARENA;
	in.data_offset = NT_ARENA_HEADER_BYTES;
	in.ended_by = NT_END_SIGNAL;
	in.end_signal = 15;
	in.dropped_rolling_full = 93;
	in.dropped_durable_full = 92;
	in.dropped_stopped = 91;
	in.compression = NT_CODEC_ZSTD;
	in.compression_level = -5;
	in.save_errno = 28;
	in.dropped_unsaved = 90;
	in.children_forked = 90;
	in.forked_from = 4141;
	size_t n = nt_header_encode(&in, buf.data(), buf.size(), nullptr);
	assert_msg(n > 0 && n % 8 == 0, "encoded header is %zu bytes", n);
	flatbuffers::Verifier v(buf.data(), n);
	assert_msg(fb::VerifySizePrefixedArchiveHeaderBuffer(v), "flatc's Verifier rejects the header");
	assert_msg(fb::SizePrefixedArchiveHeaderBufferHasIdentifier(buf.data()), "identifier");
	const fb::ArchiveHeader *h = fb::GetSizePrefixedArchiveHeader(buf.data());
	assert_msg(h->producer()->str() == in.producer, "producer");
	assert_msg(h->process_name()->str() == in.process_name, "process_name");
	assert_msg(h->clock_source() == fb::ClockSource_Tsc, "clock_source");
	assert_msg(h->ticks_per_second() == in.ticks_per_second, "ticks_per_second");
	assert_msg(h->start_ticks() == in.start_ticks, "start_ticks");
	assert_msg(h->start_realtime_ns() == in.start_realtime_ns, "start_realtime_ns");
	assert_msg(h->finish_ticks() == in.finish_ticks, "finish_ticks");
	assert_msg(h->pid() == in.pid, "pid");
	assert_msg(h->buffering_mode() == fb::BufferingMode_Circular, "buffering_mode");
	assert_msg(h->chunk_size() == in.chunk_size, "chunk_size");
	assert_msg(h->chunks_per_half() == in.chunks_per_half, "chunks_per_half");
	assert_msg(h->final_state() == fb::FinalState_DurableFull, "final_state");
	assert_msg(h->events_written() == 99 && h->events_dropped() == 98 &&
		      h->events_overwritten() == 97 && h->wraps() == 96 &&
		      h->durable_dropped() == 95 && h->chunks_claimed() == 94,
	      "counters");
	assert_msg(h->layout() == fb::ArchiveLayout_Arena && h->data_offset() == NT_ARENA_HEADER_BYTES &&
		      h->ended_by() == fb::EndReason_Signal && h->end_signal() == 15 &&
		      h->dropped_rolling_full() == 93 && h->dropped_durable_full() == 92 &&
		      h->dropped_stopped() == 91,
	      "layout, end and drop reasons");
	assert_msg(h->compression() == fb::Codec_Zstd && h->compression_level() == -5,
		   "compression and its level");
	assert_msg(h->save_errno() == 28 && h->dropped_unsaved() == 90,
		   "why saving stopped and the events it cost");
	assert_msg(h->children_forked() == 90 && h->forked_from() == 4141,
		   "children_forked and forked_from");
	// Every byte of a shorter buffer must be rejected, never read past.
	for (size_t cut = 0; cut < n; cut += 4) {
		flatbuffers::Verifier vc(buf.data(), cut);
		assert_msg(!fb::VerifySizePrefixedArchiveHeaderBuffer(vc), "verifier accepted %zu bytes", cut);
	}
	std::printf("header: flatc's Verifier accepts the C-encoded header (%zu bytes)\n", n);
}

static const char *archive_dir = "/tmp";

static void check_real_archive(void **)
{
	const char *dir = archive_dir;
	nt_config cfg;
	nt_config_init(&cfg);
	assert_msg(nt_start(&cfg) == NT_OK, "nt_start: %s", nt_last_error());
	std::string path = std::string(dir) + "/layout-test.ntrace";
	assert_msg(nt_finish(path.c_str()) == NT_OK, "nt_finish: %s", nt_last_error());
	FILE *f = std::fopen(path.c_str(), "rb");
	std::vector<uint8_t> data(1 << 16);
	size_t n = f ? std::fread(data.data(), 1, data.size(), f) : 0;
	if (f)
		std::fclose(f);
	std::remove(path.c_str());
	uint32_t prefix;
	std::memcpy(&prefix, data.data(), 4);
	assert_msg(n >= 4 + prefix, "archive shorter than its header");
	flatbuffers::Verifier v(data.data(), 4 + prefix);
	assert_msg(fb::VerifySizePrefixedArchiveHeaderBuffer(v), "Verifier rejects a real archive header");
	const fb::ArchiveHeader *h = fb::GetSizePrefixedArchiveHeader(data.data());
	assert_msg(h->final_state() == fb::FinalState_Finished, "real archive final state");
	assert_msg(h->ticks_per_second() > 0, "real archive ticks_per_second");
}

int main(int argc, char **argv)
{
	if (argc > 1)
		archive_dir = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(check_reflection),
		cmocka_unit_test(check_header_encoding),
		cmocka_unit_test(check_real_archive),
	};
	return cmocka_run_group_tests_name("layout_test", tests, NULL, NULL);
}
