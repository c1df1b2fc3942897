/*
 * test_arena_saver.c - the one arena saver (runtime/nt_arena_saver.h), as the trace manager
 * runs it: over its own mapping of a real writer's arena.
 *
 *   saves_exactly_what_was_published  a second mapping of a live file-backed arena, saved
 *       again and again while three threads write: the saved records, behind a header made
 *       from the arena's, read back as exactly the events made, each thread's in order, and
 *       every closed chunk ends marked saved in its saved-claim word.
 *   failed_append_stops_the_saving    an output that fails: the errno comes back, nothing is
 *       committed, and every later save fails the same way without writing.
 *   hostile_arena                     a real arena whose chunk headers, claim words, thread
 *       indices, record words, durable records and saved-claim words are corrupted at
 *       random between saves, and (outside TSan) by a second thread during them, for
 *       thousands of rounds, by savers that compress as a streaming one does and savers
 *       that do not: every save returns, each appends at most one arena's worth,
 *       heap use stays bounded, and the reader survives what was saved.
 *   arena_archives_old_and_new        a live arena reads as an archive with and without its
 *       saved-claim words (archives of earlier versions end before them).
 *   map_fd_checks_the_size           nt_arena_map_fd refuses a memfd of any other size than
 *       the layout's (and a pipe, and bad sizes) and keeps the caller's fd; a right one is
 *       mapped shared, laid out by nt_arena_layout.h, and closed by the next arena.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/nt_cmocka.h"
#include <nanotrace/nanotrace.h>
#include "writer/core/nt_internal.h" /* nt_arena_map_fd and the session it fills */
#include "tests/support/nt_saver_test.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

/* A second, shared mapping of the arena file at `path` (what the manager holds). */
static uint8_t *map_arena_file(const char *path, const nt_arena_layout *L, int *fd_out)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	struct stat sb;
	assert_int_equal(fstat(fd, &sb), 0);
	assert_msg((uint64_t)sb.st_size == L->map_size,
		   "the writer's arena is %lld bytes, nt_arena_layout.h says %llu",
		   (long long)sb.st_size, (unsigned long long)L->map_size);
	void *m = mmap(NULL, L->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	*fd_out = fd;
	return m;
}

/* Starts a session on a file-backed arena at `path` (4 KiB chunks) and maps the file a
 * second time, as the manager maps a provider's memfd: the layout in *L, the fd in *fd. */
static uint8_t *start_and_map(const char *path, int mode, size_t buffer, nt_arena_layout *L,
			      int *fd)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.path = path;
	cfg.mode = mode;
	cfg.buffer_size = buffer;
	cfg.chunk_size = 4096;
	assert_int_equal(nt_start(&cfg), NT_OK);
	assert_int_equal(nt_arena_layout_compute(buffer, cfg.chunk_size, L), NT_LAYOUT_OK);
	return map_arena_file(path, L, fd);
}

/* ---- saves exactly what was published ------------------------------------------------ */

#define WRITERS 3
#define PER_WRITER 30000u

static int writers_done;

