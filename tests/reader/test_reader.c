/*
 * test_reader.c - the reader treats archives as untrusted: truncation at every byte, bit
 * flips everywhere, garbage and damaged references are reported with an offset and never
 * read out of bounds (run under ASan in the suite). Each holds for the archive as recorded
 * uncompressed and for the same archive with compressed chunks (CompressedChunk records).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_trace2.h>
#include "tests/support/nt_test_util.h"
#include "format/nt_unaligned.h"
#include "tests/support/nt_zchunk_test.h"

/* The archive under test: variants[0] uncompressed, variants[1] its chunks compressed. */
static uint8_t *archive;
static size_t archive_size;
static size_t archive_events;
static struct {
	uint8_t *data;
	size_t size;
} variants[2];

static void use_variant(int v)
{
	archive = variants[v].data;
	archive_size = variants[v].size;
}

static void *second_thread(void *arg)
{
	NT_T2_THREAD_START("second");
	for (int i = 0; i < 40; i++) {
		NT_BEGIN("t2", "work", NT_I32("i", i));
		NT_END("t2", "work");
		if (i % 10 == 0) /* more arguments than the time merge's room per thread */
			NT_INSTANT("t2", "wide", NT_I64("a0", i), NT_I64("a1", i + 1),
				   NT_I64("a2", i + 2), NT_I64("a3", i + 3), NT_I64("a4", i + 4),
				   NT_I64("a5", i + 5), NT_I64("a6", i + 6), NT_I64("a7", i + 7),
				   NT_I64("a8", i + 8), NT_I64("a9", i + 9), NT_I64("a10", i + 10),
				   NT_STR("a11", "the twelfth"));
	}
	NT_T2_THREAD_EXIT();
	return arg;
}

/* A small archive with two threads, arguments of every type, Trace2 messages (which the
 * Trace2 renderers get to see damaged too) and several chunks. */
static int make_archive(void **state)
{
	(void)state;
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = 64 * 1024;
	cfg.chunk_size = 4096;
	cfg.compression_level = NT_COMPRESSION_OFF;
	if (nt_start(&cfg) != NT_OK)
		return -1;
	const char *argv[] = { "test_reader", "--flag", "a b", NULL };
	NT_T2_INITIALIZE("test");
	NT_T2_CMD_START(argv);
	for (int i = 0; i < 10; i++) {
		NT_T2_REGION_ENTER("t1", "region", i % 2 ? 1 : -1);
		NT_T2_DATA_INTMAX("t1", -1, "i", i);
		NT_T2_REGION_LEAVE("t1", "region", i % 2 ? 1 : -1);
	}
	pthread_t th;
	pthread_create(&th, NULL, second_thread, NULL);
	for (int i = 0; i < 60; i++) {
		NT_INSTANT("t1", "tick", NT_I64("i", i), NT_U64("u", 1ull << 35), NT_F64("d", i * 0.5),
			   NT_BOOL("b", i & 1), NT_PTR("p", &cfg), NT_STR("s", "a string value"));
		NT_COMPLETE("t1", "done", nt_now());
	}
	pthread_join(th, NULL);
	char path[256];
	test_tmp_path(path, sizeof(path), "reader");
	if (nt_finish(path) != NT_OK)
		return -1;
	FILE *f = fopen(path, "rb");
	struct stat st;
	stat(path, &st);
	archive_size = (size_t)st.st_size;
	archive = malloc(archive_size);
	if (fread(archive, 1, archive_size, f) != archive_size)
		return -1;
	fclose(f);
	unlink(path);
	/* Trace2: version, start, cmd_ancestry, 3 x 10 region messages, thread start/exit. */
	archive_events = 60 * 2 + 40 * 2 + 4 + 3 + 30 + 2;
	variants[0].data = archive;
	variants[0].size = archive_size;
	size_t zchunks = 0;
	variants[1].data = nt_test_compress_archive(archive, archive_size, 3, &variants[1].size,
						    &zchunks);
	if (variants[1].data == NULL || zchunks == 0)
		return -1;
	return 0;
}

