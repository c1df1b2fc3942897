/*
 * test_zchunk.c - compressed archives (CompressedChunk records, format/nt_zchunk.h) end to
 * end: nt_finish() at levels off, 1, 3 and 19 saves the same events, every renderer prints
 * the same bytes for an archive and its compressed copies, streaming mode compresses its
 * saved stream (at full rate within 1.2x the bytes of nt_finish()'s archive of the same
 * events) while a killed file-backed arena stays uncompressed and readable, the level's
 * configuration (nt_config, NANOTRACE_COMPRESSION) is checked, and hostile compressed chunks
 * (a lying size, a cut, garbage or wrong-sized frame, trailing bytes, a lying event count)
 * are each reported at the chunk's offset with its events counted as lost, never a crash
 * (ASan in the suite); a chunk under 4 KiB of records is stored with raw literals.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_frameHeaderSize */
#include <zstd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_trace2.h>
#include "format/nt_archive_header_encode.h"
#include "format/nt_lanes.h"
#include "tests/support/nt_cmocka.h"
#include "tests/support/nt_test_util.h"
#include "tests/support/nt_finish_test.h"
#include "tests/support/nt_zchunk_test.h"

#define EVENTS_PER_THREAD 3000

/* arg non-NULL: paced, 1 ms asleep every 50 iterations, a rate a compressing streaming
 * saver keeps up with in a small arena (writers that outrun it get pieces stored as they
 * are: nt_arena_saver.c, writers_outrun). */
static void *worker(void *arg)
{
	for (int i = 0; i < EVENTS_PER_THREAD / 3; i++) {
		if (arg != NULL && i % 50 == 0)
			usleep(1000);
		NT_BEGIN("z", "work", NT_I64("i", i), NT_I64("j", 2 * i));
		NT_INSTANT("z", "tick", NT_STR("s", "some text"));
		NT_END("z", "work");
	}
	return arg;
}

/* Records 2 threads x EVENTS_PER_THREAD events at `level` into a file; its bytes. */
static uint8_t *record(int level, int mode, size_t *size)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = mode == NT_MODE_STREAMING ? 256 * 1024 : 4u << 20;
	cfg.chunk_size = 16384;
	cfg.mode = mode;
	cfg.compression_level = level;
	/* Streaming: a file-backed session whose writers pause now and then (a non-NULL arg). */
	static int pause;
	void *arg = mode == NT_MODE_STREAMING ? &pause : NULL, *args[2] = { arg, arg };
	return test_record_threads(&cfg, "zchunk", mode == NT_MODE_STREAMING, 2, worker, args,
				   size);
}

static uint64_t compressed_chunks(const void *data, size_t size)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "mem", &err);
	assert_non_null(r);
	uint64_t z = 0, plain = 0;
	nt_reader_get_compression(r, &z, &plain);
	nt_reader_close(r);
	return z;
}

/* Events equal but for their times and offsets, thread by thread (the two workers make the
 * same events; which chunk of which thread comes first in the file varies). */
static void assert_same_events(const test_trace *a, const test_trace *b)
{
	assert_int_equal(a->n, b->n);
	for (uint32_t t = 0; t < 8; t++) {
		size_t i = 0, j = 0;
		for (;;) {
			while (i < a->n && a->ev[i].thread != t)
				i++;
			while (j < b->n && b->ev[j].thread != t)
				j++;
			if (i == a->n || j == b->n)
				break;
			const test_event *x = &a->ev[i++], *y = &b->ev[j++];
			assert_int_equal(x->kind, y->kind);
			assert_string_equal(x->name, y->name);
			assert_int_equal(x->nargs, y->nargs);
			for (uint32_t k = 0; k < x->nargs; k++)
				if (x->args[k].type == NT_ARG_INT64)
					assert_int_equal(x->args[k].value.i64, y->args[k].value.i64);
		}
		assert_true(i == a->n && j == b->n); /* both ran out of this thread together */
	}
}

