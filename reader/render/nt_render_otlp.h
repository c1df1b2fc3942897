/*
 * nt_render_otlp.h - what the OTLP exporter's files share (not installed): the field
 * numbers of the OpenTelemetry protocol messages it writes, the span model, and the JSON
 * form of those messages.
 *
 * nt_render_otlp.c maps events to spans and gauges (the mapping is in its head comment and
 * doc/otlp.md) and hands each ExportTraceServiceRequest / ExportMetricsServiceRequest it
 * completes, at most OT_BATCH_BYTES of spans, to the caller's emit function;
 * nt_render_otlp_res.c builds each section's Resource; nt_render_otlp_json.c turns one
 * encoded request into its OTLP/JSON line (proto3's JSON mapping as OTLP specifies it:
 * lowerCamelCase names, trace and span ids in hex, 64-bit integers as strings, enums as
 * numbers) and writes the file formats of trace-dump.
 *
 * The protobuf bytes are written by hand with nt_pb.h, not by protobuf-c: see the comment
 * in nt_render_otlp.c for why and the measurement.
 *
 * NT_OT_FIELDS is the one list of every field number written, with the message and field
 * of third_party/opentelemetry-proto it stands for, its wire type and its JSON kind;
 * tests/reader/test_otlp.py checks each row against the vendored .proto files
 * (protoc --descriptor_set_out), and the JSON writer walks the same rows, so the two
 * encodings cannot disagree about a field.
 */
#ifndef NT_RENDER_OTLP_H
#define NT_RENDER_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "nt_pb.h"
#include "runtime/nt_traceparent.h"
#include "nt_render_perfetto.h" /* pf_string: UTF-8 checked strings */
#include "nt_render_util.h"

/* The messages of the rows below (OT_M_*), for the JSON writer's walk. */
enum {
	OT_M_TRACE_REQ, OT_M_METRICS_REQ, OT_M_RESOURCE_SPANS, OT_M_RESOURCE_METRICS,
	OT_M_RESOURCE, OT_M_SCOPE_SPANS, OT_M_SCOPE_METRICS, OT_M_SCOPE, OT_M_SPAN,
	OT_M_EVENT, OT_M_LINK, OT_M_KEY_VALUE, OT_M_ANY_VALUE, OT_M_ARRAY_VALUE, OT_M_METRIC,
	OT_M_GAUGE, OT_M_NUMBER_POINT, OT_M_NONE, OT_M_COUNT = OT_M_NONE
};

/* JSON kinds: J_MSG a message (of the row's sub type), J_STR a string, J_HEX bytes as hex
 * (trace and span ids), J_U32 a number, J_ENUM a number, J_BOOL, J_I64S a varint int64 as a
 * string, J_F64S a fixed64 as a string, J_S64S an sfixed64 as a string, J_DBL a double.
 * OT_REP: repeated (a JSON array); OT_ONE: one value. */
#define OT_ONE 0
#define OT_REP 1

/* X(constant, message, proto message name, field, json name, number, wire, json kind,
 *   sub message, repeated) */
