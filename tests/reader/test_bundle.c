/*
 * test_bundle.c - the reader over many processes: bundles (format/nt_bundle.h) written by
 * the tests' bundle writer (support/bundle_writer.h, also behind make_bundle) from archives
 * that three real processes recorded at the same time, directories and mixed files.
 * Sections are found and counted exactly, the time merge is globally ordered, a damaged
 * section costs only itself, and a bundle cut at every byte of its last frames, lying frames
 * and bit flips are reported, never a crash (ASan+UBSan in the suite).
 */
#define _GNU_SOURCE
#include "tests/support/bundle_fixture.h"

static void test_sections_in_time_order(void **state)
{
	(void)state;
	size_t size;
	uint8_t *b = bundle(&size, 1, NULL);
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(b, size, "bundle", &err);
	assert_msg(r != NULL, "%s", err.message);
	assert_int_equal(nt_reader_section_count(r), NPROC);
	assert_int_equal(nt_reader_problem_count(r), 0);
	for (uint32_t i = 0; i < NPROC; i++) {
		const nt_reader_section *s = nt_reader_section_at(r, i);
		assert_int_equal(s->pid, pids[i]);
		assert_int_equal(s->provider_id, i + 1);
		assert_string_equal(s->name, names[i]);
		assert_int_equal(s->end_state, states[i]);
		assert_string_equal(s->end_text, nt_section_state_name(states[i]));
		assert_non_null(s->reader);
		assert_int_equal(s->mode, modes[i]);
		assert_int_equal(s->info->buffering_mode, modes[i]);
		assert_int_equal(s->info->layout,
				 i == 1 || i == 2 ? NT_LAYOUT_ARENA : NT_LAYOUT_STREAM);
		assert_true(s->offset % 8 == 0 && s->offset + s->size <= size);
	}
	assert_string_equal(nt_reader_section_at(r, 1)->message, "connection closed");
	assert_null(nt_reader_section_at(r, NPROC));
	/* Threads numbered globally, each naming its section and its process. */
	assert_int_equal(nt_reader_thread_count(r), NPROC + 1);
	for (uint32_t i = 0; i < nt_reader_thread_count(r); i++) {
		const nt_reader_thread *t = nt_reader_thread_at(r, i);
		assert_ptr_equal(nt_reader_thread_by_index(r, t->index), t);
		assert_true(t->index < nt_reader_thread_index_limit(r));
		assert_int_equal(t->pid, pids[t->section]);
	}
	merge_check m = visit(r, NT_ORDER_TIME);
	assert_int_equal(m.errors, 0);
	assert_int_equal(m.disorder, 0);
	assert_int_equal(m.seq_disorder, 0);
	check_accounting(r, &m, -1);
	merge_check s = visit(r, NT_ORDER_STREAM);
	assert_int_equal(s.events, m.events);
	assert_false(s.stream_order_broken);
	assert_int_equal(s.seq_disorder, 0);
	/* The processes overlapped: time order interleaves sections. */
	assert_true(m.stream_order_broken);
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	assert_int_equal(sum.threads, NPROC + 1);
	/* The summary header sums the sections' losses. */
	uint64_t over = 0, drop = 0;
	for (uint32_t i = 0; i < NPROC; i++) {
		over += nt_reader_section_at(r, i)->info->events_overwritten;
		drop += nt_reader_section_at(r, i)->info->events_dropped;
	}
	assert_true(nt_reader_section_at(r, 1)->info->events_overwritten > 0);
	assert_int_equal(nt_reader_info(r)->events_overwritten, over);
	assert_int_equal(nt_reader_info(r)->events_dropped, drop);
	/* The killed streaming process left its saved stream and its arena's tail. */
	assert_true(nt_reader_section_at(r, 2)->info->stream_offset != 0);
	assert_true(nt_reader_section_at(r, 2)->info->buffers_saved > 0);
	nt_reader_close(r);
	free(b);
}


