/*
 * nt_wire.h - the messages of the trace manager's sockets (schema: WireMessage): the one
 * definition the provider (writer/core), the manager and trace-record (manager/) share.
 *
 * Fuchsia's three protocols, on Unix sockets of type SOCK_SEQPACKET (one message per
 * datagram, so a message is never split or merged):
 *
 *   registry    (fuchsia.tracing.provider.Registry + Provider) a provider connects to the
 *               manager's socket and sends REGISTER; the connection then carries the
 *               manager's INITIALIZE (buffer memfd and FIFO attached with SCM_RIGHTS), START,
 *               STOP and TERMINATE, and, for a synchronous registration, one REGISTERED.
 *               The provider answers START with STARTED and STOP with STOPPED on the FIFO
 *               (format/nt_fifo.h), where streaming mode also runs SAVE_BUFFER/BUFFER_SAVED.
 *   controller  (fuchsia.tracing.controller) trace-record connects to the same socket and
 *               sends CTL_LIST, or CTL_SELECT* then CTL_START (the output file attached) and
 *               later CTL_STOP; the manager answers CTL_PROVIDER* CTL_END, CTL_STARTED,
 *               CTL_PROGRESS (while recording) and CTL_STOPPED.
 *
 * The first message of a connection says which protocol it speaks. Every message is one
 * fixed-size nt_wire_msg: a receiver reads exactly sizeof(nt_wire_msg) bytes and calls
 * nt_wire_check() before looking at anything else; nothing in a message is trusted beyond
 * what nt_wire_check() proves (magic, version, a known type, lengths within the arrays, no
 * NUL inside a counted string).
 */
#ifndef NT_WIRE_H
#define NT_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nt_format.h"

#define NT_WIRE_MAGIC 0x4D57544Eu /* "NTWM" little-endian */
#define NT_WIRE_VERSION 1u
#define NT_WIRE_MAX_NAME 100u  /* a provider's name, in bytes */
#define NT_WIRE_MAX_TEXT 1024u /* categories, messages */

/* The manager's socket: $NANOTRACE_MANAGER, else $XDG_RUNTIME_DIR/nanotrace/manager.sock,
 * else /tmp/nanotrace-$UID/manager.sock (the directory 0700 and the caller's own). */
#define NT_MANAGER_ENV "NANOTRACE_MANAGER"
#define NT_MANAGER_SOCKET_NAME "manager.sock"

/*
 * Every message type, once: X(NAME, value, direction, what the numbers mean).
 * Directions: P->M provider to manager, M->P manager to provider, C->M controller to
 * manager, M->C manager to controller. Unused numbers are 0; name and text are counted
 * strings (name_len, text_len), not NUL-terminated on the wire.
 */
