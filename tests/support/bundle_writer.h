/* bundle_writer.h - writes a bundle (format/nt_bundle.h) from archives in memory, as
 * trace-record's manager does, for the reader's tests (tests only: make_bundle and
 * test_bundle share it). Every byte comes from the format's own structs and arithmetic. */
#ifndef BUNDLE_WRITER_H
#define BUNDLE_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/nt_bundle.h"

typedef struct bw_section {
	const void *archive; /* NULL with size 0: no archive saved */
	size_t size;
	uint8_t end_state, mode;
	uint32_t pid, provider_id;
	const char *name, *message; /* NULL: "" */
	int64_t end_wall_ns;
} bw_section;

static int bw_pad(FILE *f, uint64_t n)
{
	static const uint8_t zero[8];
	return fwrite(zero, 1, (size_t)(NT_BUNDLE_PAD8(n) - n), f) == NT_BUNDLE_PAD8(n) - n ? 0 : -1;
}

static int bw_preamble(FILE *f, int64_t created_wall_ns)
{
	nt_bundle_preamble p;
	nt_bundle_preamble_init(&p, created_wall_ns);
	snprintf(p.producer, sizeof(p.producer), "nanotrace make_bundle"); /* tests' own bundles */
	return fwrite(&p, sizeof(p), 1, f) == 1 ? 0 : -1;
}

/* One frame with its name and message, padded; the caller writes the archive after it. */
static int bw_frame(FILE *f, const nt_bundle_frame *fr, const char *name, const char *msg)
{
	if (fwrite(fr, sizeof(*fr), 1, f) != 1 || fwrite(name, 1, fr->name_len, f) != fr->name_len ||
	    fwrite(msg, 1, fr->message_len, f) != fr->message_len)
		return -1;
	return bw_pad(f, (uint64_t)fr->name_len + fr->message_len);
}

static int bw_section_write(FILE *f, const bw_section *s)
{
	const char *name = s->name ? s->name : "", *msg = s->message ? s->message : "";
	nt_bundle_frame fr;
	memset(&fr, 0, sizeof(fr));
	fr.magic = NT_BUNDLE_FRAME_MAGIC;
	fr.kind = NT_BUNDLE_SECTION;
	fr.end_state = s->end_state;
	fr.mode = s->mode;
	fr.pid = s->pid;
	fr.provider_id = s->provider_id;
	fr.name_len = (uint16_t)strlen(name);
	fr.message_len = (uint16_t)strlen(msg);
	fr.archive_size = s->size;
	fr.end_wall_ns = s->end_wall_ns;
	if (bw_frame(f, &fr, name, msg) != 0)
		return -1;
	if (s->size && fwrite(s->archive, 1, s->size, f) != s->size)
		return -1;
	return bw_pad(f, s->size);
}

static int bw_end(FILE *f, uint8_t state, uint32_t sections, const char *msg)
{
	nt_bundle_frame fr;
	memset(&fr, 0, sizeof(fr));
	fr.magic = NT_BUNDLE_FRAME_MAGIC;
	fr.kind = NT_BUNDLE_END;
	fr.end_state = state;
	fr.sections = sections;
	fr.message_len = (uint16_t)strlen(msg ? msg : "");
	return bw_frame(f, &fr, "", msg ? msg : "");
}

#endif /* BUNDLE_WRITER_H */