#define NT_OT_FIELDS(X)                                                                          \
	X(OT_TRACE_REQ_RS, TRACE_REQ, "ExportTraceServiceRequest", "resource_spans",             \
	  "resourceSpans", 1, L, MSG, RESOURCE_SPANS, REP)                                         \
	X(OT_METRICS_REQ_RM, METRICS_REQ, "ExportMetricsServiceRequest", "resource_metrics",     \
	  "resourceMetrics", 1, L, MSG, RESOURCE_METRICS, REP)                                     \
	X(OT_RS_RESOURCE, RESOURCE_SPANS, "ResourceSpans", "resource", "resource", 1, L, MSG,    \
	  RESOURCE, ONE)                                                                           \
	X(OT_RS_SCOPE_SPANS, RESOURCE_SPANS, "ResourceSpans", "scope_spans", "scopeSpans", 2, L, \
	  MSG, SCOPE_SPANS, REP)                                                                   \
	X(OT_RM_RESOURCE, RESOURCE_METRICS, "ResourceMetrics", "resource", "resource", 1, L,     \
	  MSG, RESOURCE, ONE)                                                                      \
	X(OT_RM_SCOPE_METRICS, RESOURCE_METRICS, "ResourceMetrics", "scope_metrics",             \
	  "scopeMetrics", 2, L, MSG, SCOPE_METRICS, REP)                                           \
	X(OT_RES_ATTRS, RESOURCE, "Resource", "attributes", "attributes", 1, L, MSG, KEY_VALUE,  \
	  REP)                                                                                     \
	X(OT_SS_SCOPE, SCOPE_SPANS, "ScopeSpans", "scope", "scope", 1, L, MSG, SCOPE, ONE)        \
	X(OT_SS_SPANS, SCOPE_SPANS, "ScopeSpans", "spans", "spans", 2, L, MSG, SPAN, REP)         \
	X(OT_SM_SCOPE, SCOPE_METRICS, "ScopeMetrics", "scope", "scope", 1, L, MSG, SCOPE, ONE)    \
	X(OT_SM_METRICS, SCOPE_METRICS, "ScopeMetrics", "metrics", "metrics", 2, L, MSG, METRIC, \
	  REP)                                                                                     \
	X(OT_SCOPE_NAME, SCOPE, "InstrumentationScope", "name", "name", 1, L, STR, NONE, ONE)     \
	X(OT_SCOPE_VERSION, SCOPE, "InstrumentationScope", "version", "version", 2, L, STR, NONE, \
	  ONE)                                                                                     \
	X(OT_SPAN_TRACE_ID, SPAN, "Span", "trace_id", "traceId", 1, L, HEX, NONE, ONE)            \
	X(OT_SPAN_SPAN_ID, SPAN, "Span", "span_id", "spanId", 2, L, HEX, NONE, ONE)               \
	X(OT_SPAN_PARENT, SPAN, "Span", "parent_span_id", "parentSpanId", 4, L, HEX, NONE, ONE)   \
	X(OT_SPAN_NAME, SPAN, "Span", "name", "name", 5, L, STR, NONE, ONE)                       \
	X(OT_SPAN_KIND, SPAN, "Span", "kind", "kind", 6, V, ENUM, NONE, ONE)                      \
	X(OT_SPAN_START, SPAN, "Span", "start_time_unix_nano", "startTimeUnixNano", 7, F, F64S,  \
	  NONE, ONE)                                                                               \
	X(OT_SPAN_END, SPAN, "Span", "end_time_unix_nano", "endTimeUnixNano", 8, F, F64S, NONE,  \
	  ONE)                                                                                     \
	X(OT_SPAN_ATTRS, SPAN, "Span", "attributes", "attributes", 9, L, MSG, KEY_VALUE, REP)     \
	X(OT_SPAN_DROPPED_ATTRS, SPAN, "Span", "dropped_attributes_count",                       \
	  "droppedAttributesCount", 10, V, U32, NONE, ONE)                                         \
	X(OT_SPAN_EVENTS, SPAN, "Span", "events", "events", 11, L, MSG, EVENT, REP)               \
	X(OT_SPAN_DROPPED_EVENTS, SPAN, "Span", "dropped_events_count", "droppedEventsCount", 12, \
	  V, U32, NONE, ONE)                                                                       \
	X(OT_SPAN_LINKS, SPAN, "Span", "links", "links", 13, L, MSG, LINK, REP)                   \
	X(OT_SPAN_DROPPED_LINKS, SPAN, "Span", "dropped_links_count", "droppedLinksCount", 14, V, \
	  U32, NONE, ONE)                                                                          \
	X(OT_EV_TIME, EVENT, "Span.Event", "time_unix_nano", "timeUnixNano", 1, F, F64S, NONE,   \
	  ONE)                                                                                     \
	X(OT_EV_NAME, EVENT, "Span.Event", "name", "name", 2, L, STR, NONE, ONE)                  \
	X(OT_EV_ATTRS, EVENT, "Span.Event", "attributes", "attributes", 3, L, MSG, KEY_VALUE,    \
	  REP)                                                                                     \
	X(OT_EV_DROPPED_ATTRS, EVENT, "Span.Event", "dropped_attributes_count",                  \
	  "droppedAttributesCount", 4, V, U32, NONE, ONE)                                          \
	X(OT_LINK_TRACE_ID, LINK, "Span.Link", "trace_id", "traceId", 1, L, HEX, NONE, ONE)       \
	X(OT_LINK_SPAN_ID, LINK, "Span.Link", "span_id", "spanId", 2, L, HEX, NONE, ONE)          \
	X(OT_LINK_ATTRS, LINK, "Span.Link", "attributes", "attributes", 4, L, MSG, KEY_VALUE,    \
	  REP)                                                                                     \
	X(OT_KV_KEY, KEY_VALUE, "KeyValue", "key", "key", 1, L, STR, NONE, ONE)                   \
	X(OT_KV_VALUE, KEY_VALUE, "KeyValue", "value", "value", 2, L, MSG, ANY_VALUE, ONE)        \
	X(OT_AV_STRING, ANY_VALUE, "AnyValue", "string_value", "stringValue", 1, L, STR, NONE,   \
	  ONE)                                                                                     \
	X(OT_AV_BOOL, ANY_VALUE, "AnyValue", "bool_value", "boolValue", 2, V, BOOL, NONE, ONE)    \
	X(OT_AV_INT, ANY_VALUE, "AnyValue", "int_value", "intValue", 3, V, I64S, NONE, ONE)       \
	X(OT_AV_DOUBLE, ANY_VALUE, "AnyValue", "double_value", "doubleValue", 4, F, DBL, NONE,   \
	  ONE)                                                                                     \
	X(OT_AV_ARRAY, ANY_VALUE, "AnyValue", "array_value", "arrayValue", 5, L, MSG,            \
	  ARRAY_VALUE, ONE)                                                                        \
	X(OT_ARR_VALUES, ARRAY_VALUE, "ArrayValue", "values", "values", 1, L, MSG, ANY_VALUE,    \
	  REP)                                                                                     \
	X(OT_METRIC_NAME, METRIC, "Metric", "name", "name", 1, L, STR, NONE, ONE)                 \
	X(OT_METRIC_GAUGE, METRIC, "Metric", "gauge", "gauge", 5, L, MSG, GAUGE, ONE)             \
	X(OT_GAUGE_POINTS, GAUGE, "Gauge", "data_points", "dataPoints", 1, L, MSG, NUMBER_POINT, \
	  REP)                                                                                     \
	X(OT_NP_TIME, NUMBER_POINT, "NumberDataPoint", "time_unix_nano", "timeUnixNano", 3, F,   \
	  F64S, NONE, ONE)                                                                         \
	X(OT_NP_DOUBLE, NUMBER_POINT, "NumberDataPoint", "as_double", "asDouble", 4, F, DBL,     \
	  NONE, ONE)                                                                               \
	X(OT_NP_INT, NUMBER_POINT, "NumberDataPoint", "as_int", "asInt", 6, F, S64S, NONE, ONE)   \
	X(OT_NP_ATTRS, NUMBER_POINT, "NumberDataPoint", "attributes", "attributes", 7, L, MSG,   \
	  KEY_VALUE, REP)