static void finish_at_every_level_saves_the_same_events(void **state)
{
	(void)state;
	static const int levels[] = { NT_COMPRESSION_OFF, 1, 3, 19, -5 };
	test_trace base;
	memset(&base, 0, sizeof(base));
	size_t base_size = 0;
	for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
		size_t size;
		uint8_t *data = record(levels[l], NT_MODE_ONESHOT, &size);
		test_trace t;
		assert_int_equal(test_read_memory(data, size, NT_ORDER_STREAM, &t), 0);
		assert_int_equal(t.errors, 0);
		assert_int_equal(t.n, 2 * EVENTS_PER_THREAD);
		assert_int_equal(t.info.compression,
				 levels[l] == NT_COMPRESSION_OFF ? NT_CODEC_NONE : NT_ZCHUNK_CODEC);
		assert_int_equal(t.info.compression_level,
				 levels[l] == NT_COMPRESSION_OFF ? 0 : levels[l]);
		uint64_t z = compressed_chunks(data, size);
		if (l == 0) {
			base = t;
			base_size = size;
			assert_int_equal(z, 0);
		} else {
			assert_same_events(&base, &t);
			assert_true(z > 0);
			/* Compact records (format 2.0) leave zstd less to find than the 8-byte ones
			 * did (3x and more then): at least half, at every level. */
			assert_msg(size * 2 < base_size, "level %d: %zu bytes, uncompressed %zu",
				   levels[l], size, base_size);
			printf("level %d: %zu bytes (uncompressed %zu, %.2f bytes per event)\n",
			       levels[l], size, base_size, (double)size / (2.0 * EVENTS_PER_THREAD));
			test_trace_free(&t);
		}
		free(data);
	}
	test_trace_free(&base);
}

/* Everything a renderer prints for `data`, into a malloc'd string. */
static char *render_everything(const void *data, size_t size)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "mem", &err);
	assert_non_null(r);
	for (int order = 0; order < 2; order++) {
		nt_render_options opt;
		nt_render_options_init(&opt);
		opt.order = (nt_order)order;
		assert_int_equal(nt_render_text(r, out, &opt), 0);
		assert_int_equal(nt_render_chrome(r, out, &opt), 0);
	}
	nt_trace2_options t2;
	nt_trace2_options_init(&t2);
	for (int f = 0; f < 3; f++) {
		t2.format = (nt_trace2_format)f;
		nt_render_trace2(&r, 1, out, &t2);
	}
	nt_reader_close(r);
	fclose(out);
	return buf;
}

static void renderers_print_the_same_for_compressed_copies(void **state)
{
	(void)state;
	size_t size;
	uint8_t *plain = record(NT_COMPRESSION_OFF, NT_MODE_ONESHOT, &size);
	char *want = render_everything(plain, size);
	assert_true(strlen(want) > 100000);
	static const int levels[] = { 0, 1, 3, 19 };
	for (size_t l = 0; l < 4; l++) {
		void *z = NULL;
		size_t zsize = 0;
		nt_reader_error err;
		assert_int_equal(nt_archive_compress(plain, size, levels[l], &z, &zsize, &err), 0);
		assert_int_equal(compressed_chunks(z, zsize) > 0, levels[l] != 0);
		char *got = render_everything(z, zsize);
		assert_string_equal(got, want);
		/* --stats: the same events, and the compression stated. */
		char *st = NULL;
		size_t stlen = 0;
		FILE *out = open_memstream(&st, &stlen);
		nt_reader *r = nt_reader_open_memory(z, zsize, "mem", &err);
		nt_render_options opt;
		nt_render_options_init(&opt);
		assert_int_equal(nt_render_stats(r, out, &opt), 0);
		nt_reader_close(r);
		fclose(out);
		assert_non_null(strstr(st, "events: 6000\n"));
		assert_non_null(strstr(st, "compression: "));
		free(st);
		free(got);
		free(z);
	}
	nt_reader_error err;
	void *z;
	size_t zsize;
	assert_int_equal(nt_archive_compress(plain, size, 23, &z, &zsize, &err), -1);
	assert_int_equal(nt_archive_compress(plain, 40, 1, &z, &zsize, &err), -1);
	free(want);
	free(plain);
}