static int free_archive(void **state)
{
	(void)state;
	free(variants[0].data);
	free(variants[1].data);
	return 0;
}

typedef struct counts {
	uint64_t events, errors;
} counts;

static int count_event(void *ctx, const nt_reader_event *e)
{
	counts *c = ctx;
	c->events++;
	/* Touch every string the reader hands out: ASan catches any that are out of bounds. */
	size_t n = strlen(e->category) + strlen(e->name) + strlen(e->file) + strlen(e->thread->name);
	for (uint32_t i = 0; i < e->arg_count; i++) {
		n += strlen(e->args[i].name);
		if (e->args[i].type == NT_ARG_STRING)
			for (uint32_t k = 0; k < e->args[i].value.str.len; k++)
				n += (unsigned char)e->args[i].value.str.ptr[k];
	}
	return n == 0; /* never true; keeps the loop from being optimised away */
}

static void count_error(void *ctx, uint64_t off, const char *msg)
{
	counts *c = ctx;
	c->errors++;
	assert_true(off <= archive_size);
	assert_true(strlen(msg) > 0);
}

/* Open + visit in all four (order, policy) combinations; returns the counts of the first. */
static counts read_all_ways(const uint8_t *data, size_t size, int *opened)
{
	counts first = { 0, 0 };
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "mem", &err);
	*opened = r != NULL;
	if (r == NULL) {
		assert_non_null(strstr(err.message, "mem: "));
		return first;
	}
	for (int order = 0; order < 2; order++) {
		for (int policy = 0; policy < 2; policy++) {
			counts c = { 0, 0 };
			nt_reader_callbacks cb = { .on_event = count_event, .on_error = count_error };
			int rc = nt_reader_visit(r, &cb, &c, (nt_order)order, (nt_corrupt_policy)policy);
			assert_true(rc == 0 || rc == -1);
			if (rc == -1)
				assert_true(c.errors > 0);
			if (order == 0 && policy == 1)
				first = c;
		}
	}
	nt_reader_close(r);
	return first;
}

static void intact_archive_reads_fully(void **state)
{
	(void)state;
	for (int v = 0; v < 2; v++) {
		use_variant(v);
		int opened;
	counts c = read_all_ways(archive, archive_size, &opened);
	assert_true(opened);
	assert_int_equal(c.errors, 0);
	assert_int_equal(c.events, archive_events);
	}
	use_variant(0);
}

static void truncation_at_every_byte(void **state)
{
	(void)state;
	for (int v = 0; v < 2; v++)
	for (size_t len = 0; len < variants[v].size; len++) {
		use_variant(v);
		uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees any overread */
		memcpy(copy, archive, len);
		int opened;
		counts c = read_all_ways(copy, len, &opened);
		assert_true(c.events <= archive_events);
		if (opened && len % 8 != 0)
			assert_true(c.errors > 0); /* a partial record is always reported */
		free(copy);
	}
	use_variant(0);
}

/* The renderers face the same damage, in both orders and both policies. */
static void render_all_ways(const uint8_t *data, size_t size, FILE *sink)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "mem", &err);
	if (r == NULL)
		return;
	for (int order = 0; order < 2; order++) {
		nt_render_options opt;
		nt_render_options_init(&opt);
		opt.order = (nt_order)order;
		opt.policy = order ? NT_ON_CORRUPT_SKIP : NT_ON_CORRUPT_STOP;
		nt_render_text(r, sink, &opt);
		nt_render_chrome(r, sink, &opt);
		nt_render_stats(r, sink, &opt);
		nt_trace2_options t2;
		nt_trace2_options_init(&t2);
		t2.nesting = 1;
		t2.policy = opt.policy;
		for (int f = order; f < 3; f += 2) { /* each format once over the two passes */
			t2.format = (nt_trace2_format)f;
			nt_render_trace2(&r, 1, sink, &t2);
		}
	}
	nt_reader_close(r);
}

