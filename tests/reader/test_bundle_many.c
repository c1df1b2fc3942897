/*
 * test_bundle_many.c - the reader over bundles of many sections (support/bundle_fixture.h:
 * archives that real processes recorded at the same time): threads that start when the merge
 * reaches them, thousands of sections merged exactly, sections closed between visits and
 * opened again (exactly as open ones, damage named, a decoder shared), opened ahead on a
 * helper, a bundle opened on two threads and counted while it is read, and --stats' lines
 * formatted on two threads: each exactly as the serial, all-open reader reads it.
 */
#define _GNU_SOURCE
#include "tests/support/bundle_fixture.h"

/* One event as a merge check sees it. */
typedef struct seen {
	int64_t time_ns;
	uint32_t thread;   /* global index: the merge's tie order */
	uint32_t nth;      /* its place among its thread's events */
	uint64_t seq, offset;
} seen;

typedef struct seen_list {
	seen *v;
	size_t n, cap;
	uint32_t *per_thread;
} seen_list;

static int collect(void *ctx, const nt_reader_event *e)
{
	seen_list *l = ctx;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		assert_non_null(l->v);
	}
	assert_int_equal(e->arg_count, 1);
	l->v[l->n++] = (seen){ e->time_ns, e->thread->index, l->per_thread[e->thread->index]++,
			       e->args[0].value.u64, e->offset };
	return 0;
}

static int by_time_then_thread(const void *a, const void *b)
{
	const seen *x = a, *y = b;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->nth < y->nth ? -1 : x->nth > y->nth;
}

static seen_list collect_all(nt_reader *r, nt_order order, int ahead)
{
	seen_list l = { NULL, 0, 0, calloc(nt_reader_thread_index_limit(r) + 1, sizeof(uint32_t)) };
	assert_int_equal(nt_reader_set_decompress_ahead(r, ahead), 0);
	nt_reader_callbacks cb = { .on_event = collect };
	assert_int_equal(nt_reader_visit(r, &cb, &l, order, NT_ON_CORRUPT_SKIP), 0);
	free(l.per_thread);
	return l;
}

/* `sections` sections repeating the archives from `first` on (all four, or the last one
 * alone): the time order is exactly every thread's events merged by (time, thread), each
 * event with its arguments, with and without decompressing ahead. */
static void sections_merge_exactly(int sections, int first)
{
	char *buf = NULL;
	size_t size;
	FILE *f = open_memstream(&buf, &size);
	bw_preamble(f, 1);
	for (int i = 0; i < sections; i++) {
		int a = first + i % (NPROC - first);
		write_section(f, i, a, NULL, "");
	}
	bw_end(f, NT_SECTION_FINISHED, (uint32_t)sections, "");
	fclose(f);
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(buf, size, "many", &err);
	assert_msg(r != NULL, "%s", err.message);
	assert_int_equal(nt_reader_section_count(r), sections);
	for (int i = 0; i < sections; i++) {
		const nt_reader *s = nt_reader_section_at(r, (uint32_t)i)->reader;
		assert_non_null(s);
		const nt_reader_thread *t = nt_reader_thread_at(s, 0), *all;
		assert_non_null(t);
		all = nt_reader_thread_by_index(r, nt_reader_section_at(r, (uint32_t)i)->thread_base +
							   t->index);
		assert_non_null(all);
		assert_string_equal(all->name, t->name);
	}
	uint64_t zchunks = 0;
	nt_reader_get_compression(r, &zchunks, NULL);
	assert_true(first > 0 || zchunks > 0); /* the oneshot sections' chunks are compressed */
	seen_list want = collect_all(r, NT_ORDER_STREAM, NT_READER_AHEAD_OFF);
	assert_true(want.n >= (size_t)sections * made[NPROC - 1]);
	qsort(want.v, want.n, sizeof(*want.v), by_time_then_thread);
	for (int ahead = 0; ahead <= 4; ahead += 4) {
		seen_list got = collect_all(r, NT_ORDER_TIME, ahead);
		assert_int_equal(got.n, want.n);
		for (size_t i = 0; i < want.n; i++)
			assert_msg(memcmp(&got.v[i], &want.v[i], sizeof(seen)) == 0,
				   "event %zu (ahead %d): thread %u seq %llu, want thread %u seq %llu",
				   i, ahead, got.v[i].thread, (unsigned long long)got.v[i].seq,
				   want.v[i].thread, (unsigned long long)want.v[i].seq);
		free(got.v);
	}
	free(want.v);
	nt_reader_close(r);
	free(buf);
}