static void streaming_saves_compressed_chunks(void **state)
{
	(void)state;
	size_t size;
	uint8_t *data = record(3, NT_MODE_STREAMING, &size);
	test_trace t;
	assert_int_equal(test_read_memory(data, size, NT_ORDER_TIME, &t), 0);
	assert_int_equal(t.errors, 0);
	/* Read back or dropped (the saver starved on a loaded machine), as the header says; the
	 * gaps are some of the dropped (a thread's last ones have no later event to say so). */
	assert_int_equal(t.n + t.info.events_dropped, 2 * EVENTS_PER_THREAD);
	assert_true(t.gap_events <= t.info.events_dropped);
	assert_true(compressed_chunks(data, size) > 0);
	test_trace_free(&t);
	free(data);
}

/* Full rate, FULL_RATE_EVENTS per thread: the same events as worker(), without pauses. */
#define FULL_RATE_EVENTS 30000

static void *full_rate_worker(void *arg)
{
	for (int i = 0; i < FULL_RATE_EVENTS / 3; i++) {
		NT_BEGIN("z", "work", NT_I64("i", i), NT_I64("j", 2 * i));
		NT_INSTANT("z", "tick", NT_STR("s", "some text"));
		NT_END("z", "work");
	}
	return arg;
}

/* The bytes of an archive's records (chunks and durable region): the file less its header,
 * and less the arena a streaming file keeps as a hole. */
static uint64_t record_bytes(const void *data, size_t size, uint64_t *chunks, uint64_t *zchunks)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "mem", &err);
	assert_non_null(r);
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	nt_reader_get_compression(r, zchunks, NULL);
	nt_reader_close(r);
	*chunks = sum.chunks;
	return sum.chunk_bytes + sum.durable_bytes;
}

/* Issue 29: a streaming archive is compressed like nt_finish()'s. The same events, 2
 * threads at full rate, saved by the streaming saver and by nt_finish() at the default
 * level. The streaming arena holds every event and its slots are many times the chunks made,
 * so no writer can drop and no piece is ever far enough behind them to be stored as it is
 * (nt_arena_saver.c, writers_outrun), however slowly the saver runs: the pieces are
 * compressed, the records take at most 1.2x the oneshot archive's bytes, and the events
 * read back equal. */
static void streaming_archive_is_as_small_as_oneshot(void **state)
{
	(void)state;
	void *args[2] = { NULL, NULL };
	size_t one_size, str_size;
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = 4u << 20;
	uint8_t *one = test_record_threads(&cfg, "zsmall1", 0, 2, full_rate_worker, args, &one_size);
	nt_config_init(&cfg);
	cfg.mode = NT_MODE_STREAMING;
	cfg.buffer_size = 16u << 20;
	uint8_t *str = test_record_threads(&cfg, "zsmall2", 1, 2, full_rate_worker, args, &str_size);
	test_trace a, b;
	assert_int_equal(test_read_memory(one, one_size, NT_ORDER_STREAM, &a), 0);
	assert_int_equal(test_read_memory(str, str_size, NT_ORDER_STREAM, &b), 0);
	assert_int_equal(a.errors + b.errors, 0);
	assert_int_equal(a.n, 2 * FULL_RATE_EVENTS);
	assert_int_equal(b.info.events_dropped, 0);
	assert_int_equal(b.info.compression, NT_ZCHUNK_CODEC);
	assert_same_events(&a, &b);
	uint64_t one_chunks, one_z, str_chunks, str_z;
	uint64_t one_bytes = record_bytes(one, one_size, &one_chunks, &one_z);
	uint64_t str_bytes = record_bytes(str, str_size, &str_chunks, &str_z);
	printf("oneshot %" PRIu64 " record bytes in %" PRIu64 " chunks, streaming %" PRIu64
	       " in %" PRIu64 " pieces (%" PRIu64 " compressed)\n",
	       one_bytes, one_chunks, str_bytes, str_chunks, str_z);
	/* Each of oneshot's compressed chunks is in streaming's pieces, compressed: a chunk cut
	 * in pieces (the saver holds an open chunk's records only NT_SAVER_HOLD_MS) keeps at
	 * least one that compresses, though a few records alone may not. */
	assert_true(one_z > 0);
	assert_true(str_z >= one_z);
	assert_msg(str_bytes * 5 <= one_bytes * 6, "streaming %" PRIu64 " bytes, oneshot %" PRIu64,
		   str_bytes, one_bytes);
	test_trace_free(&a);
	test_trace_free(&b);
	free(one);
	free(str);
}