static void test_damaged_section(void **state)
{
	(void)state;
	size_t size;
	uint8_t *b = bundle(&size, 1, smash_header);
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(b, size, "bundle", &err);
	assert_msg(r != NULL, "%s", err.message);
	assert_int_equal(nt_reader_section_count(r), NPROC);
	const nt_reader_section *s = nt_reader_section_at(r, 1);
	assert_null(s->reader);
	assert_null(s->info);
	assert_true(strstr(s->error, "section 1") != NULL);
	assert_true(s->error_offset >= s->offset && s->error_offset < s->offset + s->size);
	merge_check m = visit(r, NT_ORDER_TIME);
	assert_int_equal(m.errors, 1);
	assert_int_equal(m.first_error_offset, s->error_offset);
	assert_int_equal(m.per_section[1], 0);
	check_accounting(r, &m, 1);
	assert_int_equal(nt_reader_thread_count(r), NPROC);
	nt_reader_close(r);
	free(b);
}


static void test_cut_at_every_byte(void **state)
{
	(void)state;
	size_t size;
	uint8_t *b = bundle(&size, 1, NULL);
	uint64_t last = 0, end = 0;
	frame_offsets(b, size, &last, &end);
	assert_true(last > 0 && end > last);
	for (uint64_t cut = last; cut < size; cut++) {
		uint8_t *copy = malloc(cut); /* exactly cut bytes: ASan sees any read past */
		memcpy(copy, b, cut);
		nt_reader_error err;
		nt_reader *r = nt_reader_open_memory(copy, cut, "cut", &err);
		assert_msg(r != NULL, "cut at %llu: %s", (unsigned long long)cut, err.message);
		uint32_t whole = cut < end ? NPROC - 1 : NPROC;
		assert_msg(nt_reader_section_count(r) == whole, "cut at %llu: %u sections",
			   (unsigned long long)cut, nt_reader_section_count(r));
		uint64_t at;
		const char *p = nt_reader_problem_at(r, 0, &at);
		char want[64];
		snprintf(want, sizeof(want), "cut short after %u sections", whole);
		assert_msg(p != NULL && strstr(p, want) != NULL, "cut at %llu: %s",
			   (unsigned long long)cut, p ? p : "(no problem)");
		assert_true(at <= cut);
		if (cut % 61 == 0 || cut + 1 == size) {
			merge_check m = visit(r, cut % 2 ? NT_ORDER_TIME : NT_ORDER_STREAM);
			assert_true(m.errors >= 1);
			check_accounting(r, &m, NPROC - 1);
		}
		nt_reader_close(r);
		free(copy);
	}
	free(b);
}

/* A frame that lies: each is reported at the frame, sections before it read in full. */
static void test_lying_frames(void **state)
{
	(void)state;
	size_t size;
	uint8_t *b = bundle(&size, 1, NULL);
	uint64_t last = 0, end = 0;
	frame_offsets(b, size, &last, &end);
	static const struct {
		size_t field, width;
		uint64_t value;
		const char *want;
	} lies[] = {
		{ offsetof(nt_bundle_frame, archive_size), 8, 1u << 30, "runs past the end" },
		{ offsetof(nt_bundle_frame, archive_size), 8, UINT64_MAX - 3, "runs past the end" },
		{ offsetof(nt_bundle_frame, name_len), 2, 101, "longer than 100" },
		{ offsetof(nt_bundle_frame, message_len), 2, 1025, "longer than 1024" },
		{ offsetof(nt_bundle_frame, kind), 2, 7, "unknown frame kind" },
		{ offsetof(nt_bundle_frame, magic), 4, 0x12345678, "bad frame magic" },
		{ offsetof(nt_bundle_frame, end_state), 1, NT_SECTION_ENDED_UNKNOWN + 1,
		  "unknown section end state" },
		{ offsetof(nt_bundle_frame, end_state), 1, NT_SECTION_MANAGER_LOST, /* END only */
		  "unknown section end state" },
	};
	for (size_t k = 0; k < sizeof(lies) / sizeof(lies[0]); k++) {
		uint8_t *copy = malloc(size);
		memcpy(copy, b, size);
		memcpy(copy + last + lies[k].field, &lies[k].value, lies[k].width);
		nt_reader *r = nt_reader_open_memory(copy, size, "lie", NULL);
		assert_non_null(r);
		assert_int_equal(nt_reader_section_count(r), NPROC - 1);
		uint64_t at;
		const char *p = nt_reader_problem_at(r, 0, &at);
		assert_msg(p && strstr(p, lies[k].want), "lie %zu: %s", k, p ? p : "(none)");
		assert_int_equal(at, last);
		merge_check m = visit(r, NT_ORDER_TIME);
		check_accounting(r, &m, NPROC - 1);
		nt_reader_close(r);
		free(copy);
	}
	/* The END frame's own claims. */
	uint8_t *copy = malloc(size);
	memcpy(copy, b, size);
	uint32_t wrong = 7;
	memcpy(copy + end + offsetof(nt_bundle_frame, sections), &wrong, 4);
	copy[end + offsetof(nt_bundle_frame, end_state)] = NT_SECTION_MANAGER_LOST;
	nt_reader *r = nt_reader_open_memory(copy, size, "end", NULL);
	assert_int_equal(nt_reader_section_count(r), NPROC);
	assert_int_equal(nt_reader_problem_count(r), 2);
	assert_non_null(strstr(nt_reader_problem_at(r, 0, NULL), "counts 7 sections"));
	assert_non_null(strstr(nt_reader_problem_at(r, 1, NULL), "manager lost"));
	nt_reader_close(r);
	free(copy);
	/* A preamble of another version is refused as a whole. */
	b[8] = 2;
	nt_reader_error err;
	assert_null(nt_reader_open_memory(b, size, "v2", &err));
	assert_non_null(strstr(err.message, "version"));
	free(b);
}