/* Many sections, each thread's stream waiting until the merge reaches its first event, its
 * first chunk decompressed again then (the setup's buffer is shared). The sections repeat
 * the four processes' archives, so threads tie in time and several are started at once. */
static void test_many_sections_start_when_reached(void **state)
{
	(void)state;
	sections_merge_exactly(48, 0);
}

/* Thousands of sections: their packed readers fill the slab past the point where its blocks
 * become 2 MiB pages of their own (nt_reader_pack.c), and every table, name and chunk read
 * from them is still the section's own. */
static void test_thousands_of_sections(void **state)
{
	(void)state;
	sections_merge_exactly(6000, NPROC - 1);
}

/* A rendering of r by `render` (nt_render_text or nt_render_stats), as one string. */
static char *rendered(nt_reader *r, int (*render)(nt_reader *, FILE *, const nt_render_options *))
{
	char *out = NULL;
	size_t n;
	FILE *f = open_memstream(&out, &n);
	nt_render_options opt;
	nt_render_options_init(&opt);
	assert_int_equal(render(r, f, &opt), 0);
	fclose(f);
	return out;
}

static int render_otlp_json(nt_reader *r, FILE *out, const nt_render_options *opt)
{
	return nt_render_otlp(r, out, NT_OTLP_JSON, opt);
}

/* Sections of r that are closed (peek: no reader, no error). */
static uint32_t closed_sections(const nt_reader *r)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < nt_reader_section_count(r); i++)
		n += nt_reader_section_peek(r, i)->reader == NULL &&
		     nt_reader_section_peek(r, i)->error[0] == '\0';
	return n;
}

/* The reader of `buf` with NANOTRACE_READER_SECTIONS set to `mode` while it opens. */
static nt_reader *open_sections(const char *buf, size_t size, const char *mode)
{
	setenv("NANOTRACE_READER_SECTIONS", mode, 1);
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(buf, size, "many", &err);
	unsetenv("NANOTRACE_READER_SECTIONS");
	assert_msg(r != NULL, "%s", err.message);
	return r;
}

static int count_event(void *ctx, const nt_reader_event *e)
{
	(void)e;
	++*(uint64_t *)ctx;
	return 0;
}

/* A section's reader visited on its own (as the Trace2 renderings visit each process) takes
 * its many-process reader's spare zstd decoder and gives it back: each section kept its
 * own (about 100 KiB), and `trace-dump --format normal` of 20,000 processes took 1.7 GB. */
static void test_sections_visited_one_by_one_share_a_decoder(void **state)
{
	(void)state;
	enum { SECTIONS = 200 };
	size_t size;
	char *buf = copies_bundle(SECTIONS, NULL, &size);
	nt_reader *r = open_sections(buf, size, "open");
	uint64_t zchunks = 0;
	nt_reader_get_compression(nt_reader_section_at(r, 0)->reader, &zchunks, NULL);
	assert_true(zchunks > 0); /* a visit needs a decoder */
	/* bytes allocated, not resident: a decoder of small frames touches few of its pages */
	size_t before = mallinfo2().uordblks;
	uint64_t events = 0;
	nt_reader_callbacks cb = { .on_event = count_event };
	for (uint32_t i = 0; i < SECTIONS; i++)
		assert_int_equal(nt_reader_visit(nt_reader_section_at(r, i)->reader, &cb, &events,
						 NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP), 0);
	long grown = (long)(mallinfo2().uordblks - before) / 1024;
	assert_int_equal(events, SECTIONS * made[0]);
	assert_msg(!NT_PLAIN_ALLOCATOR || grown < SECTIONS * 4,
		   "%d sections visited one by one: the reader grew by %ld KiB", SECTIONS, grown);
	nt_reader_close(r);
	free(buf);
}

typedef struct error_list {
	char text[8192];
	size_t len;
	uint64_t n;
} error_list;

static void keep_error(void *ctx, uint64_t off, const char *msg)
{
	error_list *l = ctx;
	l->n++;
	int n = snprintf(l->text + l->len, sizeof(l->text) - l->len, "%" PRIu64 " %s\n", off, msg);
	if (n > 0 && (size_t)n < sizeof(l->text) - l->len)
		l->len += (size_t)n;
}