static void bit_flips_in(int v);

static void bit_flips_everywhere(void **state)
{
	(void)state;
	bit_flips_in(0);
	bit_flips_in(1);
	use_variant(0);
}

static void bit_flips_in(int v)
{
	use_variant(v);
	FILE *sink = fopen("/dev/null", "w");
	assert_non_null(sink);
	uint8_t *copy = malloc(archive_size);
	unsigned seed = 12345;
	for (size_t pos = 0; pos < archive_size; pos++) {
		for (int rep = 0; rep < 2; rep++) {
			memcpy(copy, archive, archive_size);
			seed = seed * 1103515245u + 12345u;
			copy[pos] ^= (uint8_t)(1u << ((seed >> 16) % 8));
			if (rep == 1) { /* and a random word elsewhere */
				size_t w = ((seed >> 8) % (archive_size / 8)) * 8;
				memset(copy + w, (int)(seed & 0xff), 8);
			}
			int opened;
			read_all_ways(copy, archive_size, &opened);
			if (pos % 3 == 0)
				render_all_ways(copy, archive_size, sink);
		}
	}
	free(copy);
	fclose(sink);
}

static void garbage_and_empty_fail_to_open(void **state)
{
	(void)state;
	nt_reader_error err;
	uint8_t junk[4096];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	assert_null(nt_reader_open_memory(junk, sizeof(junk), "junk", &err));
	assert_non_null(strstr(err.message, "junk: "));
	assert_null(nt_reader_open_memory(junk, 0, "empty", &err));
	assert_non_null(strstr(err.message, "empty"));
	assert_null(nt_reader_open("/nonexistent/file.ntrace", &err));
	assert_non_null(strstr(err.message, "/nonexistent/file.ntrace"));
	assert_non_null(strstr(err.message, "No such file"));
	assert_null(nt_reader_open("/tmp", &err));
	assert_non_null(strstr(err.message, "directory"));
	assert_null(nt_reader_open(NULL, &err));

	if (archive_size < 64)
		fail_msg("the test archive is only %zu bytes", archive_size);
	uint8_t *copy = malloc(archive_size);
	memcpy(copy, archive, archive_size);
	for (int i = 8; i < 12; i++) /* not memcpy: GCC 12 + ASan warns falsely on it */
		copy[i] = 'X';
	assert_null(nt_reader_open_memory(copy, archive_size, "ident", &err));
	assert_non_null(strstr(err.message, "file identifier"));
	memcpy(copy, archive, archive_size);
	copy[0] = 0xff, copy[1] = 0xff, copy[2] = 0xff, copy[3] = 0x7f;
	assert_null(nt_reader_open_memory(copy, archive_size, "prefix", &err));
	assert_non_null(strstr(err.message, "size prefix"));
	free(copy);
}

/* The header decoder keeps the plan of the last vtable it checked (each thread's), so that a
 * bundle's thousands of headers laid out alike are checked once: a header with that vtable
 * but a smaller table, or a string offset out of the buffer, must still fail, and the next
 * good one still open. */