/* A file-backed arena killed while recording is the archive as it is: nothing compressed,
 * every published event there. */
static void killed_arena_stays_uncompressed(void **state)
{
	(void)state;
	char path[256];
	test_tmp_path(path, sizeof(path), "zkill");
	pid_t pid = fork();
	if (pid == 0) {
		nt_config cfg;
		nt_config_init(&cfg);
		cfg.path = path;
		cfg.compression_level = 19;
		if (nt_start(&cfg) != NT_OK)
			_exit(3);
		worker(NULL);
		raise(SIGKILL);
		_exit(4);
	}
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFSIGNALED(status));
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	assert_int_equal(t.errors, 0);
	assert_int_equal(t.n, EVENTS_PER_THREAD);
	nt_reader_error err;
	nt_reader *r = nt_reader_open(path, &err);
	assert_non_null(r);
	uint64_t z;
	nt_reader_get_compression(r, &z, NULL);
	assert_int_equal(z, 0);
	nt_reader_close(r);
	test_trace_free(&t);
	unlink(path);
}

/* NANOTRACE_COMPRESSION, and nt_config's field: what they accept, what they refuse. */
static void level_configuration(void **state)
{
	(void)state;
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.compression_level = 23;
	assert_int_equal(nt_start(&cfg), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "compression_level 23"));

	/* Garbage: one line on stderr naming it, and the default level. */
	char log[256];
	test_tmp_path(log, sizeof(log), "zlog");
	int saved = dup(2), fd = open(log, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	dup2(fd, 2);
	setenv("NANOTRACE_COMPRESSION", "fast please", 1);
	size_t size;
	uint8_t *data = record(0, NT_MODE_ONESHOT, &size);
	dup2(saved, 2);
	close(saved);
	close(fd);
	char line[512] = "";
	FILE *f = fopen(log, "r");
	assert_non_null(fgets(line, sizeof(line), f));
	assert_null(fgets(line + strlen(line), (int)(sizeof(line) - strlen(line)), f));
	fclose(f);
	unlink(log);
	assert_non_null(strstr(line, "NANOTRACE_COMPRESSION='fast please'"));
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "mem", &err);
	assert_int_equal(nt_reader_info(r)->compression_level, NT_COMPRESSION_DEFAULT);
	nt_reader_close(r);
	free(data);

	static const struct {
		const char *value;
		int level;
	} cases[] = { { "off", 0 }, { "0", 0 }, { "7", 7 }, { "-3", -3 } };
	for (size_t i = 0; i < 4; i++) {
		setenv("NANOTRACE_COMPRESSION", cases[i].value, 1);
		data = record(0, NT_MODE_ONESHOT, &size);
		r = nt_reader_open_memory(data, size, "mem", &err);
		assert_int_equal(nt_reader_info(r)->compression_level, cases[i].level);
		assert_int_equal(compressed_chunks(data, size) > 0, cases[i].level != 0);
		nt_reader_close(r);
		free(data);
	}
	/* The config's own level wins over the variable. */
	data = record(2, NT_MODE_ONESHOT, &size);
	r = nt_reader_open_memory(data, size, "mem", &err);
	assert_int_equal(nt_reader_info(r)->compression_level, 2);
	nt_reader_close(r);
	free(data);
	unsetenv("NANOTRACE_COMPRESSION");
}

/* ---- hostile compressed chunks ----------------------------------------------------------- */

static uint8_t *plain_archive, *zarchive;
static size_t plain_size, zsize, zoff; /* zoff: the first CompressedChunk */
static test_trace ztruth;              /* zarchive read intact */