static void test_bit_flips(void **state)
{
	(void)state;
	size_t size;
	uint8_t *b = bundle(&size, 1, NULL);
	uint64_t last = 0, end = 0;
	frame_offsets(b, size, &last, &end);
	uint8_t *copy = malloc(size);
	srand(13);
	for (int it = 0; it < 1500; it++) {
		memcpy(copy, b, size);
		for (int k = 0; k < 1 + it % 4; k++) {
			/* Half the flips in the frames and preamble, where the bundle's own fields are. */
			size_t at = it % 2 ? (size_t)rand() % size
				  : (size_t)(rand() % 3 == 0 ? (uint64_t)rand() % 64
					     : rand() % 2 ? last + (uint64_t)rand() % 64
					     : end + (uint64_t)rand() % 64);
			if (at < size)
				copy[at] ^= (uint8_t)(1u << (rand() % 8));
		}
		nt_reader *r = nt_reader_open_memory(copy, size, "flip", NULL);
		if (r == NULL)
			continue;
		merge_check m = visit(r, it % 3 ? NT_ORDER_TIME : NT_ORDER_STREAM);
		(void)m;
		nt_reader_summary sum;
		nt_reader_get_summary(r, &sum);
		uint64_t counts[256];
		nt_reader_count_records(r, counts);
		nt_reader_close(r);
	}
	free(copy);
	free(b);
}

static void test_open_many(void **state)
{
	(void)state;
	char bpath[300], empty[300];
	snprintf(bpath, sizeof(bpath), "%s/b.bundle", dir);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	/* A directory: its archives by name (the empty file skipped). */
	FILE *f = fopen(empty, "w");
	fclose(f);
	const char *d[] = { dir };
	nt_reader_error err;
	nt_reader *r = nt_reader_open_many(d, 1, &err);
	assert_msg(r != NULL, "%s", err.message);
	assert_int_equal(nt_reader_section_count(r), NPROC);
	for (uint32_t i = 0; i < NPROC; i++) {
		const nt_reader_section *s = nt_reader_section_at(r, i);
		assert_string_equal(s->source, paths[i]);
		assert_int_equal(s->pid, pids[i]);
		assert_int_equal(s->end_state, 0);
	}
	merge_check m = visit(r, NT_ORDER_TIME);
	assert_int_equal(m.errors, 0);
	assert_int_equal(m.disorder, 0);
	check_accounting(r, &m, -1);
	nt_reader_close(r);
	/* A bundle and a plain archive given together: four sections. */
	size_t size;
	uint8_t *b = bundle(&size, 1, NULL);
	f = fopen(bpath, "wb");
	fwrite(b, 1, size, f);
	fclose(f);
	free(b);
	const char *mixed[] = { bpath, paths[NPROC - 1] };
	r = nt_reader_open_many(mixed, 2, &err);
	assert_msg(r != NULL, "%s", err.message);
	assert_int_equal(nt_reader_section_count(r), NPROC + 1);
	assert_int_equal(nt_reader_section_at(r, NPROC)->pid, pids[NPROC - 1]);
	assert_string_equal(nt_reader_section_at(r, NPROC)->source, paths[NPROC - 1]);
	m = visit(r, NT_ORDER_TIME);
	assert_int_equal(m.disorder, 0);
	uint64_t sum_sections = 0;
	for (int i = 0; i <= NPROC; i++)
		sum_sections += m.per_section[i];
	assert_int_equal(m.events, sum_sections);
	assert_int_equal(m.per_section[NPROC], made[NPROC - 1]);
	nt_reader_close(r);
	/* One path to a bundle opens as nt_reader_open() does. */
	const char *one[] = { bpath };
	r = nt_reader_open_many(one, 1, &err);
	assert_non_null(r);
	assert_int_equal(nt_reader_section_count(r), NPROC);
	nt_reader_close(r);
	/* Missing paths fail the open, naming them. */
	const char *missing[] = { paths[0], "/nonexistent/x.ntrace" };
	assert_null(nt_reader_open_many(missing, 2, &err));
	assert_non_null(strstr(err.message, "/nonexistent/x.ntrace"));
	assert_null(nt_reader_open_many(NULL, 1, &err));
	assert_null(nt_reader_open_many(one, 0, &err));
	unlink(bpath);
	unlink(empty);
}