static void header_laid_out_like_the_last_is_still_checked(void **state)
{
	(void)state;
	nt_reader_error err;
	uint8_t *copy = malloc(archive_size);
	assert_non_null(copy);
	uint64_t table = 4 + (uint64_t)nt_load_le32(archive + 4);
	uint64_t vtable = table - (uint64_t)(int64_t)(int32_t)nt_load_le32(archive + table);
	uint16_t table_size = nt_load_le16(archive + vtable + 2);
	uint16_t producer_at = nt_load_le16(archive + vtable + 4 + 2 * 2); /* field 2 */
	assert_true(table_size > 8 && producer_at != 0);
	for (int round = 0; round < 2; round++) {
		nt_reader *r = nt_reader_open_memory(archive, archive_size, "good", &err);
		if (r == NULL)
			fail_msg("%s", err.message);
		nt_reader_close(r);

		memcpy(copy, archive, archive_size);
		copy[vtable + 2] = 4, copy[vtable + 3] = 0; /* the same vtable, a 4-byte table */
		assert_null(nt_reader_open_memory(copy, archive_size, "small table", &err));
		assert_non_null(strstr(err.message, "small table: header field out of bounds"));

		memcpy(copy, archive, archive_size);
		uint64_t at = table + producer_at; /* the same layout, the string past the end */
		copy[at] = copy[at + 1] = copy[at + 2] = 0xff, copy[at + 3] = 0x0f;
		assert_null(nt_reader_open_memory(copy, archive_size, "far string", &err));
		assert_non_null(strstr(err.message, "far string: header string out of bounds"));
	}
	free(copy);
}

/* Offset of the first record of `kind` at top level. */
static size_t find_top(uint8_t kind)
{
	size_t off = ((size_t)(archive[0] | archive[1] << 8 | archive[2] << 16) + 4 + 7) & ~(size_t)7;
	while (off + 8 <= archive_size) {
		if (archive[off] == kind)
			return off;
		uint32_t size = archive[off + 1] ? archive[off + 1] * 8u : nt_load_le32(archive + off + 4);
		off += size;
	}
	return 0;
}

static void damaged_references_are_reported_with_offsets(void **state)
{
	(void)state;
	uint8_t *copy = malloc(archive_size);
	memcpy(copy, archive, archive_size);
	size_t chunk = find_top(NT_KIND_CHUNK);
	assert_true(chunk != 0);
	/* First event of the first chunk: point it at a call site that does not exist. */
	size_t ev = chunk + sizeof(nt_chunk_header);
	copy[ev + 2] = 0xff, copy[ev + 3] = 0xfe;

	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(copy, archive_size, "mem", &err);
	assert_non_null(r);
	test_trace t;
	memset(&t, 0, sizeof(t));
	nt_reader_callbacks cb = { .on_event = test_collect, .on_error = test_error };
	assert_int_equal(nt_reader_visit(r, &cb, &t, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP), 0);
	assert_int_equal(t.errors, 1);
	char want[64];
	snprintf(want, sizeof(want), "byte %zu: ", ev);
	assert_non_null(strstr(t.first_error, want));
	assert_non_null(strstr(t.first_error, "call site"));
	assert_int_equal(t.n, archive_events - 1); /* only the damaged record is lost */
	test_trace_free(&t);

	memset(&t, 0, sizeof(t));
	assert_int_equal(nt_reader_visit(r, &cb, &t, NT_ORDER_STREAM, NT_ON_CORRUPT_STOP), -1);
	assert_int_equal(t.n, 0); /* stopped at the first record */
	test_trace_free(&t);
	nt_reader_close(r);

	/* A chunk claiming a thread that was never defined is skipped whole, and named. */
	memcpy(copy, archive, archive_size);
	copy[chunk + 8] = 0x77;
	r = nt_reader_open_memory(copy, archive_size, "mem", &err);
	assert_non_null(r);
	memset(&t, 0, sizeof(t));
	assert_int_equal(nt_reader_visit(r, &cb, &t, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP), 0);
	assert_true(t.errors >= 1);
	assert_non_null(strstr(t.first_error, "thread"));
	assert_true(t.n < archive_events);
	test_trace_free(&t);
	nt_reader_close(r);
	free(copy);
}

/* Each event's thread is the one its index looks up, and its name fits the widest. */
static int check_event_lookups(void *ctx, const nt_reader_event *e)
{
	const nt_reader *r = ctx;
	assert_true(e->thread->index < nt_reader_thread_index_limit(r));
	assert_ptr_equal(nt_reader_thread_by_index(r, e->thread->index), e->thread);
	if (!nt_kind_is_t2(e->kind))
		assert_true(strlen(e->name) <= nt_reader_max_event_name_len(r));
	return 0;
}