static int make_archives(void **state)
{
	(void)state;
	plain_archive = record(NT_COMPRESSION_OFF, NT_MODE_ONESHOT, &plain_size);
	size_t n;
	zarchive = nt_test_compress_archive(plain_archive, plain_size, 3, &zsize, &n);
	if (zarchive == NULL || n == 0)
		return -1;
	for (zoff = nt_test_records_start(zarchive); zarchive[zoff] != NT_KIND_ZCHUNK;)
		zoff += nt_test_top_size(zarchive, zsize, zoff);
	return test_read_memory(zarchive, zsize, NT_ORDER_STREAM, &ztruth);
}

static int free_archives(void **state)
{
	(void)state;
	free(plain_archive);
	free(zarchive);
	test_trace_free(&ztruth);
	return 0;
}

/* zarchive with its first CompressedChunk's header replaced by *h and its frame by
 * frame[0 .. flen) (record size recomputed). */
static uint8_t *replace_zchunk(const nt_zchunk_record *h, const void *frame, size_t flen,
			       size_t *out_size)
{
	size_t old = nt_test_top_size(zarchive, zsize, zoff);
	size_t rec = (sizeof(*h) + flen + 7) & ~(size_t)7;
	*out_size = zsize - old + rec;
	uint8_t *out = calloc(1, *out_size);
	memcpy(out, zarchive, zoff);
	nt_zchunk_record z = *h;
	z.size_bytes = (uint32_t)rec;
	memcpy(out + zoff, &z, sizeof(z));
	memcpy(out + zoff + sizeof(z), frame, flen);
	memcpy(out + zoff + rec, zarchive + zoff + old, zsize - zoff - old);
	return out;
}

/* The first chunk's records, decompressed (what its frame holds). */
static uint8_t *first_chunk_records(size_t *len)
{
	nt_zchunk_decoder *d = nt_zchunk_decoder_new();
	uint8_t *buf = malloc(NT_MAX_ZCHUNK_BYTES);
	assert_null(nt_zchunk_decode(d, zarchive + zoff, nt_test_top_size(zarchive, zsize, zoff),
				     buf, NT_MAX_ZCHUNK_BYTES));
	nt_zchunk_decoder_free(d);
	assert_null(nt_zchunk_check_records(buf));
	nt_chunk_header *hb = (nt_chunk_header *)(void *)buf;
	hb->event_count++;
	assert_string_equal(nt_zchunk_check_records(buf), NT_ZCHUNK_COUNT_LIE);
	hb->event_count--;
	*len = ((nt_chunk_header *)(void *)buf)->size_bytes - sizeof(nt_chunk_header);
	memmove(buf, buf + sizeof(nt_chunk_header), *len);
	return buf;
}

/* A zstd frame of `len` bytes at `src`; content size written or not. */
static size_t make_frame(const void *src, size_t len, int content_size, uint8_t *dst, size_t cap)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size);
	size_t n = ZSTD_compress2(c, dst, cap, src, len);
	ZSTD_freeCCtx(c);
	assert_false(ZSTD_isError(n));
	return n;
}

/* Flips one bit of the frame, from its middle on, where zstd notices: a bit the decoder
 * never reads (a table's padding) changes nothing, and the content checksum covers only what
 * the frame decodes to. Which bits those are depends on the recorded times, so a fixed bit
 * would make the test pass or fail by the archive it happened to record. */
static void flip_a_bit_zstd_notices(uint8_t *frame, size_t len)
{
	size_t cap = 2 * NT_MAX_ZCHUNK_BYTES;
	void *out = malloc(cap);
	assert_non_null(out);
	size_t at = len / 2;
	for (;; at++) {
		assert_true(at < len);
		frame[at] ^= 0x10;
		if (ZSTD_isError(ZSTD_decompress(out, cap, frame, len)))
			break;
		frame[at] ^= 0x10;
	}
	free(out);
}

/* The damaged archive reads with exactly one error, at the chunk, naming `want`; the events
 * of the chunk are missing and counted in gaps (as many as its header claims), in both
 * orders; or, when `lost` is 0 (the chunk decompressed), all delivered. */