/* A bundle of the finished processes' archives only (record streams, no arena), the
 * first one with a byte of its first chunk changed when `damage`. */
static uint8_t *stream_bundle(size_t *size, int damage)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, size);
	bw_preamble(f, 1);
	const int which[] = { 0, 3 };
	for (int k = 0; k < 2; k++) {
		int i = which[k];
		uint8_t *copy = malloc(arch_size[i]);
		memcpy(copy, arch[i], arch_size[i]);
		if (damage && k == 0) {
			/* the first event's chunk (a CompressedChunk): a byte of its zstd frame */
			nt_reader *one = nt_reader_open_memory(copy, arch_size[i], "one", NULL);
			assert_non_null(one);
			nt_reader_cursor *c = nt_reader_cursor_open(one, NULL, NULL, NT_ORDER_STREAM,
								    NT_ON_CORRUPT_SKIP);
			const nt_reader_event *ev;
			assert_int_equal(nt_reader_cursor_next(c, &ev), 1);
			uint64_t at = ev->offset + sizeof(nt_zchunk_record) + 8;
			assert_int_equal(copy[ev->offset], NT_KIND_ZCHUNK);
			nt_reader_cursor_close(c);
			nt_reader_close(one);
			assert_true(at < arch_size[i]);
			copy[at] ^= 0x5a;
		}
		bw_section s = { copy, arch_size[i], NT_SECTION_FINISHED, NT_MODE_ONESHOT,
				 (uint32_t)pids[i], (uint32_t)k + 1, names[i], "", 0 };
		bw_section_write(f, &s);
		free(copy);
	}
	bw_end(f, NT_SECTION_FINISHED, 2, "");
	fclose(f);
	return (uint8_t *)buf;
}

/* nt_reader_count_records after a stream-order visit: a visit that met no damage keeps the
 * count it made as it decompressed the chunks (so --stats decompresses each once), and it
 * must be exactly the walk's; one that met damage keeps none, and the walk answers. Both
 * for one archive and a bundle, and never changed by a time-order visit. */