#define NT_WIRE_MESSAGES(X)                                                                      \
	/* pid = the provider's pid; a = NT_WIRE_SYNC for a synchronous registration; name =     \
	 * its name */                                                                             \
	X(REGISTER, 1, "P->M", "pid, a = flags (NT_WIRE_SYNC), name")                               \
	/* The answer to a synchronous REGISTER, sent after INITIALIZE and START when a trace is   \
	 * running: a = 1 if this provider was started. */                                         \
	X(REGISTERED, 2, "M->P", "a = started")                                                    \
	/* SCM_RIGHTS [buffer memfd, FIFO socket]. a = mode (NT_MODE_*), b = buffer_size,          \
	 * c = chunk_size, d = the memfd's size (nt_arena_layout().map_size); text = categories    \
	 * ("" = all). The provider maps the memfd as its arena, laid out by format/nt_arena_layout.h. */ \
	X(INITIALIZE, 3, "M->P", "a = mode, b = buffer_size, c = chunk_size, d = map size, text = categories") \
	/* a = disposition (nt_buffer_disposition), text = additional categories */                \
	X(START, 4, "M->P", "a = buffer disposition, text = additional categories")               \
	X(STOP, 5, "M->P", "")                                                                     \
	/* Close the buffer and the FIFO; the provider stays registered, and idle. */              \
	X(TERMINATE, 6, "M->P", "")                                                                \
	/* Ask for the registered providers: CTL_PROVIDER for each, then CTL_END. */               \
	X(CTL_LIST, 16, "C->M", "")                                                                \
	/* Trace only providers of this name (repeatable; none = every provider). */               \
	X(CTL_SELECT, 17, "C->M", "name = a provider name")                                        \
	/* SCM_RIGHTS [output file]. a = mode, b = buffer_size (0 = the manager's default),        \
	 * c = chunk_size (0 = automatic), d = buffer disposition (nt_buffer_disposition) for a    \
	 * provider that still holds the previous trace's buffer (0: a fresh buffer) in bits      \
	 * 0..31 and the compression of the saved sections in bits 32..63 (nt_wire_start_d);      \
	 * text = categories. Answered by CTL_STARTED, or CTL_END with a = an nt_result and        \
	 * text = why. */                                                                          \
	X(CTL_START, 18, "C->M", "a = mode, b = buffer_size, c = chunk_size, d = disposition, text = categories") \
	X(CTL_STOP, 19, "C->M", "")                                                                \
	/* pid, a = state (NT_PROVIDER_STATE_*), name */                                           \
	X(CTL_PROVIDER, 20, "M->C", "pid, a = state, name")                                        \
	/* End of a list, or a refusal: a = nt_result (0 = NT_OK), text = why */                   \
	X(CTL_END, 21, "M->C", "a = result, text = message")                                       \
	/* a = providers started so far */                                                         \
	X(CTL_STARTED, 22, "M->C", "a = providers started")                                        \
	/* While recording: a = providers, b = events, c = bytes saved, d = events dropped */      \
	X(CTL_PROGRESS, 23, "M->C", "a = providers, b = events, c = bytes, d = drops")             \
	/* The archive is complete in the output file: a = sections, b = events, c = bytes,         \
	 * d = events dropped; text = problems, if any (one per line) */                           \
	X(CTL_STOPPED, 24, "M->C", "a = sections, b = events, c = bytes, d = drops, text")

enum {
#define NT_WIRE_ENUM(name, value, dir, fields) NT_WIRE_##name = value,
	NT_WIRE_MESSAGES(NT_WIRE_ENUM)
#undef NT_WIRE_ENUM
};

#define NT_WIRE_SYNC 1u /* REGISTER: answer with REGISTERED */

/* CTL_START's d: the disposition in bits 0..31, the compression in bits 32..63 as an int32:
 * 0 = the manager's default (NT_ZCHUNK_LEVEL_DEFAULT, format/nt_zchunk.h), NT_WIRE_NO_
 * COMPRESSION = sections stored uncompressed, else a zstd level (nt_zchunk_level_ok). A
 * controller that predates compression sends 0 there: the default. */
#define NT_WIRE_NO_COMPRESSION INT32_MIN
static inline uint64_t nt_wire_start_d(uint32_t disposition, int32_t compression)
{
	return (uint64_t)disposition | (uint64_t)(uint32_t)compression << 32;
}
static inline uint32_t nt_wire_start_disposition(uint64_t d)
{
	return (uint32_t)d;
}
static inline int32_t nt_wire_start_compression(uint64_t d)
{
	return (int32_t)(uint32_t)(d >> 32);
}

/* A provider's state, as CTL_PROVIDER reports it. */
#define NT_PROVIDER_STATES(X)                                                                    \
	X(REGISTERED, 0, "registered")   /* connected, no buffer */                               \
	X(INITIALIZED, 1, "initialized") /* has a buffer, not recording */                        \
	X(STARTED, 2, "started")                                                                   \
	X(STOPPING, 3, "stopping")       /* STOP sent, STOPPED not yet received */                 \
	X(STOPPED, 4, "stopped")                                                                   \
	X(GONE, 5, "gone")               /* connection closed; its buffer is still held */