/* The lookups renderers build on: the i-th thread and the thread of an index are O(1) and
 * agree, and the record counts agree with the open-time summary. */
static void thread_lookups_and_record_counts(void **state)
{
	(void)state;
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(archive, archive_size, "mem", &err);
	assert_non_null(r);
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	uint32_t n = nt_reader_thread_count(r), limit = nt_reader_thread_index_limit(r);
	assert_int_equal(n, sum.threads);
	assert_true(n >= 2);
	uint32_t last = 0;
	for (uint32_t i = 0; i < n; i++) {
		const nt_reader_thread *t = nt_reader_thread_at(r, i);
		assert_non_null(t);
		assert_true(t->index > last && t->index < limit);
		assert_ptr_equal(nt_reader_thread_by_index(r, t->index), t);
		last = t->index;
	}
	assert_int_equal(last + 1, limit);
	assert_null(nt_reader_thread_at(r, n));
	assert_null(nt_reader_thread_by_index(r, 0));
	assert_null(nt_reader_thread_by_index(r, limit));
	assert_null(nt_reader_thread_by_index(NULL, 1));
	assert_null(nt_reader_thread_at(NULL, 0));
	assert_int_equal(nt_reader_thread_count(NULL), 0);
	assert_int_equal(nt_reader_thread_index_limit(NULL), 0);
	nt_reader_callbacks cb = { .on_event = check_event_lookups };
	assert_int_equal(nt_reader_visit(r, &cb, r, NT_ORDER_TIME, NT_ON_CORRUPT_STOP), 0);

	uint64_t counts[256];
	memset(counts, 0xff, sizeof(counts));
	nt_reader_count_records(r, counts);
	assert_int_equal(counts[NT_KIND_CHUNK], sum.chunks);
	/* A record may define an index again (a thread that names itself later). */
	assert_true(counts[NT_KIND_STRING] >= sum.strings);
	assert_true(counts[NT_KIND_THREAD] >= sum.threads);
	assert_true(counts[NT_KIND_CALLSITE] >= sum.callsites);
	assert_int_equal(counts[NT_KIND_BEGIN] + counts[NT_KIND_INSTANT], 0);
	nt_reader_count_records(NULL, counts); /* ignored */
	nt_reader_close(r);
}

/* Sparse indices for the test archive's threads: the first one (defined first) gets the
 * highest index a thread record may have, the others small ones, so the file defines them
 * out of index order. */
#define FAR_INDEX ((1u << 20) - 1)
static uint32_t sparse_index(uint32_t i)
{
	return i == 1 ? FAR_INDEX : 1000 * i;
}

/* The reader rendered as Git's Trace2 `format`, in a malloc'd string. */
static char *render_trace2(nt_reader *r, nt_trace2_format format)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	assert_non_null(out);
	nt_trace2_options t2;
	nt_trace2_options_init(&t2);
	t2.format = format;
	assert_int_equal(nt_render_trace2(&r, 1, out, &t2), 0);
	fclose(out);
	return buf;
}

/* Thread indices far apart and defined out of index order (a hostile archive's, or a
 * writer's that numbered sparsely): the reader's thread table (built from the definitions,
 * not by walking every index below the highest) holds each thread once, in index order,
 * with its own name, pid and tid, and every event reads with its thread; the Trace2
 * renderers (whose model keeps a state per thread, found by index through a table of
 * places since it kept one for every index: 1 GiB for this archive) print what they print
 * for the archive as recorded. */