static void *writer_main(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	for (uint64_t i = 0; i < PER_WRITER; i++) {
		NT_INSTANT("saver", "ev", NT_U32("t", t), NT_U64("seq", i));
		if (i % 256 == 0)
			usleep(20); /* so that saves fall between and inside chunks */
	}
	__atomic_add_fetch(&writers_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint64_t arg_u64(const test_event *e, const char *name)
{
	for (uint32_t i = 0; i < e->nargs; i++)
		if (strcmp(e->names[i], name) == 0)
			return e->args[i].value.u64;
	fail_msg("event without argument '%s'", name);
	return 0;
}

/* Every writer's PER_WRITER events, once each and in order. */
static void check_sequences(const test_trace *tr, const char *what)
{
	uint64_t next[WRITERS] = { 0 };
	for (size_t k = 0; k < tr->n; k++) {
		const test_event *e = &tr->ev[k];
		uint64_t t = arg_u64(e, "t"), seq = arg_u64(e, "seq");
		assert_msg(t < WRITERS, "%s: event %zu names writer %llu", what, k,
			   (unsigned long long)t);
		assert_msg(seq == next[t], "%s: writer %llu: seq %llu where %llu was due", what,
			   (unsigned long long)t, (unsigned long long)seq,
			   (unsigned long long)next[t]);
		next[t]++;
	}
	for (int t = 0; t < WRITERS; t++)
		assert_msg(next[t] == PER_WRITER, "%s: writer %d: %llu of %u events", what, t,
			   (unsigned long long)next[t], PER_WRITER);
}

static void saves_exactly_what_was_published(void **state)
{
	(void)state;
	char path[256];
	test_tmp_path(path, sizeof(path), "saver-live");
	nt_arena_layout L;
	int fd;
	uint8_t *map = start_and_map(path, NT_MODE_ONESHOT, 8u << 20, &L, &fd);
	uint8_t hdr[1024];
	size_t hlen = test_stream_header(map, 0, hdr);
	assert_true(hlen > 0);
	nt_arena_saver *saver = nt_arena_saver_new(map, &L, hlen);
	assert_non_null(saver);
	test_sink out = { .keep = 1 };
	nt_saver_output o = test_sink_output(&out);

	writers_done = 0;
	pthread_t th[WRITERS];
	for (uintptr_t t = 0; t < WRITERS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, writer_main, (void *)t), 0);
	unsigned saves = 0;
	while (__atomic_load_n(&writers_done, __ATOMIC_ACQUIRE) < WRITERS) {
		assert_int_equal(nt_arena_saver_save(saver, &o, NULL), 0);
		saves++;
		usleep(100);
	}
	for (int t = 0; t < WRITERS; t++)
		pthread_join(th[t], NULL); /* thread exit closes each writer's chunk */
	uint64_t last = 0;
	assert_int_equal(nt_arena_saver_save(saver, &o, &last), 0);
	saves++;
	nt_stats stats;
	nt_get_stats(&stats);
	assert_int_equal(stats.events_dropped, 0);

	assert_int_equal(nt_arena_saver_events(saver), WRITERS * PER_WRITER);
	assert_int_equal(nt_arena_saver_end(saver), hlen + out.len);
	assert_int_equal(out.committed_end, hlen + out.len);
	/* Every closed chunk is held in full: its saved-claim word is its claim word. */
	for (uint32_t s = 0; s < L.nslots; s++) {
		const nt_chunk_header *h =
			(const nt_chunk_header *)(const void *)(map + L.rolling_offset +
								 (uint64_t)s * L.chunk_size);
		const uint64_t *saved = (const uint64_t *)(const void *)(map + L.saved_claim_offset);
		if (h->kind == NT_KIND_CHUNK && !(h->claim & 1u))
			assert_msg(saved[s] == h->claim, "slot %u: closed chunk not marked saved", s);
	}

	/* The saved records behind a header: exactly the events made. */
	test_trace tr;
	assert_int_equal(test_read_saved(map, nt_arena_saver_events(saver), out.data, out.len,
					 NT_ORDER_STREAM, &tr), 0);
	assert_msg(tr.errors == 0, "saved records: %lu errors, first: %s", tr.errors,
		   tr.first_error);
	assert_int_equal(tr.n, WRITERS * PER_WRITER);
	check_sequences(&tr, "saved in pieces");
	print_message("%u saves, %zu bytes saved\n", saves, out.len);
	test_trace_free(&tr);

	/* The writer's own finished archive holds the same. */
	assert_int_equal(nt_finish(NULL), NT_OK);
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &tr), 0);
	assert_int_equal(tr.errors, 0);
	check_sequences(&tr, "finished archive");
	test_trace_free(&tr);

	nt_arena_saver_free(saver);
	free(out.data);
	munmap(map, L.map_size);
	close(fd);
	unlink(path);
}

/* ---- a real arena to corrupt ---------------------------------------------------------- */

typedef struct arena_copy {
	nt_arena_layout L;
	uint8_t *pristine; /* the arena as the writer left it */
} arena_copy;

static void make_arena(arena_copy *a, int mode)
{
	char path[256];
	test_tmp_path(path, sizeof(path), "saver-hostile");
	int fd;
	uint8_t *map = start_and_map(path, mode, 64u << 10, &a->L, &fd);
	for (uint64_t i = 0; i < 3000; i++) {
		NT_INSTANT("hostile", "ev", NT_U64("seq", i));
		if (i % 7 == 0)
			NT_COUNTER("hostile", "level", NT_I64("v", (int64_t)i));
		if (i % 500 == 0)
			nt_thread_set_name(i % 1000 ? "odd" : "even");
	}
	a->pristine = malloc(a->L.map_size);
	assert_non_null(a->pristine);
	memcpy(a->pristine, map, a->L.map_size);
	munmap(map, a->L.map_size);
	close(fd);
	assert_int_equal(nt_finish(NULL), NT_OK);
	unlink(path);
}

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A second thread that stores random bytes and plausible words anywhere in the arena. */
typedef struct flipper {
	uint8_t *map;
	uint64_t size;
	int stop;
	uint64_t flips;
} flipper;