static void assert_damage(const uint8_t *data, size_t size, const char *want, int lost)
{
	const nt_zchunk_record *h = (const void *)(zarchive + zoff);
	for (int order = 0; order < 2; order++) {
		test_trace t;
		assert_int_equal(test_read_memory(data, size, (nt_order)order, &t), 0);
		assert_int_equal(t.errors, 1);
		char at[64];
		snprintf(at, sizeof(at), "byte %zu: ", zoff);
		assert_msg(strstr(t.first_error, at) && strstr(t.first_error, want),
			   "order %d: '%s', want '%s%s'", order, t.first_error, at, want);
		const nt_zchunk_record *dh = (const void *)(data + zoff);
		assert_int_equal(t.n, ztruth.n - (lost ? h->chunk.event_count : 0));
		assert_int_equal(t.gap_events, lost ? dh->chunk.event_count : 0);
		test_trace_free(&t);
	}
	/* Stop policy: the visit stops there. */
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "mem", &err);
	test_trace t;
	memset(&t, 0, sizeof(t));
	nt_reader_callbacks cb = { .on_event = test_collect, .on_error = test_error };
	assert_int_equal(nt_reader_visit(r, &cb, &t, NT_ORDER_STREAM, NT_ON_CORRUPT_STOP), -1);
	nt_reader_close(r);
	test_trace_free(&t);
}

static void assert_chunk_lost(const uint8_t *data, size_t size, const char *want)
{
	assert_damage(data, size, want, 1);
}

static void hostile_compressed_chunks_are_reported_and_counted(void **state)
{
	(void)state;
	const nt_zchunk_record *h0 = (const void *)(zarchive + zoff);
	const uint8_t *frame = zarchive + zoff + sizeof(*h0);
	const size_t flen = h0->compressed_bytes;
	size_t rlen, size;
	uint8_t *records = first_chunk_records(&rlen);
	uint8_t *tmp = malloc(2 * NT_MAX_ZCHUNK_BYTES), *bad;
	nt_zchunk_record h = *h0;

	h.chunk.size_bytes += 64; /* a lying decompressed size */
	bad = replace_zchunk(&h, frame, flen, &size);
	assert_chunk_lost(bad, size, "declares another size than its header");
	free(bad);
	h = *h0;
	h.chunk.size_bytes = NT_MAX_ZCHUNK_BYTES + 8; /* past the format's bound */
	bad = replace_zchunk(&h, frame, flen, &size);
	assert_chunk_lost(bad, size, "impossible chunk size");
	free(bad);

	h = *h0;
	h.compressed_bytes = (uint32_t)(flen - 16); /* a cut frame */
	bad = replace_zchunk(&h, frame, flen - 16, &size);
	assert_chunk_lost(bad, size, "compressed chunk");
	free(bad);

	h = *h0;
	for (size_t i = 0; i < flen; i++) /* garbage */
		tmp[i] = (uint8_t)(i * 37 + 11);
	bad = replace_zchunk(&h, tmp, flen, &size);
	assert_chunk_lost(bad, size, "no valid zstd frame");
	free(bad);

	memcpy(tmp, frame, flen); /* a bit flipped inside the frame: the checksum */
	flip_a_bit_zstd_notices(tmp, flen);
	bad = replace_zchunk(&h, tmp, flen, &size);
	assert_chunk_lost(bad, size, "compressed chunk");
	free(bad);

	size_t n = make_frame(records, rlen - 8, 1, tmp, 2 * NT_MAX_ZCHUNK_BYTES); /* fewer */
	h.compressed_bytes = (uint32_t)n;
	bad = replace_zchunk(&h, tmp, n, &size);
	assert_chunk_lost(bad, size, "declares another size than its header");
	free(bad);

	uint8_t *more = calloc(1, rlen + 64); /* more */
	memcpy(more, records, rlen);
	n = make_frame(more, rlen + 64, 1, tmp, 2 * NT_MAX_ZCHUNK_BYTES);
	h.compressed_bytes = (uint32_t)n;
	bad = replace_zchunk(&h, tmp, n, &size);
	assert_chunk_lost(bad, size, "declares another size than its header");
	free(bad);
	free(more);

	n = make_frame(records, rlen, 0, tmp, 2 * NT_MAX_ZCHUNK_BYTES); /* no size declared */
	h.compressed_bytes = (uint32_t)n;
	bad = replace_zchunk(&h, tmp, n, &size);
	assert_chunk_lost(bad, size, "declares another size than its header");
	free(bad);

	memcpy(tmp, frame, flen); /* trailing bytes after the frame */
	memset(tmp + flen, 0x5a, 16);
	h = *h0;
	h.compressed_bytes = (uint32_t)(flen + 16);
	bad = replace_zchunk(&h, tmp, flen + 16, &size);
	assert_chunk_lost(bad, size, "does not end where its length says");
	free(bad);

	h = *h0; /* header counts disagreeing with the records inside */
	h.chunk.event_count += 1;
	bad = replace_zchunk(&h, frame, flen, &size);
	assert_damage(bad, size, "event count disagrees", 0);
	free(bad);
	h.chunk.event_count -= 2;
	bad = replace_zchunk(&h, frame, flen, &size);
	for (int order = 0; order < 2; order++) {
		/* Fewer than the archive's header counts: by the chunks' own headers, one event is
		 * missing from the file (reported first, at its end), and the lie itself. */
		test_trace t;
		assert_int_equal(test_read_memory(bad, size, (nt_order)order, &t), 0);
		assert_int_equal(t.errors, 2);
		assert_msg(strstr(t.first_error, "archive is truncated") &&
				   strstr(t.first_error, "(1 missing)"),
			   "order %d: %s", order, t.first_error);
		assert_int_equal(t.n, ztruth.n);
		test_trace_free(&t);
	}
	free(bad);

	h = *h0; /* a codec this reader does not know: the header is not trusted at all */
	h.codec = 9;
	bad = replace_zchunk(&h, frame, flen, &size);
	test_trace t;
	assert_int_equal(test_read_memory(bad, size, NT_ORDER_STREAM, &t), 0);
	assert_true(t.errors >= 1);
	assert_non_null(strstr(t.first_error, "codec this reader does not support"));
	test_trace_free(&t);
	free(bad);

	free(tmp);
	free(records);
}

