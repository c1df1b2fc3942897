/*
 * nt_bundle.h - the archive of many processes that trace-record writes (schema:
 * BundlePreamble, BundleFrame).
 *
 *   [BundlePreamble, 64 bytes]
 *   [BundleFrame SECTION][name][message][pad to 8][archive bytes][pad to 8]   one per provider
 *   ...
 *   [BundleFrame END][message][pad to 8]                                       how it ended
 *
 * A section's archive is a complete nanotrace archive of one process (either layout: a
 * provider's arena as the manager held it, with the stream the manager saved from it
 * appended), so the reader opens each section as it opens a file. The frame says what the
 * archive cannot: which provider it was, how its recording ended (finished, killed, timed
 * out, damaged) and, for the manager's own findings, a message. Sections are appended as
 * they complete, so a bundle cut short (the manager killed) is still readable up to its last
 * whole frame; the END frame is what says the recording ended as a whole.
 *
 * Nothing here is trusted by the reader: every length is checked against the file.
 */
#ifndef NT_BUNDLE_H
#define NT_BUNDLE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nt_format.h"
#include "nt_version.h" /* the producer string */

#define NT_BUNDLE_MAGIC "NTBUNDLE" /* the first 8 bytes of the file */
#define NT_BUNDLE_VERSION 1u
#define NT_BUNDLE_FRAME_MAGIC 0x4653544Eu /* "NTSF" little-endian */

/* The longest provider name a SECTION frame carries and the longest message any frame
 * carries, in bytes (no NUL). A frame over either is damage: a walk stops there. */
#define NT_BUNDLE_MAX_NAME 100
#define NT_BUNDLE_MAX_MESSAGE 1024
#define NT_BUNDLE_STR_(x) #x
#define NT_BUNDLE_STR(x) NT_BUNDLE_STR_(x)

/* BundleFrame.kind */
enum { NT_BUNDLE_SECTION = 1, NT_BUNDLE_END = 2 };

/* BundleFrame.end_state: how a provider's recording ended (a SECTION frame), or how the
 * whole recording did (the END frame: FINISHED, or MANAGER_LOST written by trace-record
 * when the manager went away). X(NAME, value, text for renderers). A connection that closed
 * without STOPPED is told apart by how the process ended (manager/core/nt_mgr_ending.c):
 * KILLED by a signal (named in the message), EXITED_UNSTOPPED, EXECED or ENDED_UNKNOWN. */
#define NT_SECTION_STATES(X)                                                                     \
	X(FINISHED, 1, "finished")       /* stopped by the trace and answered STOPPED */           \
	X(EXITED, 2, "exited")           /* the process stopped its own recording and left */      \
	X(KILLED, 3, "killed")           /* by a signal (the message names it), without STOPPED */  \
	X(TIMED_OUT, 4, "timed out")     /* did not answer STOP in time; saved as it was */        \
	X(DAMAGED, 5, "damaged")         /* its buffer or messages lied: see the message */        \
	X(MANAGER_LOST, 6, "manager lost") /* END only: the manager went away mid-run */          \
	X(EXITED_UNSTOPPED, 7, "exited without stopping") /* exit status in the message: its    \
	                                    exit handlers did not run (_exit), so no STOPPED */    \
	X(EXECED, 8, "exec'd")           /* it ran exec: the new program does not record here */   \
	X(ENDED_UNKNOWN, 9, "ended (cause unknown)") /* connection closed; how the process      \
	                                    ended could not be learned: the message says why */
enum {
#define NT_SECTION_ENUM(name, value, text) NT_SECTION_##name = value,
	NT_SECTION_STATES(NT_SECTION_ENUM)
#undef NT_SECTION_ENUM
};

static inline const char *nt_section_state_name(unsigned state)
{
	switch (state) {
#define NT_SECTION_CASE(name, value, text)                                                       \
	case value:                                                                                \
		return text;
		NT_SECTION_STATES(NT_SECTION_CASE)
#undef NT_SECTION_CASE
	}
	return "unknown";
}

/* Whether `state` is an end without STOPPED: the connection closed while it recorded. */
static inline int nt_section_state_unstopped(unsigned state)
{
	return state == NT_SECTION_KILLED || state == NT_SECTION_EXITED_UNSTOPPED ||
	       state == NT_SECTION_EXECED || state == NT_SECTION_ENDED_UNKNOWN;
}

/* Whether `state` may end a SECTION frame: any state but MANAGER_LOST (END only). */
static inline int nt_section_state_of_section(unsigned state)
{
	return state >= NT_SECTION_FINISHED && state <= NT_SECTION_ENDED_UNKNOWN &&
	       state != NT_SECTION_MANAGER_LOST;
}

typedef struct nt_bundle_preamble {
	char magic[8];           /* NT_BUNDLE_MAGIC, no NUL */
	uint32_t version;        /* NT_BUNDLE_VERSION */
	uint32_t flags;          /* 0 */
	NT_ALIGN8 int64_t created_wall_ns; /* CLOCK_REALTIME when the recording started */
	char producer[32];       /* "nanotrace X.Y.Z", NUL-padded (32: the preamble is 64 bytes) */
	uint64_t reserved;
} nt_bundle_preamble;