static int ignore_event(void *ctx, const nt_reader_event *e)
{
	(void)ctx;
	(void)e;
	return 0;
}

static error_list visit_errors(nt_reader *r, nt_order order)
{
	error_list l = { .len = 0 };
	nt_reader_callbacks cb = { .on_event = ignore_event, .on_error = keep_error };
	nt_reader_visit(r, &cb, &l, order, NT_ON_CORRUPT_SKIP);
	return l;
}

/* A copy of archive a whose first CompressedChunk (found by the top-level framing) has a
 * byte changed in its middle: its checksum fails, which an open does not check. */
static uint8_t *chunk_damaged(int a)
{
	uint64_t off = (nt_load_le32(arch[a]) + 4 + 7) & ~(uint64_t)7, zchunk = 0;
	while (off + 8 <= arch_size[a] && zchunk == 0) {
		uint64_t size = arch[a][off + 1] ? arch[a][off + 1] * 8u : nt_load_le32(arch[a] + off + 4);
		if (size < 8 || size > arch_size[a] - off)
			break;
		if (arch[a][off] == NT_KIND_ZCHUNK)
			zchunk = off + size / 2;
		off += size;
	}
	assert_true(zchunk != 0);
	uint8_t *bad = malloc(arch_size[a]);
	assert_non_null(bad);
	memcpy(bad, arch[a], arch_size[a]);
	bad[zchunk] ^= 0x5a;
	return bad;
}

/* A closed section is read for a visit by an unnamed reader: damage the visit finds in it
 * (a compressed chunk whose bytes changed: its checksum fails, which its open does not
 * check) is named exactly as in a section kept open, in both orders. */
static void test_closed_section_damage_is_named(void **state)
{
	(void)state;
	enum { SECTIONS = 100, BAD = 70 };
	const int a = 3;
	char *buf = NULL;
	size_t size;
	FILE *f = open_memstream(&buf, &size);
	bw_preamble(f, 1);
	uint8_t *bad = chunk_damaged(a);
	for (int i = 0; i < SECTIONS; i++) {
		write_section(f, i, a, i == BAD ? bad : NULL, "");
	}
	bw_end(f, NT_SECTION_FINISHED, SECTIONS, "");
	fclose(f);
	free(bad);
	nt_reader *closed = open_sections(buf, size, "auto");
	nt_reader *open = open_sections(buf, size, "open");
	const nt_reader_section *s = nt_reader_section_peek(closed, BAD);
	assert_true(s->reader == NULL && s->error[0] == '\0'); /* closed: its open found nothing */
	char named[256];
	snprintf(named, sizeof(named), "many section %d (pid %u, %s): ", BAD,
		 (unsigned)pids[a] + BAD, names[a]);
	for (int order = NT_ORDER_STREAM; order <= NT_ORDER_TIME; order++) {
		error_list want = visit_errors(open, (nt_order)order);
		error_list got = visit_errors(closed, (nt_order)order);
		assert_true(want.n > 0);
		assert_non_null(strstr(want.text, named));
		assert_string_equal(got.text, want.text);
	}
	nt_reader_close(open);
	nt_reader_close(closed);
	free(buf);
}

/* ---- closed sections opened ahead (reader/decode/nt_reader_section_ahead.c) ------------ */

typedef struct visit_log {
	FILE *f;
	char *text;
	size_t len;
	uint64_t events, stop_at; /* stop_at: the event after which on_event asks to stop */
} visit_log;

static void log_open(visit_log *l, uint64_t stop_at)
{
	memset(l, 0, sizeof(*l));
	l->stop_at = stop_at;
	l->f = open_memstream(&l->text, &l->len);
	assert_non_null(l->f);
}

static int log_event(void *ctx, const nt_reader_event *e)
{
	visit_log *l = ctx;
	fprintf(l->f, "E %u %" PRId64 " %" PRIu64 " %u %u", e->thread->index, e->time_ns,
		e->offset, e->kind, e->arg_count);
	for (uint32_t i = 0; i < e->arg_count; i++)
		fprintf(l->f, " %s=%" PRIu64, e->args[i].name, e->args[i].value.u64);
	fprintf(l->f, " %s %s\n", e->category, e->name);
	return ++l->events == l->stop_at;
}