static void check_count_after_visits(const uint8_t *data, size_t size, int damaged)
{
	uint64_t walked[256], kept[256];
	for (int ahead = 0; ahead < 2; ahead++) { /* chunks decompressed by the visit, a helper */
		nt_reader *r = nt_reader_open_memory(data, size, "count", NULL);
		assert_non_null(r);
		nt_reader_count_records(r, walked);
		assert_int_equal(nt_reader_set_decompress_ahead(r, ahead ? 2 : NT_READER_AHEAD_OFF), 0);
		merge_check m = visit(r, NT_ORDER_STREAM);
		assert_int_equal(m.errors != 0, damaged);
		nt_reader_count_records(r, kept);
		assert_memory_equal(walked, kept, sizeof(kept));
		nt_reader_close(r);
	}
	nt_reader *r = nt_reader_open_memory(data, size, "count", NULL);
	assert_non_null(r);
	nt_reader_count_records(r, walked);
	merge_check t = visit(r, NT_ORDER_TIME);
	merge_check m = visit(r, NT_ORDER_STREAM);
	assert_int_equal(m.errors != 0, damaged);
	assert_int_equal(t.errors != 0, damaged);
	nt_reader_count_records(r, kept);
	assert_memory_equal(walked, kept, sizeof(kept));
	nt_reader_count_records(r, kept); /* asked again: the same */
	assert_memory_equal(walked, kept, sizeof(kept));
	nt_reader_close(r);
	/* a fresh reader's walk: the same again */
	r = nt_reader_open_memory(data, size, "count", NULL);
	nt_reader_count_records(r, kept);
	assert_memory_equal(walked, kept, sizeof(kept));
	nt_reader_close(r);
}

static void test_count_kept_by_a_clean_visit(void **state)
{
	(void)state;
	check_count_after_visits(arch[0], arch_size[0], 0);
	size_t size;
	uint8_t *b = stream_bundle(&size, 0);
	check_count_after_visits(b, size, 0);
	uint64_t counts[256];
	nt_reader *r = nt_reader_open_memory(b, size, "count", NULL);
	nt_reader_count_records(r, counts);
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	/* what the count is made of: every chunk, compressed ones both as themselves and as
	 * the chunks they hold, the durable records */
	assert_int_equal(counts[NT_KIND_CHUNK], sum.chunks);
	assert_true(counts[NT_KIND_ZCHUNK] > 0);
	assert_true(counts[NT_KIND_STRING] >= sum.strings && sum.strings > 0);
	nt_reader_close(r);
	free(b);
	b = stream_bundle(&size, 1);
	check_count_after_visits(b, size, 1);
	free(b);
	b = bundle(&size, 1, NULL); /* arena sections: no count is kept, the walk answers */
	check_count_after_visits(b, size, 0);
	free(b);
}

/* A plain archive is one section that describes itself. */
static void test_plain_is_one_section(void **state)
{
	(void)state;
	nt_reader *r = nt_reader_open(paths[0], NULL);
	assert_non_null(r);
	assert_int_equal(nt_reader_section_count(r), 1);
	const nt_reader_section *s = nt_reader_section_at(r, 0);
	assert_ptr_equal(s->reader, r);
	assert_int_equal(s->pid, pids[0]);
	assert_int_equal(s->end_state, 0);
	assert_int_equal(nt_reader_problem_count(r), 0);
	assert_null(nt_reader_problem_at(r, 0, NULL));
	for (uint32_t i = 0; i < nt_reader_thread_count(r); i++)
		assert_int_equal(nt_reader_thread_at(r, i)->section, 0);
	nt_reader_close(r);
	assert_int_equal(nt_reader_section_count(NULL), 0);
	assert_null(nt_reader_section_at(NULL, 0));
}

/* A saved stream that defines a thread the arena's durable region does not have, and a
 * chunk of it: the reader's per-thread "covered" table was sized by the arena's threads and
 * written past its end (found by test_bit_flips under TSan). Now it grows, and the events
 * are read. */
static void test_stream_defines_a_later_thread(void **state)
{
	(void)state;
	nt_reader *plain = nt_reader_open_memory(arch[2], arch_size[2], "streaming", NULL);
	assert_non_null(plain);
	uint64_t so = nt_reader_info(plain)->stream_offset;
	uint32_t limit = nt_reader_thread_index_limit(plain);
	nt_reader_close(plain);
	assert_true(so != 0 && so < arch_size[2]);
	uint8_t *a = malloc(arch_size[2]);
	memcpy(a, arch[2], arch_size[2]);
	uint32_t later = limit + 40, threads = 0, chunks = 0;
	for (uint64_t off = so; off + 8 <= arch_size[2];) {
		uint64_t size;
		if (nt_top_record_frame(a, arch_size[2], off, &size) !=
		    NT_FRAME_OK)
			break;
		if (a[off] == NT_KIND_THREAD && threads++ == 0)
			((nt_thread_record *)(void *)(a + off))->index = later;
		else if (a[off] == NT_KIND_CHUNK && threads > 0 && chunks++ == 0)
			((nt_chunk_header *)(void *)(a + off))->thread = later;
		off += size;
	}
	assert_true(threads > 0 && chunks > 0);
	nt_reader *r = nt_reader_open_memory(a, arch_size[2], "later-thread", NULL);
	assert_non_null(r);
	assert_non_null(nt_reader_thread_by_index(r, later));
	merge_check m = visit(r, NT_ORDER_TIME);
	assert_true(m.per_section[0] > 0);
	nt_reader_close(r);
	free(a);
}


