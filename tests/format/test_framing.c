/*
 * test_framing.c - the framing steps format/ defines once, at their bounds: the unaligned
 * loads (nt_unaligned.h) at every alignment, the top-level record step (nt_record.h) never
 * reading past the end of what holds the record, and the bundle frame step (nt_bundle.h) at
 * every cut of a frame, with the limits of a frame's name and message.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/nt_bundle.h"
#include "format/nt_record.h"
#include "format/nt_unaligned.h"

/* Each load at each offset of a buffer gives the bytes there, least significant first. */
static void test_loads_any_alignment(void **state)
{
	(void)state;
	uint8_t buf[24];
	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(0x11 * (i + 1));
	for (unsigned off = 0; off + 8 <= sizeof(buf); off++) {
		uint64_t want = 0;
		for (unsigned b = 8; b-- > 0;)
			want = want << 8 | buf[off + b];
		assert_int_equal(nt_load_le64(buf + off), want);
		assert_int_equal(nt_load_le32(buf + off), (uint32_t)want);
		assert_int_equal(nt_load_le16(buf + off), (uint16_t)want);
	}
}

/* Records whose last byte ends a readable page: fewer than 8 bytes are a short record, never
 * an 8-byte read into the page after (which faults; an optimised build may drop the dead
 * read, an unoptimised one, as the sanitizer builds are, makes it). */
static void test_top_record_stays_inside(void **state)
{
	(void)state;
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mprotect(map + page, (size_t)page, PROT_NONE), 0);
	uint8_t *end = map + page;
	uint64_t size = 1;
	for (uint64_t room = 0; room < 8; room++) {
		memset(end - room, NT_KIND_STRING, room);
		assert_int_equal(nt_top_record_frame(end - room, room, 0, &size), NT_FRAME_SHORT);
		assert_int_equal(size, 0);
	}
	uint64_t w0 = nt_record_word(NT_KIND_STRING, 2, 0, 0);
	memcpy(end - 16, &w0, 8);
	assert_int_equal(nt_top_record_frame(end - 16, 16, 0, &size), NT_FRAME_OK);
	assert_int_equal(size, 16);
	w0 = nt_record_word(NT_KIND_STRING, 1, 0, 0);
	memcpy(end - 8, &w0, 8);
	assert_int_equal(nt_top_record_frame(end - 8, 8, 0, &size), NT_FRAME_OK);
	assert_int_equal(size, 8);
	/* A large record (a chunk's) says its size in bytes: 24 does not fit in 16. */
	w0 = nt_large_record_word(NT_KIND_CHUNK, 0, 24);
	memcpy(end - 16, &w0, 8);
	assert_int_equal(nt_top_record_frame(end - 32, 32, 16, &size), NT_FRAME_PAST_END);
	assert_int_equal(size, 0);
	munmap(map, (size_t)page * 2);
}

static nt_bundle_frame frame_of(unsigned kind, uint16_t name_len, uint16_t message_len,
				uint64_t archive_size)
{
	nt_bundle_frame f;
	memset(&f, 0, sizeof(f));
	f.magic = NT_BUNDLE_FRAME_MAGIC;
	f.kind = (uint16_t)kind;
	f.end_state = NT_SECTION_FINISHED;
	f.name_len = name_len;
	f.message_len = message_len;
	f.archive_size = archive_size;
	return f;
}

/* A SECTION frame at 64 of a file cut at every byte: cut in its text, then in its archive,
 * then in the archive's padding, then whole; the next frame after the padded archive. */
static void test_section_frame_every_cut(void **state)
{
	(void)state;
	nt_bundle_frame f = frame_of(NT_BUNDLE_SECTION, 5, 9, 13);
	uint64_t off = 64, text_end = off + 64 + 16, arch_end = text_end + 13, pad_end = text_end + 16;
	for (uint64_t size = off + 64; size <= pad_end + 8; size++) {
		uint64_t head = 0, next = 0;
		nt_bundle_fit fit = nt_bundle_frame_fit(&f, off, size, &head, &next);
		nt_bundle_fit want = size < text_end   ? NT_BUNDLE_FIT_CUT_TEXT
				     : size < arch_end ? NT_BUNDLE_FIT_CUT_ARCHIVE
				     : size < pad_end  ? NT_BUNDLE_FIT_CUT_PAD
						       : NT_BUNDLE_FIT_WHOLE;
		assert_int_equal(fit, want);
		assert_int_equal(head, 64 + 16);
		if (fit == NT_BUNDLE_FIT_CUT_PAD || fit == NT_BUNDLE_FIT_WHOLE)
			assert_int_equal(next, pad_end);
	}
	/* An archive size beyond any file never wraps the arithmetic. */
	f.archive_size = UINT64_MAX - 3;
	uint64_t head, next;
	assert_int_equal(nt_bundle_frame_fit(&f, off, 1u << 20, &head, &next),
			 NT_BUNDLE_FIT_CUT_ARCHIVE);
}

/* An END frame is whole once its text is; its archive size means nothing. */
static void test_end_frame_every_cut(void **state)
{
	(void)state;
	nt_bundle_frame f = frame_of(NT_BUNDLE_END, 0, 3, 999);
	for (uint64_t size = 64; size <= 64 + 64 + 16; size++) {
		uint64_t head, next;
		nt_bundle_fit fit = nt_bundle_frame_fit(&f, 0, size, &head, &next);
		assert_int_equal(fit, size < 72 ? NT_BUNDLE_FIT_CUT_TEXT : NT_BUNDLE_FIT_WHOLE);
		assert_int_equal(next, 72);
	}
}

/* The limits: at the limit a frame is fine, one byte over it is damage (a name only on a
 * SECTION frame, which is the only one that names a provider). */
static void test_frame_limits(void **state)
{
	(void)state;
	nt_bundle_frame f = frame_of(NT_BUNDLE_SECTION, NT_BUNDLE_MAX_NAME, NT_BUNDLE_MAX_MESSAGE, 0);
	assert_null(nt_bundle_frame_problem(&f));
	f.name_len++;
	assert_string_equal(nt_bundle_frame_problem(&f), "provider name longer than 100 bytes");
	f.name_len--;
	f.message_len++;
	assert_string_equal(nt_bundle_frame_problem(&f), "message longer than 1024 bytes");
	f = frame_of(NT_BUNDLE_END, NT_BUNDLE_MAX_NAME + 1, 0, 0);
	assert_null(nt_bundle_frame_problem(&f));
	f = frame_of(NT_BUNDLE_SECTION, 1, 1, 0);
	f.end_state = NT_SECTION_MANAGER_LOST;
	assert_string_equal(nt_bundle_frame_problem(&f), "unknown section end state");
	f = frame_of(3, 0, 0, 0);
	assert_string_equal(nt_bundle_frame_problem(&f), "unknown frame kind");
	f.magic++;
	assert_string_equal(nt_bundle_frame_problem(&f), "bad frame magic");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loads_any_alignment),
		cmocka_unit_test(test_top_record_stays_inside),
		cmocka_unit_test(test_section_frame_every_cut),
		cmocka_unit_test(test_end_frame_every_cut),
		cmocka_unit_test(test_frame_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