static void log_error(void *ctx, uint64_t off, const char *msg)
{
	fprintf(((visit_log *)ctx)->f, "X %" PRIu64 " %s\n", off, msg);
}

static void log_gap(void *ctx, const nt_reader_gap *g)
{
	fprintf(((visit_log *)ctx)->f, "G %u %" PRIu64 " %" PRId64 " %" PRIu64 "\n",
		g->thread->index, g->events, g->time_ns, g->offset);
}

/* What a stream-order visit of r delivers, as text, and its result last; with the public
 * cursor (`pull`) instead of nt_reader_visit when asked. `ahead`: r's setting for it, or
 * KEEP_AHEAD (visits from several threads at once: the setting is not for during one). */
#define KEEP_AHEAD (-100)
static char *visit_text(nt_reader *r, int ahead, nt_corrupt_policy policy, uint64_t stop_at,
			int pull)
{
	visit_log l;
	log_open(&l, stop_at);
	if (ahead != KEEP_AHEAD)
		assert_int_equal(nt_reader_set_decompress_ahead(r, ahead), 0);
	nt_reader_callbacks cb = { .on_event = log_event, .on_error = log_error,
				   .on_gap = log_gap };
	int rc;
	if (pull) {
		nt_reader_cursor *c = nt_reader_cursor_open(r, &cb, &l, NT_ORDER_STREAM, policy);
		assert_non_null(c);
		const nt_reader_event *e;
		while ((rc = nt_reader_cursor_next(c, &e)) > 0)
			if (log_event(&l, e))
				break;
		rc = rc > 0 ? 1 : rc;
		nt_reader_cursor_close(c);
	} else {
		rc = nt_reader_visit(r, &cb, &l, NT_ORDER_STREAM, policy);
	}
	fprintf(l.f, "= %d\n", rc);
	fclose(l.f);
	return l.text;
}

/* Three visits of r on this thread; the last one's text (all three the same). */
static void *visit_thrice(void *arg)
{
	char *text = NULL;
	for (int k = 0; k < 3; k++) {
		char *t = visit_text(arg, KEEP_AHEAD, NT_ON_CORRUPT_SKIP, 0, 0);
		if (text != NULL && strcmp(text, t) != 0)
			abort(); /* not cmocka's asserts: this is not the test's thread */
		free(text);
		text = t;
	}
	return text;
}

/* A bundle of short processes is visited in stream order with its closed sections opened,
 * and their chunks decompressed, on a helper thread ahead of the visit: every event (each
 * field, its argument), gap, damage report and the result are what the serial visit gives,
 * in the same order. Among 400 sections: one whose compressed chunk's bytes are damaged
 * (found by the visit), one whose strings changed after the open (it cannot be opened
 * again), the four archives' kinds mixed in (sections kept open among the closed); with
 * both damage policies, a callback that stops the visit at points all along it (what the
 * helper made ahead is dropped: ASan), the public cursor, and two threads visiting the one
 * reader at once (TSan). */