/* An archive whose header names a codec this reader lacks is refused at open. */
static void unknown_codec_in_header_is_refused(void **state)
{
	(void)state;
	nt_archive_info info;
	memset(&info, 0, sizeof(info));
	uint8_t hdr[1024];
	info.format_major = NT_FORMAT_MAJOR;
	info.ticks_per_second = 1000000000u;
	info.compression = NT_CODEC_LAST + 1;
	size_t n = nt_header_encode_stream(&info, hdr, sizeof(hdr));
	assert_true(n > 0);
	nt_reader_error err;
	assert_null(nt_reader_open_memory(hdr, n, "newer", &err));
	char want[64];
	snprintf(want, sizeof(want), "compressed with codec %d", NT_CODEC_LAST + 1);
	assert_non_null(strstr(err.message, want));
}

/* The lanes of ZstdLanes4 (nt_lanes.h) give back every byte, at every length (the vector
 * blocks and the tail), in buffers of the stack as well as of the heap. */
static void lanes_round_trip_at_every_length(void **state)
{
	(void)state;
	uint8_t in[1100], lanes[1100], out[1100];
	unsigned seed = 12345;
	for (size_t n = 0; n <= sizeof(in); n += 4) {
		for (size_t i = 0; i < n; i++)
			in[i] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
		nt_lanes_split4(lanes, in, n);
		for (size_t w = 0; w < n / 4; w++)
			for (size_t k = 0; k < 4; k++)
				assert_int_equal(lanes[k * (n / 4) + w], in[4 * w + k]);
		memset(out, 0xA5, sizeof(out));
		nt_lanes_join4(out, lanes, n);
		assert_memory_equal(out, in, n);
		assert_int_equal(out[n < sizeof(out) ? n : 0], n < sizeof(out) ? 0xA5 : in[0]);
	}
}

/* The type of the literals section of the first block of the CompressedChunk at `rec`
 * (RFC 8878 3.1.1.3.1.1: 0 raw, 1 RLE, 2 Huffman-coded, 3 Huffman with the last table), or
 * -1 when that block holds no literals section (raw or RLE block). */