#define NT_OT_ENUM(c, m, pm, f, j, num, wire, jk, sub, rep) c = num,
enum { NT_OT_FIELDS(NT_OT_ENUM) };
#undef NT_OT_ENUM

/* Span.SpanKind (checked by the same test): a Trace2 process is SERVER, as trace2receiver
 * makes a git process's span; every other span INTERNAL. */
#define OT_SPAN_KIND_INTERNAL 1
#define OT_SPAN_KIND_SERVER 2

/* A request holds about this many bytes of spans or metrics (a span that ends a batch is
 * whole in it): far under OTLP/HTTP receivers' limits, and small enough that its OTLP/JSON
 * line (2.5 times the bytes for common spans, at most 6 times for strings of control
 * characters, each escaped) stays under the 1 MiB a line the Collector's otlpjsonfile
 * receiver reads by default (its max_log_size). */
#define OT_BATCH_BYTES (128u * 1024u)

/* JSON: one encoded request (an ExportTraceServiceRequest when `metrics` is 0, else an
 * ExportMetricsServiceRequest) as one line of OTLP/JSON, ending in '\n', into out. Returns
 * 0, or -1 when the bytes are not a message of the rows above (never from this exporter's
 * own output). */
int nt_otlp_json_line(nt_out *out, int metrics, const uint8_t *msg, size_t len);

/* The batch's scopes by (Resource, category): a hash of OT_SCOPE_INDEX slots; a batch that
 * would hold more than half as many scopes is sent first. */
#define OT_SCOPE_INDEX 8192u

/* Bounds that keep memory independent of the archive's size. */
#define OT_DEPTH_MAX 256        /* open spans per thread; deeper Begins are counted */
#define OT_SPAN_EVENTS_MAX 128  /* events per span (the SDKs' default); more: dropped_events */
#define OT_SPAN_LINKS_MAX 128   /* links per span; more: dropped_links_count */
#define OT_OPEN_IDS_MAX 65536   /* open async spans and child processes, remembered flows */