static void test_sections_opened_ahead_read_as_serially(void **state)
{
	(void)state;
	enum { SECTIONS = 400, DAMAGED = 150, CHANGED = 290 };
	const int a = 3;
	uint8_t *bad = chunk_damaged(a);
	char *buf = NULL;
	size_t size;
	FILE *f = open_memstream(&buf, &size);
	bw_preamble(f, 1);
	for (int i = 0; i < SECTIONS; i++) {
		int k = i % 50 < NPROC && i != DAMAGED ? i % 50 : a;
		write_section(f, i, k, i == DAMAGED ? bad : NULL, "");
	}
	bw_end(f, NT_SECTION_FINISHED, SECTIONS, "");
	fclose(f);
	free(bad);
	nt_reader *r = open_sections(buf, size, "auto");
	assert_true(closed_sections(r) > SECTIONS / 2);
	/* a string of the closed section CHANGED, after its open: "tick" -> "Tick" */
	const nt_reader_section *ch = nt_reader_section_peek(r, CHANGED);
	assert_true(ch->reader == NULL);
	char *tick = memmem(buf + ch->offset, ch->size, "tick", 4);
	assert_non_null(tick);
	*tick = 'T';
	for (int policy = NT_ON_CORRUPT_STOP; policy <= NT_ON_CORRUPT_SKIP; policy++) {
		char *want = visit_text(r, NT_READER_AHEAD_OFF, (nt_corrupt_policy)policy, 0, 0);
		char *got = visit_text(r, 4, (nt_corrupt_policy)policy, 0, 0);
		assert_string_equal(got, want);
		if (policy == NT_ON_CORRUPT_SKIP) {
			assert_non_null(strstr(want, "strings are not what they were"));
			assert_non_null(strstr(want, "many section 150 (pid")); /* DAMAGED's chunk */
			assert_non_null(strstr(want, "G "));
			char *pulled = visit_text(r, 4, NT_ON_CORRUPT_SKIP, 0, 1);
			assert_string_equal(pulled, want);
			free(pulled);
		}
		free(want);
		free(got);
	}
	char *serial = visit_text(r, NT_READER_AHEAD_OFF, NT_ON_CORRUPT_SKIP, 0, 0);
	assert_int_equal(nt_reader_set_decompress_ahead(r, 4), 0);
	pthread_t th[2];
	for (int t = 0; t < 2; t++)
		assert_int_equal(pthread_create(&th[t], NULL, visit_thrice, r), 0);
	for (int t = 0; t < 2; t++) {
		void *text;
		assert_int_equal(pthread_join(th[t], &text), 0);
		assert_string_equal(text, serial);
		free(text);
	}
	free(serial);
	for (uint64_t stop_at = 1; stop_at < 400 * 60; stop_at = stop_at * 3 + 7) {
		char *want = visit_text(r, NT_READER_AHEAD_OFF, NT_ON_CORRUPT_SKIP, stop_at, 0);
		char *got = visit_text(r, 4, NT_ON_CORRUPT_SKIP, stop_at, 0);
		assert_string_equal(got, want);
		free(want);
		free(got);
	}
	nt_reader_close(r);
	free(buf);
}

/* ---- a bundle's sections opened on two threads (nt_reader_many.c's open_range) -------- */

/* Everything an open makes of a bundle, as text: each section's description, the header
 * summed, the summary, the problems, and what --stats and a stream-order visit make of it. */
static char *opened_text(const uint8_t *b, size_t size, const char *ahead)
{
	setenv("NANOTRACE_READER_AHEAD", ahead, 1);
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(b, size, "halves", &err);
	unsetenv("NANOTRACE_READER_AHEAD");
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	if (r == NULL) {
		fprintf(f, "refused: %s at %" PRIu64 "\n", err.message, err.offset);
		fclose(f);
		return text;
	}
	for (uint32_t i = 0; i < nt_reader_section_count(r); i++) {
		const nt_reader_section *s = nt_reader_section_peek(r, i);
		fprintf(f, "S %u %s|%s|%s|%s %u %u %u %u %llu %llu %llu %u %u %llu %llu %llu %llu "
			   "%llu %u %d\n",
			s->index, s->name, s->message, s->error, s->end_text, s->pid,
			s->provider_id, s->end_state, s->mode, (unsigned long long)s->offset,
			(unsigned long long)s->size, (unsigned long long)s->error_offset,
			s->thread_base, s->process_base, (unsigned long long)s->summary.chunks,
			(unsigned long long)s->summary.strings,
			(unsigned long long)s->summary.durable_bytes,
			(unsigned long long)s->summary.open_errors,
			(unsigned long long)s->events_written, s->header_notes, s->reader != NULL);
	}
	const nt_archive_info *in = nt_reader_info(r);
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	fprintf(f, "H %" PRId64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %" PRIu64
		   " %u %u %u\n", in->start_monotonic_ns, in->events_written, in->events_dropped,
		in->events_overwritten, in->wraps, in->save_errno, in->blocked_waits,
		nt_reader_max_category_len(r), nt_reader_max_name_len(r),
		nt_reader_max_event_name_len(r));
	fprintf(f, "U %llu %llu %llu %llu %llu %llu\n", (unsigned long long)sum.header_bytes,
		(unsigned long long)sum.durable_bytes, (unsigned long long)sum.chunk_bytes,
		(unsigned long long)sum.chunks, (unsigned long long)sum.strings,
		(unsigned long long)sum.threads);
	for (uint32_t i = 0; i < nt_reader_problem_count(r); i++) {
		uint64_t at;
		const char *problem = nt_reader_problem_at(r, i, &at);
		fprintf(f, "P %s at %" PRIu64 "\n", problem, at);
	}
	fclose(f);
	char *stats = rendered(r, nt_render_stats);
	char *visit = visit_text(r, NT_READER_AHEAD_OFF, NT_ON_CORRUPT_SKIP, 0, 0);
	char *all;
	assert_true(asprintf(&all, "%s%s%s", text, stats, visit) > 0);
	free(text);
	free(stats);
	free(visit);
	nt_reader_close(r);
	return all;
}

