/*
 * nt_pb.h - the protobuf wire writer of the Perfetto renderer (not installed), and the
 * field numbers it uses.
 *
 * Hand-written on purpose: a trace of 100 M events is 100 M TracePackets, so a packet must
 * cost a few stores into a reused buffer. A generated library (protobuf-c) builds each
 * message as a tree of allocated structs and serializes the tree afterwards: an allocation
 * per message and a second pass per event, for bytes this file writes directly. Only what
 * the renderer emits is here: varints, 64-bit fixed values, length-delimited bytes, and
 * nested messages whose length is patched in when they end.
 *
 * NT_PF_FIELDS is the one list of every field number the renderer writes, with the message
 * and field name of third_party/perfetto/perfetto_trace.proto it stands for and its wire
 * type; tests/reader/test_perfetto.py checks each row against that vendored schema
 * (protoc --descriptor_set_out), so a number here cannot drift from Perfetto's.
 */
#ifndef NT_PB_H
#define NT_PB_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* X(constant, message, field, number, wire type: V varint, L length-delimited, F fixed64) */
#define NT_PF_FIELDS(X)                                                                   \
	X(PF_TRACE_PACKET, "Trace", "packet", 1, L)                                       \
	X(PF_PKT_TIMESTAMP, "TracePacket", "timestamp", 8, V)                             \
	X(PF_PKT_TIMESTAMP_CLOCK_ID, "TracePacket", "timestamp_clock_id", 58, V)          \
	X(PF_PKT_TRACK_EVENT, "TracePacket", "track_event", 11, L)                        \
	X(PF_PKT_TRACK_DESCRIPTOR, "TracePacket", "track_descriptor", 60, L)              \
	X(PF_PKT_CLOCK_SNAPSHOT, "TracePacket", "clock_snapshot", 6, L)                   \
	X(PF_PKT_SEQUENCE_ID, "TracePacket", "trusted_packet_sequence_id", 10, V)         \
	X(PF_PKT_INTERNED_DATA, "TracePacket", "interned_data", 12, L)                    \
	X(PF_PKT_SEQUENCE_FLAGS, "TracePacket", "sequence_flags", 13, V)                  \
	X(PF_PKT_DEFAULTS, "TracePacket", "trace_packet_defaults", 59, L)                 \
	X(PF_PKT_FIRST_ON_SEQUENCE, "TracePacket", "first_packet_on_sequence", 87, V)     \
	X(PF_DEF_TIMESTAMP_CLOCK_ID, "TracePacketDefaults", "timestamp_clock_id", 58, V)  \
	X(PF_DEF_TRACK_EVENT, "TracePacketDefaults", "track_event_defaults", 11, L)       \
	X(PF_TED_TRACK_UUID, "TrackEventDefaults", "track_uuid", 11, V)                   \
	X(PF_CS_CLOCKS, "ClockSnapshot", "clocks", 1, L)                                  \
	X(PF_CS_PRIMARY, "ClockSnapshot", "primary_trace_clock", 2, V)                    \
	X(PF_CLK_ID, "ClockSnapshot.Clock", "clock_id", 1, V)                             \
	X(PF_CLK_TIMESTAMP, "ClockSnapshot.Clock", "timestamp", 2, V)                     \
	X(PF_CLK_INCREMENTAL, "ClockSnapshot.Clock", "is_incremental", 3, V)              \
	X(PF_TD_UUID, "TrackDescriptor", "uuid", 1, V)                                    \
	X(PF_TD_PARENT_UUID, "TrackDescriptor", "parent_uuid", 5, V)                      \
	X(PF_TD_NAME, "TrackDescriptor", "name", 2, L)                                    \
	X(PF_TD_PROCESS, "TrackDescriptor", "process", 3, L)                              \
	X(PF_TD_THREAD, "TrackDescriptor", "thread", 4, L)                                \
	X(PF_TD_COUNTER, "TrackDescriptor", "counter", 8, L)                              \
	X(PF_PD_PID, "ProcessDescriptor", "pid", 1, V)                                    \
	X(PF_PD_NAME, "ProcessDescriptor", "process_name", 6, L)                          \
	X(PF_THD_PID, "ThreadDescriptor", "pid", 1, V)                                    \
	X(PF_THD_TID, "ThreadDescriptor", "tid", 2, V)                                    \
	X(PF_THD_NAME, "ThreadDescriptor", "thread_name", 5, L)                           \
	X(PF_CD_CATEGORIES, "CounterDescriptor", "categories", 2, L)                      \
	X(PF_TE_CATEGORY_IIDS, "TrackEvent", "category_iids", 3, V)                       \
	X(PF_TE_CATEGORIES, "TrackEvent", "categories", 22, L)                            \
	X(PF_TE_NAME_IID, "TrackEvent", "name_iid", 10, V)                                \
	X(PF_TE_NAME, "TrackEvent", "name", 23, L)                                        \
	X(PF_TE_TYPE, "TrackEvent", "type", 9, V)                                         \
	X(PF_TE_TRACK_UUID, "TrackEvent", "track_uuid", 11, V)                            \
	X(PF_TE_COUNTER_VALUE, "TrackEvent", "counter_value", 30, V)                      \
	X(PF_TE_DOUBLE_COUNTER_VALUE, "TrackEvent", "double_counter_value", 44, F)        \
	X(PF_TE_DEBUG_ANNOTATIONS, "TrackEvent", "debug_annotations", 4, L)               \
	X(PF_TE_FLOW_IDS, "TrackEvent", "flow_ids", 47, F)                                \
	X(PF_TE_TERMINATING_FLOW_IDS, "TrackEvent", "terminating_flow_ids", 48, F)        \
	X(PF_DA_NAME_IID, "DebugAnnotation", "name_iid", 1, V)                            \
	X(PF_DA_NAME, "DebugAnnotation", "name", 10, L)                                   \
	X(PF_DA_BOOL, "DebugAnnotation", "bool_value", 2, V)                              \
	X(PF_DA_UINT, "DebugAnnotation", "uint_value", 3, V)                              \
	X(PF_DA_INT, "DebugAnnotation", "int_value", 4, V)                                \
	X(PF_DA_DOUBLE, "DebugAnnotation", "double_value", 5, F)                          \
	X(PF_DA_STRING, "DebugAnnotation", "string_value", 6, L)                          \
	X(PF_DA_STRING_IID, "DebugAnnotation", "string_value_iid", 17, V)                 \
	X(PF_DA_POINTER, "DebugAnnotation", "pointer_value", 7, V)                        \
	X(PF_DA_ARRAY, "DebugAnnotation", "array_values", 12, L)                          \
	X(PF_ID_EVENT_CATEGORIES, "InternedData", "event_categories", 1, L)               \
	X(PF_ID_EVENT_NAMES, "InternedData", "event_names", 2, L)                         \
	X(PF_ID_ANNOTATION_NAMES, "InternedData", "debug_annotation_names", 3, L)         \
	X(PF_ID_STRING_VALUES, "InternedData", "debug_annotation_string_values", 29, L)   \
	X(PF_IS_IID, "InternedString", "iid", 1, V)                                       \
	X(PF_IS_STR, "InternedString", "str", 2, L)                                       \
	X(PF_IN_IID, "EventName", "iid", 1, V)                                            \
	X(PF_IN_NAME, "EventName", "name", 2, L)                                          \
	X(PF_IC_IID, "EventCategory", "iid", 1, V)                                        \
	X(PF_IC_NAME, "EventCategory", "name", 2, L)                                      \
	X(PF_IA_IID, "DebugAnnotationName", "iid", 1, V)                                  \
	X(PF_IA_NAME, "DebugAnnotationName", "name", 2, L)