static int first_literals_type(const uint8_t *rec)
{
	const nt_zchunk_record *z = (const nt_zchunk_record *)(const void *)rec;
	const uint8_t *frame = rec + sizeof(*z);
	size_t head = ZSTD_frameHeaderSize(frame, z->compressed_bytes);
	assert_false(ZSTD_isError(head));
	const uint8_t *block = frame + head;
	uint32_t block_head = block[0] | (uint32_t)block[1] << 8 | (uint32_t)block[2] << 16;
	if (((block_head >> 1) & 3) != 2) /* not a compressed block */
		return -1;
	return block[3] & 3;
}

/* A piece of `records` bytes (a multiple of 16) of instant-like records, compressed; checks
 * it decodes back. Returns the first block's literals type. */
static int literals_type_of_piece(nt_zchunk_encoder *e, size_t records)
{
	size_t len = sizeof(nt_chunk_header) + records;
	uint8_t *piece = calloc(1, len), *rec = malloc(len), *back = malloc(NT_MAX_ZCHUNK_BYTES);
	nt_zchunk_decoder *d = nt_zchunk_decoder_new();
	assert_true(piece && rec && back && d);
	nt_chunk_header h;
	memset(&h, 0, sizeof(h));
	h.kind = NT_KIND_CHUNK;
	h.size_bytes = (uint32_t)len;
	memcpy(piece, &h, sizeof(h));
	unsigned seed = 7;
	for (size_t i = sizeof(h), k = 0; i + 16 <= len; i += 16, k++) {
		uint8_t *r = piece + i; /* an instant with one value: the shape of a real record */
		unsigned x = (seed = seed * 1103515245u + 12345u) >> 16;
		r[0] = 0x21;
		r[1] = 2;
		r[2] = (uint8_t)(1 + k % 3);
		r[4] = (uint8_t)((x & 7) * ((x >> 3) & 3)); /* small time deltas, mostly */
		r[5] = (uint8_t)(x >> 8 & 1);
		r[8] = (uint8_t)(k * 7);
		r[9] = (uint8_t)(k * 7 >> 8);
	}
	size_t n = nt_zchunk_encode(e, piece, len, rec, len);
	assert_true(n > 0);
	assert_null(nt_zchunk_decode(d, rec, n, back, NT_MAX_ZCHUNK_BYTES));
	assert_memory_equal(back, piece, len);
	int type = first_literals_type(rec);
	nt_zchunk_decoder_free(d);
	free(piece);
	free(rec);
	free(back);
	return type;
}

/* A chunk under 4 KiB of records (a thread's last, a short process's one) stores its
 * literals: zstd spends 2.5-3 us decoding a Huffman table, several times the rest of such a
 * chunk's decoding, for a few dozen bytes saved. Larger chunks keep Huffman coding, and the
 * encoder switches both ways as sizes alternate. */
static void small_chunks_store_their_literals(void **state)
{
	(void)state;
	nt_zchunk_encoder *e = nt_zchunk_encoder_new(NT_ZCHUNK_LEVEL_DEFAULT);
	assert_non_null(e);
	const size_t sizes[] = { 16384, 416, 4080, 4096, 1024, 60000 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int type = literals_type_of_piece(e, sizes[i]);
		if (sizes[i] < 4096)
			assert_msg(type == 0 || type == 1, "%zu bytes: literals type %d", sizes[i], type);
		else
			assert_msg(type == 2 || type == 3, "%zu bytes: literals type %d", sizes[i], type);
	}
	nt_zchunk_encoder_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(finish_at_every_level_saves_the_same_events),
		cmocka_unit_test(renderers_print_the_same_for_compressed_copies),
		cmocka_unit_test(streaming_saves_compressed_chunks),
		cmocka_unit_test(streaming_archive_is_as_small_as_oneshot),
		cmocka_unit_test(killed_arena_stays_uncompressed),
		cmocka_unit_test(level_configuration),
		cmocka_unit_test(hostile_compressed_chunks_are_reported_and_counted),
		cmocka_unit_test(unknown_codec_in_header_is_refused),
		cmocka_unit_test(lanes_round_trip_at_every_length),
		cmocka_unit_test(small_chunks_store_their_literals),
	};
	return cmocka_run_group_tests(tests, make_archives, free_archives);
}