/* A bundle of n sections of the archives in turn (the killed circular one among them), the
 * sections at bad_at[0 .. nbad) holding a smashed header instead, and a message for every
 * `every`th; malloc'd, its size in *size. */
static uint8_t *mixed_bundle(int n, const int *bad_at, int nbad, int every, size_t *size)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, size);
	bw_preamble(f, 1);
	uint8_t *bad = malloc(arch_size[0]);
	memcpy(bad, arch[0], arch_size[0]);
	smash_header(bad, arch_size[0]);
	for (int i = 0; i < n; i++) {
		int smashed = 0;
		for (int k = 0; k < nbad; k++)
			smashed |= bad_at[k] == i;
		write_section(f, i, i % 7 < NPROC ? i % 7 : 3, smashed ? bad : NULL,
			      i % every ? "" : "a message");
	}
	bw_end(f, NT_SECTION_FINISHED, (uint32_t)n, "");
	fclose(f);
	free(bad);
	return (uint8_t *)buf;
}

/* A bundle's open shared with a second thread (forced here from 4 sections on; by default
 * from 256) makes exactly what one thread makes, whatever the bundle holds: sections kept
 * open and closed, a damaged section in each half, a cut at points all along the second
 * half (inside a frame, an archive, the END frame), a frame that lies there, and bits
 * flipped in the frames. */
static void test_open_shared_by_two_threads(void **state)
{
	(void)state;
	enum { SECTIONS = 90 };
	size_t size;
	const int bad_at[] = { 20, 70 };
	uint8_t *b = mixed_bundle(SECTIONS, bad_at, 2, 5, &size);
	uint64_t last = 0, end = 0;
	frame_offsets(b, size, &last, &end);
	uint64_t half = frame_offset_of(b, size, SECTIONS / 2);
	int compared = 0;
	uint8_t *copy = malloc(size);
	srand(29);
	for (int it = 0; it < 160; it++) {
		memcpy(copy, b, size);
		size_t n = size;
		if (it == 0) {
			/* whole */
		} else if (it < 100) { /* a cut in the second half, the END frame's last */
			n = it < 90 ? (size_t)(half + (size - half) * (uint64_t)it / 90)
				    : (size_t)(end + (uint64_t)(it - 90) * 7);
			n = n < size ? n : size - 1;
		} else if (it < 110) { /* a frame there that lies about its archive's size */
			uint64_t lie = (uint64_t)1 << (20 + it % 10);
			uint64_t at = frame_offset_of(b, size, SECTIONS / 2 + 1 + (size_t)(it - 100) * 4);
			memcpy(copy + at + offsetof(nt_bundle_frame, archive_size), &lie, 8);
		} else { /* bits flipped in and around the frames of the second half */
			for (int k = 0; k < 1 + it % 3; k++) {
				uint64_t at = frame_offset_of(b, size, SECTIONS / 2 + (size_t)rand() % (SECTIONS / 2));
				at += (uint64_t)rand() % 64;
				copy[at] ^= (uint8_t)(1u << (rand() % 8));
			}
		}
		char *serial = opened_text(copy, n, "off");
		char *shared = opened_text(copy, n, "4");
		assert_msg(strcmp(serial, shared) == 0, "case %d (%zu bytes): the open differs", it, n);
		compared += strstr(serial, "refused") == NULL;
		free(serial);
		free(shared);
	}
	assert_true(compared > 100);
	free(copy);
	free(b);
}

/* By default (two CPUs) the second thread counts the frames while the reader opens the
 * first sections, and takes half of those left when the reader finds the count: where that
 * happens depends on the two threads' timing, so each case is opened several times. Whole,
 * cut in its last quarter, with a frame flipped past the middle, and 300 sections (so few
 * left that the hand-over can be cancelled), the reader is the serial one's. On one CPU
 * every open is serial and the test compares it with itself. */