static void *flipper_main(void *arg)
{
	flipper *f = arg;
	uint64_t x = 0x9E3779B97F4A7C15ull;
	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 64; i++) {
			uint64_t r = rng_next(&x);
			uint64_t off = (r >> 8) % f->size;
			if (r & 1)
				__atomic_store_n(&f->map[off], (uint8_t)r, __ATOMIC_RELAXED);
			else
				__atomic_store_n((uint64_t *)(void *)(f->map + (off & ~7ull)),
						 rng_next(&x) >> (r & 63), __ATOMIC_RELAXED);
		}
		f->flips += 64;
		sched_yield();
	}
	return NULL;
}

static uint64_t *word_at(uint8_t *map, uint64_t off)
{
	return (uint64_t *)(void *)(map + (off & ~7ull));
}

/* One lie, of the kinds a hostile provider can tell. */
static void corrupt(uint8_t *m, const nt_arena_layout *L, const uint8_t *pristine, uint64_t *x)
{
	uint64_t r = rng_next(x), v = rng_next(x);
	uint32_t slot = (uint32_t)(v % L->nslots);
	uint64_t chunk = L->rolling_offset + (uint64_t)slot * L->chunk_size;
	nt_chunk_header *h = (nt_chunk_header *)(void *)(m + chunk);
	uint64_t seq = nt_claim_sequence(h->claim >= 2 ? h->claim : 2);
	switch (r % 11) {
	case 0: /* any byte */
		m[v % L->map_size] = (uint8_t)r;
		break;
	case 1: /* the claim word: random, active, closed, or a far sequence */
		h->claim = (r >> 4) % 4 == 0 ? v : (r >> 4) % 4 == 1 ? h->claim | 1u
			 : (r >> 4) % 4 == 2 ? h->claim & ~1ull : ((v >> 8) << 1);
		break;
	case 2: /* the first word: a chunk of another wrap or size, or garbage */
		*word_at(m, chunk) = (r & 16) ? nt_large_record_word(NT_KIND_CHUNK,
						(uint32_t)(seq / L->nslots + (r >> 8) % 3), (uint32_t)v)
					       : v;
		break;
	case 3: /* the thread index: anything, or at and past the bound */
		h->thread = (r & 3) == 0 ? (uint32_t)v : NT_MAX_THREAD_INDEX + (uint32_t)(r >> 8) % 3 - 1;
		break;
	case 4: /* a record word in the payload: sizes past the chunk, zero sizes */
		*word_at(m, chunk + sizeof(nt_chunk_header) +
				    v % (L->chunk_size - sizeof(nt_chunk_header))) =
			nt_record_word((unsigned)r, (uint32_t)(v >> 8), (uint32_t)(v >> 16),
				       (uint32_t)(v >> 32));
		break;
	case 5: /* a durable record word */
		*word_at(m, L->durable_offset + v % L->durable_size) =
			nt_record_word((unsigned)r, (uint32_t)(v >> 8), (uint32_t)(v >> 16),
				       (uint32_t)(v >> 32));
		break;
	case 6: /* the saved-claim word: random or the slot's own claim */
		*word_at(m, L->saved_claim_offset + 8ull * slot) = (r & 1) ? v : h->claim;
		break;
	case 7: /* the event count, time base and first ordinal */
		h->event_count = (uint32_t)v;
		h->base_ticks = rng_next(x);
		h->first_event = rng_next(x);
		break;
	case 8: /* a whole slot back as it was: a chunk that reappears */
		memcpy(m + chunk, pristine + chunk, L->chunk_size);
		break;
	case 9: /* a slot emptied */
		memset(m + chunk, 0, L->chunk_size);
		break;
	default: /* the overwrite counters (the saver must not care) */
		*word_at(m, L->slot_overwritten_offset + 8ull * slot) = v;
		break;
	}
}

