/*
 * nt_record_bundle.c - salvaging a bundle whose manager went away (nt_record_bundle.h).
 *
 * Sections are appended whole by the manager, and the file reaches a section's end only
 * once the section is written (it extends the file over a trailing hole), so "every frame
 * whose end lies inside the file" is exactly what was finished before the manager died.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "format/nt_bundle.h"
#include "nt_record_bundle.h"
#include "format/nt_version.h"
#include "runtime/nt_write_all.h"

/* 0, or -1 with errno set (EIO for a write of nothing). */
static int write_at(int fd, const void *data, size_t len, off_t off)
{
	uint64_t at = (uint64_t)off;
	int e = nt_write_all(fd, data, len, &at);
	errno = e;
	return e ? -1 : 0;
}

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int fresh_preamble(int fd)
{
	nt_bundle_preamble pre;
	nt_bundle_preamble_init(&pre, wall_ns());
	return write_at(fd, &pre, sizeof(pre), 0);
}

/* The end of the last whole frame after the preamble; *ended when an END frame is there. */
static uint64_t last_whole(int fd, uint64_t size, uint32_t *sections, int *ended)
{
	uint64_t off = sizeof(nt_bundle_preamble);
	*sections = 0;
	*ended = 0;
	while (off + sizeof(nt_bundle_frame) <= size) {
		/* Salvage asks only where whole frames end, not what they say (the reader judges
		 * that): a frame is walked past on its magic and lengths. */
		nt_bundle_frame f;
		if (pread(fd, &f, sizeof(f), (off_t)off) != (ssize_t)sizeof(f) ||
		    f.magic != NT_BUNDLE_FRAME_MAGIC || f.name_len > NT_BUNDLE_MAX_NAME ||
		    f.message_len > NT_BUNDLE_MAX_MESSAGE)
			break;
		uint64_t head, next;
		nt_bundle_fit fit = nt_bundle_frame_fit(&f, off, size, &head, &next);
		if (f.kind == NT_BUNDLE_END) {
			*ended = fit == NT_BUNDLE_FIT_WHOLE;
			break;
		}
		if (f.kind != NT_BUNDLE_SECTION || fit != NT_BUNDLE_FIT_WHOLE)
			break;
		(*sections)++;
		off = next;
	}
	return off;
}

int nt_record_bundle_salvage(int fd, int end_state, const char *message, uint32_t *sections,
			     char *why, size_t whylen)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		snprintf(why, whylen, "fstat: %s", strerror(errno));
		return -1;
	}
	nt_bundle_preamble pre;
	uint64_t size = (uint64_t)st.st_size;
	if (size < sizeof(pre)) {
		if (fresh_preamble(fd) != 0) {
			snprintf(why, whylen, "writing a preamble: %s", strerror(errno));
			return -1;
		}
		size = sizeof(pre);
	} else if (pread(fd, &pre, sizeof(pre), 0) != (ssize_t)sizeof(pre) ||
		   memcmp(pre.magic, NT_BUNDLE_MAGIC, sizeof(pre.magic)) != 0) {
		snprintf(why, whylen, "the output does not start with a bundle preamble");
		return -1;
	}
	int ended;
	uint64_t off = last_whole(fd, size, sections, &ended);
	if (ended)
		return 0;
	nt_bundle_frame f;
	memset(&f, 0, sizeof(f));
	f.magic = NT_BUNDLE_FRAME_MAGIC;
	f.kind = NT_BUNDLE_END;
	f.end_state = (uint8_t)end_state;
	f.sections = *sections;
	f.message_len = (uint16_t)strnlen(message, NT_BUNDLE_MAX_MESSAGE);
	f.end_wall_ns = wall_ns();
	static const char zero[8];
	if (ftruncate(fd, (off_t)off) != 0 || write_at(fd, &f, sizeof(f), (off_t)off) != 0 ||
	    write_at(fd, message, f.message_len, (off_t)(off + sizeof(f))) != 0 ||
	    write_at(fd, zero, NT_BUNDLE_PAD8(f.message_len) - f.message_len,
		      (off_t)(off + sizeof(f) + f.message_len)) != 0) {
		snprintf(why, whylen, "ending the bundle: %s", strerror(errno));
		return -1;
	}
	return 0;
}
