/* nt_render_ctf.h - the CTF 1.8 export's event classes and TSDL metadata (not installed).
 *
 * nt_render_ctf.c writes the binary streams; this half (nt_render_ctf_meta.c) owns what the
 * metadata file says: one event class per distinct (kind, category, name, argument names
 * and types), found per event through a cache keyed by the reader's own pointers, and the
 * TSDL text that describes the classes, the packets and the clock. Both halves derive the
 * binary layout of an argument from ctf_arg_kind(), so the bytes and their description
 * cannot disagree. */
#ifndef NT_RENDER_CTF_H
#define NT_RENDER_CTF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <nanotrace/nanotrace_reader.h>

/* How an argument is laid out in a CTF event payload (every field is byte-aligned). */
typedef enum ctf_arg_kind {
	CTF_ARG_I32,    /* int32_t */
	CTF_ARG_U32,    /* uint32_t */
	CTF_ARG_I64,    /* int64_t */
	CTF_ARG_U64,    /* uint64_t */
	CTF_ARG_HEX64,  /* uint64_t shown in hexadecimal (a pointer) */
	CTF_ARG_DOUBLE, /* IEEE 754 binary64 */
	CTF_ARG_BOOL,   /* uint8_t enumeration "false" / "true" */
	CTF_ARG_STRING, /* NUL-terminated UTF-8 (a NUL byte inside becomes U+FFFD) */
	CTF_ARG_LIST,   /* uint32_t count, then that many strings */
} ctf_arg_kind;

/* The layout of a reader argument type; an unknown type is written as the string "?". */
ctf_arg_kind ctf_arg_kind_of(uint8_t nt_type);

/* Payload field names: "_" + the argument's name with every byte outside [A-Za-z0-9_]
 * made '_' (babeltrace2 strips one leading underscore, so viewers show the name as
 * written), made unique within the class; a list's count field is named too. */
typedef struct ctf_field {
	char *name;
	char *len_name; /* CTF_ARG_LIST only */
	uint8_t nt_type;
} ctf_field;

typedef struct ctf_class {
	uint32_t id;
	uint8_t kind;      /* NT_KIND_* */
	char *category, *name;
	uint32_t nargs;
	ctf_field *fields;
	char *key;         /* kind, category, name, then each argument's type and name */
	size_t key_len;
	uint64_t hash;
} ctf_class;

typedef struct ctf_fast_slot ctf_fast_slot;

typedef struct ctf_classes {
	ctf_class *v;
	size_t n, cap;
	uint32_t *by_key;       /* open addressing: class index + 1; 0 = empty */
	size_t key_slots;
	ctf_fast_slot *fast;    /* the reader's pointers -> class index */
	size_t fast_slots, fast_used;
} ctf_classes;

/* The class of an event: O(arguments) for an event seen before (the reader hands out the
 * same name pointers for a call site), O(key) and one allocation for a new one. -1 when
 * memory runs out. */
int64_t ctf_class_of(ctf_classes *c, const nt_reader_event *e);
void ctf_classes_free(ctf_classes *c);

/* What the metadata says besides the classes. */
typedef struct ctf_trace_facts {
	uint8_t uuid[16];
	int64_t clock_offset_ns;  /* CLOCK_REALTIME - CLOCK_MONOTONIC at the archive's start */
	const nt_archive_info *info;
	const char *archive;
	uint32_t processes;
	uint64_t events, gap_events, damage_reports, clamped, nul_bytes;
	uint64_t header_losses;   /* discarded in the packets that close streams: no gap showed them */
} ctf_trace_facts;

/* The TSDL metadata of the whole trace (text starting with CTF 1.8's signature comment) to
 * `out`. Returns 0, or -1 when a write fails (errno set). */
int ctf_write_metadata(FILE *out, const ctf_classes *c, const ctf_trace_facts *f);

/* Byte offsets in a packet: the header, then the context (see the metadata's stream). */
#define CTF_MAGIC 0xC1FC1FC1u
#define CTF_PH_SIZE 32u          /* magic, uuid[16], stream_id, stream_instance_id */
#define CTF_PC_TS_BEGIN 32u
#define CTF_PC_TS_END 40u
#define CTF_PC_CONTENT_SIZE 48u  /* bits */
#define CTF_PC_PACKET_SIZE 56u   /* bits */
#define CTF_PC_SEQ_NUM 64u
#define CTF_PC_DISCARDED 72u     /* events discarded since the stream began */
#define CTF_PC_PID 80u
#define CTF_PC_TID 84u
#define CTF_PC_STRINGS 88u       /* procname, thread_name: NUL-terminated */

#endif /* NT_RENDER_CTF_H */