static void hostile_rounds(int mode, unsigned rounds)
{
	arena_copy a;
	make_arena(&a, mode);
	const nt_arena_layout *L = &a.L;
	uint8_t *work = aligned_alloc(4096, (L->map_size + 4095) & ~4095ull);
	assert_non_null(work);
	memcpy(work, a.pristine, L->map_size);
	const uint64_t most = L->durable_size + (uint64_t)L->nslots * L->chunk_size;

	flipper f = { .map = work, .size = L->map_size };
	pthread_t ft;
	if (!UNDER_TSAN)
		assert_int_equal(pthread_create(&ft, NULL, flipper_main, &f), 0);
	nt_arena_saver *saver = NULL;
	size_t heap_start = 0;
	uint64_t saved_bytes = 0;
	uint64_t x = 0x243F6A8885A308D3ull ^ (uint64_t)mode;
	for (unsigned round = 0; round < rounds; round++) {
		if (round % 64 == 0)
			memcpy(work, a.pristine, L->map_size); /* races the flipper: that is the point */
		if (round % 500 == 0) {
			nt_arena_saver_free(saver);
			saver = nt_arena_saver_new(work, L, 0);
			assert_non_null(saver);
			/* Every other saver compresses as a streaming one does (live): its closed
			 * chunks are taken whole at the count their header gives, unwalked. */
			if (round % 1000 == 0)
				assert_int_equal(nt_arena_saver_set_compression(saver, 1, 1), 0);
		}
		unsigned lies = (unsigned)(rng_next(&x) % 8);
		for (unsigned i = 0; i < lies; i++)
			corrupt(work, L, a.pristine, &x);
		test_sink out = { .keep = round % 100 == 99 };
		nt_saver_output o = test_sink_output(&out);
		uint64_t before = nt_arena_saver_end(saver);
		assert_int_equal(nt_arena_saver_save(saver, &o, NULL), 0);
		assert_msg(out.len <= most, "round %u: one save appended %zu bytes, more than the "
			   "arena's %llu", round, out.len, (unsigned long long)most);
		assert_int_equal(nt_arena_saver_end(saver) - before, out.len);
		saved_bytes += out.len;
		test_trace tr; /* what one save made, read back: maybe damaged, never fatal */
		if (out.keep && test_read_saved(a.pristine, 0, out.data, out.len, NT_ORDER_TIME,
						&tr) == 0)
			test_trace_free(&tr);
		free(out.data);
		if (round == 100)
			heap_start = mallinfo2().uordblks;
	}
	size_t heap_end = mallinfo2().uordblks;
	/* O(slots + threads): the per-thread table may grow to its bound, nothing more. */
	assert_msg(heap_end <= heap_start + (NT_MAX_THREAD_INDEX + 1) * 8 + (1u << 20),
		   "heap grew from %zu to %zu bytes", heap_start, heap_end);
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
	if (!UNDER_TSAN)
		pthread_join(ft, NULL);
	/* The lies did not stop the saving: restored arenas were saved again and again. */
	assert_msg(saved_bytes > most, "only %llu bytes saved in %u rounds",
		   (unsigned long long)saved_bytes, rounds);
	print_message("mode %d: %u rounds, %llu bytes saved, %llu concurrent stores\n", mode,
		      rounds, (unsigned long long)saved_bytes, (unsigned long long)f.flips);
	nt_arena_saver_free(saver);
	free(work);
	free(a.pristine);
}

static void hostile_arena(void **state)
{
	(void)state;
	hostile_rounds(NT_MODE_CIRCULAR, 3000);
	hostile_rounds(NT_MODE_ONESHOT, 1500);
}

static void failed_append_stops_the_saving(void **state)
{
	(void)state;
	arena_copy a;
	make_arena(&a, NT_MODE_ONESHOT);
	nt_arena_saver *saver = nt_arena_saver_new(a.pristine, &a.L, 100);
	assert_non_null(saver);
	test_sink out = { .fail_with = ENOSPC };
	nt_saver_output o = test_sink_output(&out);
	assert_int_equal(nt_arena_saver_save(saver, &o, NULL), ENOSPC);
	unsigned appends = out.appends;
	assert_int_equal(nt_arena_saver_save(saver, &o, NULL), ENOSPC);
	assert_int_equal(out.appends, appends);
	assert_int_equal(out.commits, 0);
	assert_int_equal(nt_arena_saver_end(saver), 100);
	const uint64_t *saved = (const uint64_t *)(const void *)(a.pristine + a.L.saved_claim_offset);
	for (uint32_t s = 0; s < a.L.nslots; s++)
		assert_int_equal(saved[s], 0);
	nt_arena_saver_free(saver);
	/* A layout no arena has is refused. */
	nt_arena_layout bad = a.L;
	bad.chunk_size = 24;
	assert_null(nt_arena_saver_new(a.pristine, &bad, 0));
	free(a.pristine);
}