/* A section's durable records with each index moved to the top of its field: every string,
 * call site and thread still defined once, at 65,535 - i and 2^20 - i. */
static void indices_at_their_limits(uint8_t *a, size_t n)
{
	size_t off = ((size_t)(a[0] | a[1] << 8 | a[2] << 16) + 4 + 7) & ~(size_t)7;
	while (off + 8 <= n) {
		uint32_t size = a[off + 1] ? a[off + 1] * 8u : nt_load_le32(a + off + 4);
		if (size < 8 || size > n - off)
			break;
		if (a[off] == NT_KIND_STRING) {
			nt_string_record *s = (nt_string_record *)(void *)(a + off);
			s->index = 65535u - s->index;
		} else if (a[off] == NT_KIND_CALLSITE) {
			nt_callsite_record *cs = (nt_callsite_record *)(void *)(a + off);
			cs->index = (uint16_t)(65535u - cs->index);
		} else if (a[off] == NT_KIND_THREAD) {
			nt_thread_record *t = (nt_thread_record *)(void *)(a + off);
			t->index = (1u << 20) - t->index;
		}
		off += size;
	}
}

/* A hostile bundle of small sections, each naming indices at the top of their fields: the
 * tables by index reach those indices, and their untouched entries must stay untouched
 * pages. Packing each section copied its tables whole (these 8 sections of 2,784 bytes
 * grew the reader by 270 MB; a 193 KB bundle of 200 such sections took trace-dump 6.5 GB
 * and 17 s); such sections now stay unpacked, and every table that large is allocated
 * fresh. */
static void test_indices_at_their_limits_cost_address_space(void **state)
{
	(void)state;
	enum { SECTIONS = 8 };
	uint8_t *copy = malloc(arch_size[0]);
	assert_non_null(copy);
	memcpy(copy, arch[0], arch_size[0]);
	indices_at_their_limits(copy, arch_size[0]);
	size_t size;
	char *buf = copies_bundle(SECTIONS, copy, &size);
	free(copy);
	const char *perturb = getenv("MALLOC_PERTURB_");
	mallopt(M_PERTURB, 0);
	long before = rss_anon_kib();
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(buf, size, "limits.ntbundle", &err);
	assert_msg(r != NULL, "%s", err.message);
	assert_int_equal(nt_reader_section_count(r), SECTIONS);
	for (int i = 0; i < SECTIONS; i++) {
		const nt_reader *s = nt_reader_section_at(r, (uint32_t)i)->reader;
		assert_non_null(s);
		assert_int_equal(nt_reader_thread_index_limit(s), 1u << 20);
	}
	merge_check m = visit(r, NT_ORDER_TIME);
	assert_true(m.errors > 0); /* their events name threads and call sites no longer defined */
	long grown = rss_anon_kib() - before;
	assert_msg(!NT_PLAIN_ALLOCATOR || (before > 0 && grown < 16 * 1024),
		   "%d sections of %zu bytes: the reader grew by %ld KiB", SECTIONS, arch_size[0],
		   grown);
	nt_reader_close(r);
	mallopt(M_PERTURB, perturb != NULL ? atoi(perturb) : 0);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sections_in_time_order),
		cmocka_unit_test(test_damaged_section),
		cmocka_unit_test(test_cut_at_every_byte),
		cmocka_unit_test(test_lying_frames),
		cmocka_unit_test(test_bit_flips),
		cmocka_unit_test(test_open_many),
		cmocka_unit_test(test_plain_is_one_section),
		cmocka_unit_test(test_count_kept_by_a_clean_visit),
		cmocka_unit_test(test_stream_defines_a_later_thread),
		cmocka_unit_test(test_indices_at_their_limits_cost_address_space),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