static void test_open_counted_while_reading(void **state)
{
	(void)state;
	const int counts[] = { 300, NT_SANITIZED ? 800 : 1500 };
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t size;
		uint8_t *b = mixed_bundle(counts[c], NULL, 0, 9, &size), *copy = malloc(size);
		for (int it = 0; it < 3; it++) {
			memcpy(copy, b, size);
			size_t n = size;
			if (it == 1)
				n = size - size / 5;
			if (it == 2)
				copy[frame_offset_of(b, size, (size_t)counts[c] * 2 / 3) + 1] ^= 0x10;
			char *serial = opened_text(copy, n, "off");
			for (int rep = 0; rep < 4; rep++) {
				char *shared = opened_text(copy, n, "auto");
				assert_msg(strcmp(serial, shared) == 0,
					   "%d sections, case %d, open %d: the open differs", counts[c],
					   it, rep);
				free(shared);
			}
			free(serial);
		}
		free(copy);
		free(b);
	}
}

/* --stats' lines per thread and per section, the later part of each list formatted on a
 * helper thread (reader/render/nt_render_lines.c; forced here from 2 lines, by default
 * from 4,096 with two CPUs): byte for byte the one-thread output, the killed process's
 * losses, a section that is not readable and the messages among them; and a full disk
 * stops it with -1 and ENOSPC, with a helper as without. */
static void test_stats_lines_on_two_threads(void **state)
{
	(void)state;
	enum { SECTIONS = 300 };
	size_t size;
	const int bad_at[] = { 150 };
	uint8_t *buf = mixed_bundle(SECTIONS, bad_at, 1, 5, &size);
	nt_reader *r = nt_reader_open_memory(buf, size, "lines", NULL);
	assert_non_null(r);
	setenv("NANOTRACE_READER_AHEAD", "off", 1);
	char *serial = rendered(r, nt_render_stats);
	const char *helpers[] = { "4", "auto" };
	for (int h = 0; h < 2; h++) {
		setenv("NANOTRACE_READER_AHEAD", helpers[h], 1);
		char *split = rendered(r, nt_render_stats);
		assert_msg(strcmp(serial, split) == 0, "NANOTRACE_READER_AHEAD=%s: --stats differs",
			   helpers[h]);
		free(split);
	}
	assert_non_null(strstr(serial, "not readable"));
	assert_non_null(strstr(serial, "message: a message"));
	FILE *full = fopen("/dev/full", "w");
	for (int h = 0; full != NULL && h < 2; h++) {
		setenv("NANOTRACE_READER_AHEAD", h ? "4" : "off", 1);
		errno = 0;
		assert_int_equal(nt_render_stats(r, full, NULL), -1);
		assert_int_equal(errno, ENOSPC);
		clearerr(full);
	}
	if (full != NULL)
		fclose(full);
	unsetenv("NANOTRACE_READER_AHEAD");
	free(serial);
	nt_reader_close(r);
	free(buf);
}

/* A bundle of more than 64 sections keeps them closed between visits (nt_reader_lazy.c):
 * every visit, count and rendering is what it is with every section open, a closed section
 * costs its reader a few hundred bytes, not a reader's 2.5 KiB, and nt_reader_section_at()
 * still gives its reader for the reader's life. The four archives repeat, so some sections
 * (an Arena layout, damage) stay open among the closed; the two killed processes' 20,000
 * events come once in 100 sections, so the visits below read 1.4 M events, not 20 M (the
 * test ran 600 s under TSan), and 600 sections under a sanitizer (which measures no memory). */