/* A live arena is an Arena-layout archive as it is (a killed process leaves one); without
 * its saved-claim words, as writers before them made it, it reads the same. */
static void arena_archives_old_and_new(void **state)
{
	(void)state;
	arena_copy a;
	make_arena(&a, NT_MODE_CIRCULAR);
	test_trace now, old;
	assert_int_equal(test_read_memory(a.pristine, a.L.map_size, NT_ORDER_STREAM, &now), 0);
	assert_int_equal(test_read_memory(a.pristine, a.L.saved_claim_offset, NT_ORDER_STREAM,
					  &old), 0);
	assert_msg(now.errors == 0 && old.errors == 0, "errors: %s / %s", now.first_error,
		   old.first_error);
	assert_true(now.n > 0);
	assert_int_equal(now.n, old.n);
	for (size_t i = 0; i < now.n; i++)
		assert_int_equal(now.ev[i].time_ns, old.ev[i].time_ns);
	test_trace_free(&now);
	test_trace_free(&old);
	free(a.pristine);
}

/* ---- nt_arena_map_fd -------------------------------------------------------------------- */

static void map_fd_checks_the_size(void **state)
{
	(void)state;
	const size_t buffer = 1u << 20;
	nt_arena_layout L;
	assert_int_equal(nt_arena_layout_compute(buffer, 0, &L), NT_LAYOUT_OK);
	int fd = memfd_create("nt-test-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	const uint64_t wrong[] = { 0, L.map_size - 4096, L.map_size - 8, L.map_size + 8,
				   L.map_size - L.nslots * 8 /* without the saved-claim words */ };
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		assert_int_equal(ftruncate(fd, (off_t)wrong[i]), 0);
		assert_int_equal(nt_arena_map_fd(fd, buffer, 0, NT_MODE_STREAMING),
				 NT_ERR_INVALID_ARGUMENT);
		assert_msg(strstr(nt_last_error(), "needs exactly") != NULL, "message: %s",
			   nt_last_error());
		assert_int_not_equal(fcntl(fd, F_GETFD), -1); /* still the caller's */
	}
	assert_int_equal(nt_arena_map_fd(fd, 1000, 0, NT_MODE_STREAMING), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "buffer_size 1000 is out of range"));
	assert_int_equal(nt_arena_map_fd(fd, buffer, 3000, NT_MODE_STREAMING),
			 NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "chunk_size 3000"));
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(nt_arena_map_fd(p[0], buffer, 0, NT_MODE_STREAMING),
			 NT_ERR_INVALID_ARGUMENT);
	close(p[0]);
	close(p[1]);

	/* The right size: mapped shared, every part where the layout says. */
	assert_int_equal(ftruncate(fd, (off_t)L.map_size), 0);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL), 0);
	struct stat before;
	assert_int_equal(fstat(fd, &before), 0);
	assert_int_equal(nt_arena_map_fd(fd, buffer, 0, NT_MODE_STREAMING), NT_OK);
	assert_int_equal(nt_S.map_size, L.map_size);
	assert_ptr_equal(nt_S.saved_claim, nt_S.map + L.saved_claim_offset);
	assert_ptr_equal(nt_S.slot_overwritten, nt_S.map + L.slot_overwritten_offset);
	assert_ptr_equal(nt_S.rolling, nt_S.map + L.rolling_offset);
	assert_int_equal(nt_S.nslots, L.nslots);
	nt_S.saved_claim[L.nslots - 1] = 0x1234;
	uint64_t back = 0;
	assert_int_equal(pread(fd, &back, 8, (off_t)(L.saved_claim_offset + 8ull * (L.nslots - 1))), 8);
	assert_int_equal(back, 0x1234);

	/* The next arena lets go of it and closes the fd. */
	nt_config cfg;
	nt_config_init(&cfg);
	assert_int_equal(nt_start(&cfg), NT_OK);
	struct stat after;
	assert_true(fstat(fd, &after) != 0 || after.st_ino != before.st_ino);
	char path[256];
	test_tmp_path(path, sizeof(path), "saver-mapfd");
	assert_int_equal(nt_finish(path), NT_OK);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(saves_exactly_what_was_published),
		cmocka_unit_test(failed_append_stops_the_saving),
		cmocka_unit_test(hostile_arena),
		cmocka_unit_test(arena_archives_old_and_new),
		cmocka_unit_test(map_fd_checks_the_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