#define NT_PF_WIRE_V 0
#define NT_PF_WIRE_F 1
#define NT_PF_WIRE_L 2
#define NT_PF_ENUM(c, msg, field, num, wire) c = num,
enum { NT_PF_FIELDS(NT_PF_ENUM) };
#undef NT_PF_ENUM
#define NT_PF_WIRE(c, msg, field, num, wire) c##_WIRE = NT_PF_WIRE_##wire,
enum { NT_PF_FIELDS(NT_PF_WIRE) };
#undef NT_PF_WIRE

/* Enum values of the schema the renderer writes (checked by the same test). */
#define NT_PF_ENUMS(X)                                                                    \
	X(PF_SEQ_INCREMENTAL_STATE_CLEARED, "TracePacket.SequenceFlags", 1)               \
	X(PF_SEQ_NEEDS_INCREMENTAL_STATE, "TracePacket.SequenceFlags", 2)                 \
	X(PF_TYPE_SLICE_BEGIN, "TrackEvent.Type", 1)                                      \
	X(PF_TYPE_SLICE_END, "TrackEvent.Type", 2)                                        \
	X(PF_TYPE_INSTANT, "TrackEvent.Type", 3)                                          \
	X(PF_TYPE_COUNTER, "TrackEvent.Type", 4)                                          \
	X(PF_CLOCK_REALTIME, "BuiltinClock", 1)                                           \
	X(PF_CLOCK_MONOTONIC, "BuiltinClock", 3)