/* An open span: what its Span message needs once it ends. Attributes, events and links are
 * encoded into `body` as they come (protobuf lets fields come in any order), so the
 * archive's strings are copied once and nothing else is kept per event. */
typedef struct ot_span {
	uint64_t trace_hi, trace_lo; /* the trace id, big-endian halves */
	uint64_t id, parent;         /* parent 0: a root */
	int64_t start;               /* CLOCK_REALTIME ns */
	const char *name, *cat;      /* the reader's durable strings */
	nt_pb body;
	uint32_t events, links, dropped_events, dropped_links;
	uint32_t res;                /* its Resource (ot_ctx.res) */
	int pending;                 /* a root whose trace its first event decides */
	int t2_process;              /* Trace2's process span (start .. atexit): kind SERVER */
	/* name and cat copied here when the span stays open past a part (the part's reader,
	 * whose strings they were, goes): nt_render_otlp_part.c */
	char *own;
	size_t own_cap;
} ot_span;

/* A map of 64-bit keys (never 0) to pointers: open addressing, linear probing, deletion by
 * backward shift, a table that doubles from 64 slots to keep its load at most 1/2; at most
 * OT_OPEN_IDS_MAX entries. */
typedef struct ot_map {
	uint64_t *keys;
	void **vals;
	size_t cap, n;
} ot_map;

/* The spans or metrics of one (Resource, category) waiting for the next request; its
 * buffers are freed when the request is sent, so the batch's memory follows its bytes. */
typedef struct ot_scope {
	uint32_t res;
	char *cat; /* a copy: a span's category may be its own, freed with it (parts) */
	nt_pb spans, metrics;
} ot_scope;

/* A Resource: a process of a section (a Trace2 import holds several in one). */
typedef struct ot_res {
	uint32_t section, pid;
	const nt_reader_process *t2; /* its Trace2 process, or NULL (between parts: NULL) */
	int of_t2;                   /* built with its Trace2 process: kept as built */
	nt_pb pb; /* its fields, made on first use */
} ot_res;

/* A thread's open spans: room grows with its nesting, up to OT_DEPTH_MAX (a bundle has
 * thousands of threads, most of them shallow); each slot's body buffer is reused. */
typedef struct ot_thread {
	ot_span *stack;
	size_t cap;
	uint32_t depth;
	uint32_t section; /* its section (where its unended spans end) */
	/* Its place in its event ordinals (events visited + events lost in gaps), and the
	 * part where it was last met: a later part's first chunk of the thread reports the
	 * earlier parts' events as a gap, which is not one (nt_render_otlp_part.c). */
	uint64_t ordinal;
	uint32_t part;
} ot_thread;

/* A section's parent context (runtime/nt_traceparent.h). */
typedef struct ot_tp {
	nt_traceparent tp;
	int has;
} ot_tp;

/* A Trace2 process's span, while open: its other threads' roots go under it. */
typedef struct ot_proc {
	uint64_t trace_hi, trace_lo, id;
	int open;
} ot_proc;

typedef struct ot_ctx {
	nt_reader *r;             /* the part being visited; NULL between parts */
	const nt_render_options *opt;
	nt_otlp_emit emit;
	void *emit_ctx;
	uint64_t salt;            /* the current event's section's: mixed into its ids */
	uint64_t ordinal;         /* the current event's place among its section's events */
	/* Per section (and one for an event of none): its pid and start time mixed, and its
	 * events visited so far. A section's ids depend on nothing else, so a section
	 * exported alone (a live shipper's) gets the ids of the whole bundle's export. */
	uint64_t *sec_salt, *sec_ordinal;
	uint32_t nsections;
	uint32_t part;            /* parts visited: 1 for the first */
	uint32_t *sec_pid;        /* per section: its pid (the losses span's Resource) */
	ot_res *res;              /* the Resources: one per (section, pid) */
	size_t nres, res_cap;
	uint32_t *place_of;       /* by thread index: 1 + the thread's place, 0 = not defined */
	uint32_t nindices;        /* nt_reader_thread_index_limit: place_of's length */
	uint32_t *res_of;         /* by place: 1 + its Resource, 0 = not yet looked up */
	int64_t *last_wall;       /* per section: the latest time seen (ends unended spans) */
	uint64_t *gap_events;     /* per section: events lost in gaps */
	/* By place: the defined threads in the order the parts and nt_reader_thread_at define
	 * them (a later part's new threads after the earlier ones); `stray` for a thread the
	 * archive never defined (so a hostile high index costs 4 bytes, not a state). */
	ot_thread *threads;
	uint32_t nthreads;        /* defined threads: places 0 .. nthreads - 1 */
	size_t threads_cap, res_of_cap;
	ot_thread stray;
	ot_proc *procs;           /* by Trace2 process index */
	uint32_t nprocs;
	ot_scope *scopes;
	size_t nscopes, scopes_cap, batch_spans, batch_metrics;
	uint16_t *scope_index;    /* OT_SCOPE_INDEX slots: 1 + a scope of the batch, 0 free */
	nt_pb req;
	ot_map open_ids;          /* async spans and Trace2 children: key -> ot_span * */
	ot_map flows;             /* flow key -> ot_flow * (the span its last point was in) */
	ot_tp *tp;                /* per section: its parent context, if any */
	uint64_t unmatched_ends, too_deep, ids_not_kept, async_unbegun, flows_unbegun;
	uint64_t counter_args_not_numeric, damaged;
	char *damage[16];
	int oom, stopped;
} ot_ctx;