static void sparse_thread_indices_out_of_order(void **state)
{
	(void)state;
	nt_reader *orig = nt_reader_open_memory(archive, archive_size, "orig", NULL);
	assert_non_null(orig);
	uint32_t n = nt_reader_thread_count(orig);
	assert_true(n >= 2 && nt_reader_thread_index_limit(orig) < 1000);
	uint8_t *copy = malloc(archive_size);
	memcpy(copy, archive, archive_size);
	size_t off = ((size_t)(copy[0] | copy[1] << 8 | copy[2] << 16) + 4 + 7) & ~(size_t)7;
	uint32_t records = 0;
	while (off + 8 <= archive_size) {
		if (copy[off] == NT_KIND_THREAD) {
			nt_thread_record *t = (nt_thread_record *)(void *)(copy + off);
			t->index = sparse_index(t->index);
			records++;
		} else if (copy[off] == NT_KIND_CHUNK) {
			nt_chunk_header *h = (nt_chunk_header *)(void *)(copy + off);
			h->thread = sparse_index(h->thread);
		}
		uint32_t size = copy[off + 1] ? copy[off + 1] * 8u : nt_load_le32(copy + off + 4);
		off += size;
	}
	assert_true(records >= n);
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(copy, archive_size, "sparse", &err);
	assert_non_null(r);
	assert_int_equal(nt_reader_thread_count(r), n);
	assert_int_equal(nt_reader_thread_index_limit(r), FAR_INDEX + 1);
	assert_null(nt_reader_thread_by_index(r, 1));
	uint32_t last = 0;
	for (uint32_t i = 0; i < n; i++) {
		const nt_reader_thread *t = nt_reader_thread_at(r, i);
		assert_non_null(t);
		assert_true(t->index > last);
		last = t->index;
		assert_ptr_equal(nt_reader_thread_by_index(r, t->index), t);
		const nt_reader_thread *o = nt_reader_thread_at(orig, i < n - 1 ? i + 1 : 0);
		assert_int_equal(t->index, sparse_index(o->index));
		assert_string_equal(t->name, o->name);
		assert_int_equal(t->pid, o->pid);
		assert_int_equal(t->tid, o->tid);
	}
	assert_int_equal(last, FAR_INDEX);
	test_trace tr;
	memset(&tr, 0, sizeof(tr));
	nt_reader_callbacks cb = { .on_event = check_event_lookups };
	assert_int_equal(nt_reader_visit(r, &cb, r, NT_ORDER_TIME, NT_ON_CORRUPT_STOP), 0);
	cb = (nt_reader_callbacks){ .on_event = test_collect, .on_error = test_error };
	assert_int_equal(nt_reader_visit(r, &cb, &tr, NT_ORDER_STREAM, NT_ON_CORRUPT_STOP), 0);
	assert_int_equal(tr.n, archive_events);
	assert_int_equal(tr.errors, 0);
	test_trace_free(&tr);
	for (int f = NT_TRACE2_NORMAL; f <= NT_TRACE2_EVENT; f++) {
		char *want = render_trace2(orig, (nt_trace2_format)f);
		char *got = render_trace2(r, (nt_trace2_format)f);
		assert_true(want[0] != '\0');
		assert_string_equal(got, want);
		free(want);
		free(got);
	}
	nt_reader_close(r);
	nt_reader_close(orig);
	free(copy);
}

typedef struct wide_seen {
	int n, bad;
} wide_seen;

static int check_wide(void *ctx, const nt_reader_event *e)
{
	wide_seen *w = ctx;
	if (strcmp(e->name, "wide") != 0)
		return 0;
	w->n++;
	int64_t first = e->arg_count == 12 ? e->args[0].value.i64 : -1;
	for (uint32_t k = 0; k < 11 && e->arg_count == 12; k++) {
		char name[8];
		snprintf(name, sizeof(name), "a%u", k);
		w->bad += e->args[k].value.i64 != first + k || strcmp(e->args[k].name, name) != 0;
	}
	w->bad += e->arg_count != 12 || first % 10 != 0 ||
		  strcmp(e->args[11].value.str.ptr, "the twelfth") != 0;
	return 0;
}