#define NT_PF_ENUM_VALUE(c, en, v) c = v,
enum { NT_PF_ENUMS(NT_PF_ENUM_VALUE) };
#undef NT_PF_ENUM_VALUE

/* The first sequence-scoped clock id (ClockSnapshot.Clock: 64..127 are user-defined,
 * valid on their sequence only). */
#define PF_CLOCK_SEQUENCE 64

/* A growing byte buffer; `oom` is sticky (later writes are dropped) and checked once per
 * packet by the caller. */
typedef struct nt_pb {
	uint8_t *p;
	size_t len, cap;
	int oom;
} nt_pb;

/* Room for n more bytes; NULL (oom set) when memory runs out. */
static inline uint8_t *nt_pb_room(nt_pb *b, size_t n)
{
	if (__builtin_expect(b->cap - b->len >= n, 1))
		return b->p + b->len;
	if (b->oom)
		return NULL;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 4) {
			b->oom = 1;
			return NULL;
		}
		cap *= 2;
	}
	uint8_t *q = (uint8_t *)realloc(b->p, cap);
	if (q == NULL) {
		b->oom = 1;
		return NULL;
	}
	b->p = q;
	b->cap = cap;
	return b->p + b->len;
}

/* A varint into p (at least 10 bytes); returns its length. */
static inline size_t nt_pb_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline size_t nt_pb_varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Raw steps for a caller that reserved room with nt_pb_room (a tag and a varint take at most
 * 15 bytes): each writes at p and returns the end; nt_pb_raw_end commits up to it. */
static inline uint8_t *nt_pb_raw_varint(uint8_t *p, uint32_t field, uint64_t v)
{
	p += nt_pb_put_varint(p, (uint64_t)field << 3);
	return p + nt_pb_put_varint(p, v);
}

static inline void nt_pb_raw_end(nt_pb *b, const uint8_t *end)
{
	b->len = (size_t)(end - b->p);
}

/* field = varint value (wire type 0). */
static inline void nt_pb_varint(nt_pb *b, uint32_t field, uint64_t v)
{
	uint8_t *p = nt_pb_room(b, 20);
	if (p == NULL)
		return;
	size_t n = nt_pb_put_varint(p, (uint64_t)field << 3);
	b->len += n + nt_pb_put_varint(p + n, v);
}

/* field = 64-bit little-endian value (wire type 1: fixed64, double). */
static inline void nt_pb_fixed64(nt_pb *b, uint32_t field, uint64_t v)
{
	uint8_t *p = nt_pb_room(b, 20);
	if (p == NULL)
		return;
	size_t n = nt_pb_put_varint(p, ((uint64_t)field << 3) | NT_PF_WIRE_F);
	for (int i = 0; i < 8; i++)
		p[n + i] = (uint8_t)(v >> (8 * i));
	b->len += n + 8;
}

/* field = n bytes (wire type 2: string, bytes, or an encoded message). */
static inline void nt_pb_bytes(nt_pb *b, uint32_t field, const void *s, size_t n)
{
	uint8_t *p = nt_pb_room(b, 20 + n);
	if (p == NULL)
		return;
	size_t h = nt_pb_put_varint(p, ((uint64_t)field << 3) | NT_PF_WIRE_L);
	h += nt_pb_put_varint(p + h, n);
	if (n)
		memcpy(p + h, s, n);
	b->len += h + n;
}

/* A nested message: nt_pb_open writes its tag and a one-byte length and returns where its
 * content starts; nt_pb_close patches the length in, moving the content when the length
 * takes more than one byte (messages here are short: the move is rare and small). */
static inline size_t nt_pb_open(nt_pb *b, uint32_t field)
{
	uint8_t *p = nt_pb_room(b, 11);
	if (p == NULL)
		return b->len;
	size_t n = nt_pb_put_varint(p, ((uint64_t)field << 3) | NT_PF_WIRE_L);
	b->len += n + 1;
	return b->len;
}

static inline void nt_pb_close(nt_pb *b, size_t start)
{
	if (b->oom)
		return;
	size_t n = b->len - start, k = nt_pb_varint_len(n);
	if (k > 1) {
		if (nt_pb_room(b, k - 1) == NULL)
			return;
		memmove(b->p + start + k - 1, b->p + start, n);
		b->len += k - 1;
	}
	nt_pb_put_varint(b->p + start - 1, n);
}

#endif /* NT_PB_H */