/* nt_render_otlp.c: the visit of c->r (a part) with the state of the earlier parts, and
 * the end: what stayed open ends unended, the losses spans, the last requests. */
int ot_visit(ot_ctx *c);
void ot_end(ot_ctx *c);
/* An open async span or Trace2 child (of c->open_ids) freed. */
void ot_span_free(ot_span *s);
/* A place's thread state (c->stray for nthreads). */
ot_thread *ot_thread_at(ot_ctx *c, uint32_t place);

/* nt_render_otlp_batch.c: ids, the maps, and requests. */
uint64_t ot_mix(uint64_t x);
/* An id as bytes field: n = 16, a trace id hi:lo, big-endian; n = 8, a span id lo. */
void ot_put_id(nt_pb *b, uint32_t field, uint64_t hi, uint64_t lo, int n);
int ot_map_put(ot_map *m, uint64_t key, void *val);
void *ot_map_get(const ot_map *m, uint64_t key);
void *ot_map_del(ot_map *m, uint64_t key);
void ot_map_free(ot_map *m);
/* Writes span s ending at `end` into its scope's batch (sending the batch when full) and
 * frees nothing: the caller reuses s. */
void ot_span_emit(ot_ctx *c, ot_span *s, int64_t end);
/* The batch of (section, category) for a metric; NULL when memory ran out. */
ot_scope *ot_scope_of(ot_ctx *c, uint32_t res, const char *cat);
/* The Resource of (section, pid), added when new; 0 (the first) when memory runs out
 * (c->oom set). */
uint32_t ot_res_find(ot_ctx *c, uint32_t section, uint32_t pid,
		     const nt_reader_process *t2);
/* Sends what the batch holds (a trace request, then a metrics request). */
void ot_flush(ot_ctx *c);
void ot_batch_maybe_flush(ot_ctx *c);

/* nt_render_otlp_res.c: the attributes of the Resource of process `pid` of a section (with
 * its Trace2 SID as trace2.cmd.sid and service.instance.id when t2 is not NULL, as
 * trace2receiver names a git process) (KeyValue rows of field
 * OT_RES_ATTRS) into b: service.name, process.*, telemetry.sdk.*, OTEL_RESOURCE_ATTRIBUTES
 * and what the section's header says its writer lost (nanotrace.*). `section` is r's. */
void ot_resource(nt_pb *b, const nt_reader *r, uint32_t section, uint32_t pid,
		 const nt_reader_process *t2);
/* One attribute (a KeyValue in field `field` of the message being written) of each type;
 * strings that are not UTF-8 get U+FFFD for each bad byte (pf_string). */
void ot_attr_str(nt_pb *b, uint32_t field, const char *key, const char *v, size_t n);
void ot_attr_int(nt_pb *b, uint32_t field, const char *key, int64_t v);
void ot_attr_bool(nt_pb *b, uint32_t field, const char *key, int v);
/* An event argument as an attribute with its type (lists as arrays of strings, pointers as
 * ints, a Trace2 JSON value as its text). */
void ot_attr_arg(nt_pb *b, uint32_t field, const nt_reader_arg *a);

#endif /* NT_RENDER_OTLP_H */