/* The time-ordered merge holds each thread's next event with room for a few arguments; an
 * event with more gets them all, in both orders and from compressed chunks too. */
static void events_with_many_arguments_in_every_order(void **state)
{
	(void)state;
	for (int v = 0; v < 2; v++) {
		for (int order = 0; order < 2; order++) {
			nt_reader_error err;
			nt_reader *r = nt_reader_open_memory(variants[v].data, variants[v].size, "mem",
							     &err);
			assert_non_null(r);
			wide_seen w = { 0, 0 };
			nt_reader_callbacks cb = { .on_event = check_wide };
			assert_int_equal(nt_reader_visit(r, &cb, &w, order ? NT_ORDER_TIME
									  : NT_ORDER_STREAM,
							 NT_ON_CORRUPT_STOP), 0);
			assert_int_equal(w.n, 4);
			assert_int_equal(w.bad, 0);
			nt_reader_close(r);
		}
	}
}

/* The renderers' options grow at their end: options filled by their init function render;
 * options never initialized (struct_size 0) or with a non-zero field this library does not
 * know render nothing and return -1; NULL render options are the defaults. */
static void render_options_struct_size_is_checked(void **state)
{
	(void)state;
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(archive, archive_size, "mem", &err);
	assert_non_null(r);
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	nt_render_options opt;
	nt_render_options_init(&opt);
	assert_int_equal(opt.struct_size, sizeof(opt));
	assert_int_equal(opt.order, NT_ORDER_TIME);
	assert_int_equal(nt_render_text(r, out, &opt), 0);
	assert_int_equal(nt_render_text(r, out, NULL), 0);
	fflush(out);
	size_t rendered = len;
	assert_true(rendered > 0);

	nt_render_options zero;
	memset(&zero, 0, sizeof(zero));
	assert_int_equal(nt_render_text(r, out, &zero), -1);
	assert_int_equal(nt_render_chrome(r, out, &zero), -1);
	assert_int_equal(nt_render_stats(r, out, &zero), -1);
	fflush(out);
	assert_int_equal(len, rendered); /* refused options wrote nothing */
	struct {
		nt_render_options opt;
		uint64_t newer_field;
	} big = { .newer_field = 0 };
	nt_render_options_init(&big.opt);
	big.opt.struct_size = sizeof(big);
	assert_int_equal(nt_render_stats(r, out, &big.opt), 0);
	fflush(out);
	rendered = len;
	big.newer_field = 7;
	assert_int_equal(nt_render_stats(r, out, &big.opt), -1);

	nt_trace2_options t2;
	nt_trace2_options_init(&t2);
	assert_int_equal(t2.struct_size, sizeof(t2));
	assert_int_equal(t2.brief, -1);
	assert_int_equal(t2.nesting, 2);
	assert_int_equal(nt_render_trace2(&r, 1, out, &t2), 0);
	fflush(out);
	rendered = len;
	t2.struct_size = 0;
	assert_int_equal(nt_render_trace2(&r, 1, out, &t2), -1);
	fclose(out);
	assert_int_equal(len, rendered); /* refused options wrote nothing */
	free(buf);
	nt_reader_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(intact_archive_reads_fully),
		cmocka_unit_test(truncation_at_every_byte),
		cmocka_unit_test(bit_flips_everywhere),
		cmocka_unit_test(garbage_and_empty_fail_to_open),
		cmocka_unit_test(header_laid_out_like_the_last_is_still_checked),
		cmocka_unit_test(damaged_references_are_reported_with_offsets),
		cmocka_unit_test(thread_lookups_and_record_counts),
		cmocka_unit_test(sparse_thread_indices_out_of_order),
		cmocka_unit_test(events_with_many_arguments_in_every_order),
		cmocka_unit_test(render_options_struct_size_is_checked),
	};
	return cmocka_run_group_tests(tests, make_archive, free_archive);
}