typedef struct nt_bundle_frame {
	uint32_t magic;          /* NT_BUNDLE_FRAME_MAGIC */
	uint16_t kind;           /* NT_BUNDLE_SECTION or NT_BUNDLE_END */
	uint8_t end_state;       /* NT_SECTION_* */
	uint8_t mode;            /* SECTION: the buffering mode (NT_MODE_*) */
	uint32_t pid;            /* SECTION: the provider's process */
	uint32_t provider_id;    /* SECTION: the manager's number for it (1, 2, ...) */
	uint16_t name_len;       /* SECTION: the provider's name, <= NT_BUNDLE_MAX_NAME bytes */
	uint16_t message_len;    /* what the manager found, <= NT_BUNDLE_MAX_MESSAGE ("" = none) */
	uint32_t sections;       /* END: the number of SECTION frames before it */
	NT_ALIGN8 uint64_t archive_size; /* SECTION: bytes of its archive (0 = none saved) */
	int64_t end_wall_ns;     /* CLOCK_REALTIME when this section or the recording ended */
	uint64_t reserved[3];
} nt_bundle_frame;

NT_STATIC_ASSERT(sizeof(nt_bundle_preamble) == 64, "BundlePreamble is 64 bytes");
NT_STATIC_ASSERT(sizeof(nt_bundle_frame) == 64, "BundleFrame is 64 bytes");

/* A bundle's preamble, made at `created_wall_ns` by this version. */
static inline void nt_bundle_preamble_init(nt_bundle_preamble *pre, int64_t created_wall_ns)
{
	memset(pre, 0, sizeof(*pre));
	memcpy(pre->magic, NT_BUNDLE_MAGIC, sizeof(pre->magic));
	pre->version = NT_BUNDLE_VERSION;
	pre->created_wall_ns = created_wall_ns;
	snprintf(pre->producer, sizeof(pre->producer), "nanotrace %s", NT_VERSION_STRING);
}

#define NT_BUNDLE_PAD8(n) (((n) + 7u) & ~(uint64_t)7u)

/* Bytes from a frame's start to its archive: the frame, its name and message, padding. */
static inline uint64_t nt_bundle_frame_head(const nt_bundle_frame *f)
{
	return sizeof(*f) + NT_BUNDLE_PAD8((uint64_t)f->name_len + f->message_len);
}

/* What is wrong with a frame's own fields, as a reader of the bundle judges them (NULL:
 * nothing): its magic, its kind, its lengths within the limits above, a SECTION's end
 * state. Where the frame lies in the file is nt_bundle_frame_fit's question. */
static inline const char *nt_bundle_frame_problem(const nt_bundle_frame *f)
{
	if (f->magic != NT_BUNDLE_FRAME_MAGIC)
		return "bad frame magic";
	if (f->kind != NT_BUNDLE_SECTION && f->kind != NT_BUNDLE_END)
		return "unknown frame kind";
	if (f->kind == NT_BUNDLE_SECTION && f->name_len > NT_BUNDLE_MAX_NAME)
		return "provider name longer than " NT_BUNDLE_STR(NT_BUNDLE_MAX_NAME) " bytes";
	if (f->message_len > NT_BUNDLE_MAX_MESSAGE)
		return "message longer than " NT_BUNDLE_STR(NT_BUNDLE_MAX_MESSAGE) " bytes";
	if (f->kind == NT_BUNDLE_SECTION && !nt_section_state_of_section(f->end_state))
		return "unknown section end state";
	return NULL;
}

/* How much of a frame lies inside the file. */
typedef enum nt_bundle_fit {
	NT_BUNDLE_FIT_WHOLE = 0,   /* the frame, and a SECTION's archive and padding */
	NT_BUNDLE_FIT_CUT_TEXT,    /* its name and message run past the end */
	NT_BUNDLE_FIT_CUT_ARCHIVE, /* a SECTION's archive runs past the end */
	NT_BUNDLE_FIT_CUT_PAD,     /* a SECTION's archive is whole, the padding after it cut */
} nt_bundle_fit;

/* The one bounded step of a walk over a bundle's frames: the frame `f`, read at `off` of a
 * bundle of `size` bytes (off + sizeof(*f) <= size), sets *head (bytes from the frame to its
 * archive; an END frame's whole length) and *next (where the next frame starts: after a
 * SECTION's padded archive, after an END frame's text). Trusts no length beyond the file. */
static inline nt_bundle_fit nt_bundle_frame_fit(const nt_bundle_frame *f, uint64_t off,
						uint64_t size, uint64_t *head, uint64_t *next)
{
	uint64_t room = size - off;
	*head = nt_bundle_frame_head(f);
	*next = off + *head;
	if (*head > room)
		return NT_BUNDLE_FIT_CUT_TEXT;
	if (f->kind != NT_BUNDLE_SECTION)
		return NT_BUNDLE_FIT_WHOLE;
	if (f->archive_size > room - *head)
		return NT_BUNDLE_FIT_CUT_ARCHIVE;
	*next += NT_BUNDLE_PAD8(f->archive_size);
	return NT_BUNDLE_PAD8(f->archive_size) > room - *head ? NT_BUNDLE_FIT_CUT_PAD
							      : NT_BUNDLE_FIT_WHOLE;
}

#endif /* NT_BUNDLE_H */