enum {
#define NT_PROVIDER_STATE_ENUM(name, value, text) NT_PROVIDER_STATE_##name = value,
	NT_PROVIDER_STATES(NT_PROVIDER_STATE_ENUM)
#undef NT_PROVIDER_STATE_ENUM
};

/* A provider state's name ("started"), or "unknown". */
static inline const char *nt_provider_state_name(uint64_t state)
{
	switch (state) {
#define NT_PROVIDER_STATE_CASE(name, value, text)                                                \
	case value:                                                                                \
		return text;
		NT_PROVIDER_STATES(NT_PROVIDER_STATE_CASE)
#undef NT_PROVIDER_STATE_CASE
	}
	return "unknown";
}

/* Mirrors schema WireMessage (checked by tests/format/layout_test.cpp). */
typedef struct nt_wire_msg {
	uint32_t magic;   /* NT_WIRE_MAGIC */
	uint16_t type;    /* NT_WIRE_* */
	uint16_t version; /* NT_WIRE_VERSION */
	uint32_t pid;
	uint16_t name_len;
	uint16_t text_len;
	NT_ALIGN8 uint64_t a;
	uint64_t b;
	uint64_t c;
	uint64_t d;
	char name[104]; /* name_len <= NT_WIRE_MAX_NAME bytes */
	char text[1024];
} nt_wire_msg;

NT_STATIC_ASSERT(sizeof(nt_wire_msg) == 1176, "WireMessage is 1176 bytes");

/* A message of `type` with its magic and version; every other field 0. */
static inline void nt_wire_init(nt_wire_msg *m, uint16_t type)
{
	memset(m, 0, sizeof(*m));
	m->magic = NT_WIRE_MAGIC;
	m->type = type;
	m->version = NT_WIRE_VERSION;
}

/* Copies a counted string into `dst` of capacity `cap`; returns the length kept (at most cap,
 * cut at a NUL in `s`). */
static inline uint16_t nt_wire_put(char *dst, size_t cap, const char *s)
{
	size_t n = s ? strnlen(s, cap) : 0;
	memcpy(dst, s ? s : "", n);
	return (uint16_t)n;
}
static inline void nt_wire_set_name(nt_wire_msg *m, const char *s)
{
	m->name_len = nt_wire_put(m->name, NT_WIRE_MAX_NAME, s);
}
static inline void nt_wire_set_text(nt_wire_msg *m, const char *s)
{
	m->text_len = nt_wire_put(m->text, NT_WIRE_MAX_TEXT, s);
}

/* The name of a message type ("REGISTER"), or NULL when it is none. */
static inline const char *nt_wire_type_name(uint32_t type)
{
	switch (type) {
#define NT_WIRE_CASE(name, value, dir, fields)                                                   \
	case value:                                                                                \
		return #name;
		NT_WIRE_MESSAGES(NT_WIRE_CASE)
#undef NT_WIRE_CASE
	}
	return NULL;
}

/* Is `m` (of `len` received bytes) a well-formed message? Returns NULL, or what is wrong
 * (a static string). Does not judge whether the type is right for the connection's state. */
static inline const char *nt_wire_check(const nt_wire_msg *m, size_t len)
{
	if (len != sizeof(*m))
		return "message of the wrong size";
	if (m->magic != NT_WIRE_MAGIC)
		return "message without the NTWM magic";
	if (m->version != NT_WIRE_VERSION)
		return "message of another protocol version";
	if (nt_wire_type_name(m->type) == NULL)
		return "message of an unknown type";
	if (m->name_len > NT_WIRE_MAX_NAME || m->text_len > NT_WIRE_MAX_TEXT)
		return "message with a string longer than its field";
	if (memchr(m->name, '\0', m->name_len) != NULL || memchr(m->text, '\0', m->text_len) != NULL)
		return "message with a NUL inside a string";
	return NULL;
}

/* The message's name or text as a NUL-terminated string in `buf` (of at least len + 1). */
static inline const char *nt_wire_str(const char *field, uint16_t len, char *buf)
{
	memcpy(buf, field, len);
	buf[len] = '\0';
	return buf;
}

#endif /* NT_WIRE_H */