static void test_closed_sections_read_as_open_ones(void **state)
{
	(void)state;
	enum { SECTIONS = NT_SANITIZED ? 600 : 2000 };
	char *buf = NULL;
	size_t size;
	FILE *f = open_memstream(&buf, &size);
	bw_preamble(f, 1);
	for (int i = 0; i < SECTIONS; i++) {
		int a = i % 100 < NPROC ? i % 100 : 3 * (i % 2);
		write_section(f, i, a, NULL, "");
	}
	bw_end(f, NT_SECTION_FINISHED, SECTIONS, "");
	fclose(f);
	const char *perturb = getenv("MALLOC_PERTURB_");
	mallopt(M_PERTURB, 0);
	long before = rss_anon_kib();
	nt_reader *closed = open_sections(buf, size, "auto");
	long grown = rss_anon_kib() - before;
	mallopt(M_PERTURB, perturb != NULL ? atoi(perturb) : 0);
	nt_reader *open = open_sections(buf, size, "open");
	uint32_t shut = closed_sections(closed);
	assert_true(shut >= SECTIONS / 2);
	assert_msg(!NT_PLAIN_ALLOCATOR || (before > 0 && grown < SECTIONS),
		   "%d sections (%u closed): the reader took %ld KiB", SECTIONS, shut, grown);
	for (int order = NT_ORDER_STREAM; order <= NT_ORDER_TIME; order++)
		for (int ahead = 0; ahead <= 4; ahead += 4) {
			seen_list want = collect_all(open, (nt_order)order, ahead);
			seen_list got = collect_all(closed, (nt_order)order, ahead);
			assert_int_equal(got.n, want.n);
			assert_true(memcmp(got.v, want.v, want.n * sizeof(*want.v)) == 0);
			free(want.v);
			free(got.v);
		}
	uint64_t want_counts[256], got_counts[256];
	nt_reader_count_records(open, want_counts);
	nt_reader_count_records(closed, got_counts);
	assert_memory_equal(got_counts, want_counts, sizeof(want_counts));
	int (*const renders[])(nt_reader *, FILE *, const nt_render_options *) = {
		nt_render_text, nt_render_stats, nt_render_chrome, render_otlp_json
	};
	for (size_t k = 0; k < sizeof(renders) / sizeof(*renders); k++) {
		char *want = rendered(open, renders[k]), *got = rendered(closed, renders[k]);
		assert_string_equal(got, want);
		free(want);
		free(got);
	}
	/* a rendering opens a section while it reads it, and pins none */
	assert_int_equal(closed_sections(closed), shut);
	nt_archive_info hdr;
	for (uint32_t i = 0; i < SECTIONS; i += 97) { /* pinned: what it always was */
		assert_int_equal(nt_reader_section_header(closed, i, &hdr), 0);
		const nt_reader_section *s = nt_reader_section_at(closed, i);
		assert_non_null(s->reader);
		assert_int_equal(hdr.pid, s->info->pid);
		assert_int_equal(hdr.events_written, nt_reader_section_at(open, i)->info->events_written);
	}
	/* what a listing of sections reads without decoding a header (stats, text's losses) */
	uint32_t lossy = 0;
	for (uint32_t i = 0; i < SECTIONS; i++) {
		const nt_reader_section *c = nt_reader_section_peek(closed, i);
		assert_int_equal(nt_reader_section_header(closed, i, &hdr), 0);
		uint32_t notes = (hdr.events_dropped || hdr.dropped_rolling_full ||
				  hdr.dropped_durable_full || hdr.dropped_stopped ||
				  hdr.dropped_unsaved || hdr.events_overwritten
				  ? NT_HEADER_NOTE_LOSSES : 0) |
				 (hdr.save_errno ? NT_HEADER_NOTE_SAVE_STOPPED : 0) |
				 (hdr.blocking_timeout_us || hdr.blocked_waits
				  ? NT_HEADER_NOTE_BLOCKED : 0) |
				 (hdr.traceparent[0] ? NT_HEADER_NOTE_TRACEPARENT : 0);
		assert_int_equal(c->header_notes, notes);
		assert_int_equal(c->events_written, hdr.events_written);
		assert_int_equal(nt_reader_section_peek(open, i)->header_notes, notes);
		lossy += (notes & NT_HEADER_NOTE_LOSSES) != 0;
	}
	assert_true(lossy > 0 && lossy < SECTIONS); /* the killed circular process overwrote */
	char *want = rendered(open, nt_render_text), *got = rendered(closed, nt_render_text);
	assert_string_equal(got, want); /* pinned and closed sections mixed */
	free(want);
	free(got);
	nt_reader_close(open);
	nt_reader_close(closed);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_sections_start_when_reached),
		cmocka_unit_test(test_thousands_of_sections),
		cmocka_unit_test(test_sections_visited_one_by_one_share_a_decoder),
		cmocka_unit_test(test_closed_sections_read_as_open_ones),
		cmocka_unit_test(test_closed_section_damage_is_named),
		cmocka_unit_test(test_sections_opened_ahead_read_as_serially),
		cmocka_unit_test(test_open_shared_by_two_threads),
		cmocka_unit_test(test_open_counted_while_reading),
		cmocka_unit_test(test_stats_lines_on_two_threads),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
