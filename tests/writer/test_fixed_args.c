/* test_fixed_args.c - the fast path for events with 1 to NT_FAST_ARGS_MAX fixed-size
 * arguments (nt_emit_fixed1_ ... nt_emit_fixed4_): every type at its edges reads back exactly
 * as the generic path writes it, across chunk boundaries, circular wraps, streaming, threads
 * and concurrent first use of a call site; the fast path is really taken, and declines what
 * it must. */
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "tests/support/nt_cmocka.h"
#include "tests/support/nt_finish_test.h"

static nt_config config(int mode, size_t buffer, size_t chunk)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	if (buffer)
		cfg.buffer_size = buffer;
	cfg.chunk_size = chunk;
	return cfg;
}

static void finish_and_read(const char *tag, test_trace *t)
{
	assert_msg(test_finish_and_read(tag, NT_ORDER_STREAM, t) == 0, "%s: %s", tag,
		   nt_last_error());
	assert_msg(t->errors == 0, "%s: the reader reports damage: %s", tag, t->first_error);
}

/* ---- every type at its edges, fast path against the generic path ------------------------ */

static const int64_t i64_edges[] = { 0, 1, -1, INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1,
				     (int64_t)INT32_MIN - 1, INT64_MAX, INT64_MIN };
static const uint64_t u64_edges[] = { 0, 1, UINT32_MAX, (uint64_t)UINT32_MAX + 1, UINT64_MAX };
static const double f64_edges[] = { 0.0, -0.0, 1.5, -DBL_MAX, DBL_MIN, INFINITY };
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Each combination twice through one fast call site (the first call registers it through the
 * generic path), then once through the generic path (a *_DYN event): three events. */
static void emit_edges(size_t k)
{
	int64_t i = i64_edges[k % N_OF(i64_edges)];
	uint64_t u = u64_edges[k % N_OF(u64_edges)];
	double f = f64_edges[k % N_OF(f64_edges)];
	int b = (int)(k % 3); /* 2 is "true" too */
	const void *p = k % 2 ? (const void *)&i64_edges[k % 4] : NULL;
	int32_t i32 = k % 2 ? INT32_MIN : INT32_MAX;
	uint32_t u32 = k % 2 ? UINT32_MAX : 0;
	for (int r = 0; r < 2; r++) {
		NT_INSTANT("fx", "one", NT_I64("i", i));
		NT_INSTANT("fx", "two", NT_U64("u", u), NT_F64("f", f));
		NT_INSTANT("fx", "three", NT_BOOL("b", b), NT_PTR("p", p), NT_I32("i32", i32));
		NT_INSTANT("fx", "four", NT_U32("u32", u32), NT_I64("i", i), NT_F64("f", f),
			   NT_U64("u", u));
	}
	NT_INSTANT_DYN("fx", "one", nt_arg_i64("i", i));
	NT_INSTANT_DYN("fx", "two", nt_arg_u64("u", u), nt_arg_f64("f", f));
	NT_INSTANT_DYN("fx", "three", nt_arg_bool("b", b), nt_arg_ptr("p", p),
		       nt_arg_i64("i32", i32));
	NT_INSTANT_DYN("fx", "four", nt_arg_u64("u32", u32), nt_arg_i64("i", i),
		       nt_arg_f64("f", f), nt_arg_u64("u", u));
}

static void assert_same_event(const test_event *a, const test_event *b, size_t at)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->nargs, b->nargs);
	for (uint32_t i = 0; i < a->nargs; i++) {
		assert_string_equal(a->names[i], b->names[i]);
		assert_msg(a->args[i].type == b->args[i].type,
			   "event %zu (%s) arg %u: type %u, the generic path wrote %u", at, a->name, i,
			   a->args[i].type, b->args[i].type);
		assert_msg(a->args[i].value.u64 == b->args[i].value.u64,
			   "event %zu (%s) arg %u: 0x%llx, the generic path wrote 0x%llx", at,
			   a->name, i, (unsigned long long)a->args[i].value.u64,
			   (unsigned long long)b->args[i].value.u64);
	}
}

/* The value the fast path must have recorded, checked against the inputs too (not only
 * against the generic path, which could share a mistake). */
static void assert_edges_event(const test_event *e, size_t k)
{
	int64_t i = i64_edges[k % N_OF(i64_edges)];
	uint64_t u = u64_edges[k % N_OF(u64_edges)];
	if (strcmp(e->name, "one") == 0) {
		assert_int_equal(e->args[0].type, i >= INT32_MIN && i <= INT32_MAX ? NT_ARG_INT32
										     : NT_ARG_INT64);
		assert_true(e->args[0].value.i64 == i);
	} else if (strcmp(e->name, "two") == 0) {
		assert_int_equal(e->args[0].type, u <= UINT32_MAX ? NT_ARG_UINT32 : NT_ARG_UINT64);
		assert_true(e->args[0].value.u64 == u);
		assert_int_equal(e->args[1].type, NT_ARG_DOUBLE);
		double f = f64_edges[k % N_OF(f64_edges)];
		assert_memory_equal(&e->args[1].value.f64, &f, sizeof(f)); /* -0.0 is not 0.0 */
	} else if (strcmp(e->name, "three") == 0) {
		assert_int_equal(e->args[0].type, NT_ARG_BOOL);
		assert_int_equal(e->args[0].value.u64, k % 3 != 0);
		assert_int_equal(e->args[1].type, NT_ARG_POINTER);
		assert_true(e->args[1].value.u64 ==
			    (uint64_t)(uintptr_t)(k % 2 ? (const void *)&i64_edges[k % 4] : NULL));
		assert_int_equal(e->args[2].type, NT_ARG_INT32);
		assert_true(e->args[2].value.i64 == (k % 2 ? INT32_MIN : INT32_MAX));
	} else {
		assert_string_equal(e->name, "four");
		assert_int_equal(e->args[0].type, NT_ARG_UINT32);
		assert_true(e->args[0].value.u64 == (k % 2 ? UINT32_MAX : 0));
		assert_true(e->args[1].value.i64 == i);
		assert_true(e->args[3].value.u64 == u);
	}
}

static void every_type_at_its_edges(void **state)
{
	(void)state;
	nt_config cfg = config(NT_MODE_ONESHOT, 0, 0);
	assert_int_equal(nt_start(&cfg), NT_OK);
	const size_t combos = 2 * 9 * 5 * 6; /* every i64, u64 and f64 edge meets the others */
	for (size_t k = 0; k < combos; k++)
		emit_edges(k);
	test_trace t;
	finish_and_read("fx-edges", &t);
	assert_int_equal(t.n, combos * 12);
	for (size_t k = 0; k < combos; k++) {
		const test_event *e = &t.ev[k * 12];
		for (size_t j = 0; j < 4; j++) {
			assert_same_event(&e[j], &e[8 + j], k * 12 + j);     /* first (generic) */
			assert_same_event(&e[4 + j], &e[8 + j], k * 12 + 4 + j); /* fast */
			assert_edges_event(&e[4 + j], k);
		}
	}
	test_trace_free(&t);
}

/* ---- strings ---------------------------------------------------------------------------- */

static void assert_same_strings(const test_event *a, const test_event *b, size_t at)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->nargs, b->nargs);
	for (uint32_t i = 0; i < a->nargs; i++) {
		assert_string_equal(a->names[i], b->names[i]);
		assert_int_equal(a->args[i].type, b->args[i].type);
		if (a->args[i].type == NT_ARG_STRING) {
			assert_int_equal(a->args[i].value.str.len, b->args[i].value.str.len);
			assert_msg(strcmp(a->strs[i], b->strs[i]) == 0, "event %zu arg %u: '%.40s' vs '%.40s'",
				   at, i, a->strs[i], b->strs[i]);
		} else {
			assert_true(a->args[i].value.u64 == b->args[i].value.u64);
		}
	}
}

/* Strings of every length to a word and beyond, NULL, and ones too long for one record
 * whole (the fast path leaves those to the generic path, which truncates and counts),
 * through the fast path and through a *_DYN event: the same events, the same counts. */
static void strings_read_back_as_the_generic_path_writes_them(void **state)
{
	(void)state;
	nt_config cfg = config(NT_MODE_ONESHOT, 0, 0);
	assert_int_equal(nt_start(&cfg), NT_OK);
	static char big[2200];
	memset(big, 'x', sizeof(big) - 1);
	const size_t lens[] = { 0, 1, 7, 8, 9, 15, 16, 17, 40, 2000, 2024, 2032, 2033, 2199 };
	const size_t cases = sizeof(lens) / sizeof(lens[0]) + 1;
	nt_stats before, after;
	for (size_t k = 0; k < cases; k++) {
		const char *s = k < cases - 1 ? big + sizeof(big) - 1 - lens[k] : NULL;
		nt_get_stats(&before);
		for (int r = 0; r < 2; r++) {
			NT_INSTANT("fx", "s1", NT_STR("s", s));
			NT_INSTANT("fx", "s3", NT_I64("i", (int64_t)k << 35), NT_STR("s", s),
				   NT_BOOL("b", 1));
		}
		nt_get_stats(&after);
		uint64_t fast_truncated = after.values_truncated - before.values_truncated;
		NT_INSTANT_DYN("fx", "s1", nt_arg_str("s", s));
		NT_INSTANT_DYN("fx", "s3", nt_arg_i64("i", (int64_t)k << 35), nt_arg_str("s", s),
			       nt_arg_bool("b", 1));
		nt_get_stats(&before);
		assert_int_equal(fast_truncated, 2 * (before.values_truncated - after.values_truncated));
	}
	test_trace t;
	finish_and_read("fx-strings", &t);
	assert_int_equal(t.n, cases * 6);
	for (size_t k = 0; k < cases; k++) {
		const test_event *e = &t.ev[k * 6];
		for (size_t j = 0; j < 2; j++) {
			assert_same_strings(&e[j], &e[4 + j], k * 6 + j);
			assert_same_strings(&e[2 + j], &e[4 + j], k * 6 + 2 + j);
		}
		if (k == cases - 1)
			assert_string_equal(e[2].strs[0], "(null)");
		else if (lens[k] < 2000)
			assert_int_equal(e[2].args[0].value.str.len, lens[k]);
	}
	test_trace_free(&t);
}

/* ---- the fast path is taken, and declines what it must ---------------------------------- */

static void fast_path_taken_after_first_use(void **state)
{
	(void)state;
	nt_config cfg = config(NT_MODE_ONESHOT, 0, 0);
	cfg.clock = NT_CLOCK_USE_TSC;
	if (nt_start(&cfg) != NT_OK) {
		print_message("SKIP: no invariant TSC here: the fast path always declines\n");
		skip();
	}
	static uint16_t names[3];
	static nt_callsite site = { 0, __LINE__, "fx", "direct", __FILE__, names, 2, NULL, 0, 0 };
	nt_arg a[2] = { nt_arg_i64("x", -5), nt_arg_u64("y", (uint64_t)1 << 40) };
	uint32_t d = nt_fixed_desc_(NT_KIND_INSTANT, a, 2);
	assert_int_not_equal(d, 0);
	/* Not registered yet: declined, nothing recorded; the generic path registers it. */
	assert_int_equal(nt_emit_fixed2_(&site, d, (uint64_t)-5, (uint64_t)1 << 40), 1);
	nt_emit_args_(&site, NT_KIND_INSTANT, a, 2);
	assert_int_equal(nt_emit_fixed2_(&site, d, (uint64_t)-5, (uint64_t)1 << 40), 0);
	/* Descriptors no macro makes: a kind that is no event is declined; the count is the
	 * function's own (N of nt_emit_fixedN_), whatever the descriptor says; a type without
	 * a fast path is recorded as None, as the generic path records an unknown type. */
	assert_int_equal(nt_emit_fixed2_(&site, (d & ~0xffu) | NT_KIND_STRING, 1, 2), 1);
	assert_int_equal(nt_emit_fixed1_(&site, d, 9), 0);
	uint32_t bad_type = (d & ~(0xfu << 16)) | (uint32_t)NT_ARG_JSON << 16;
	assert_int_equal(nt_emit_fixed2_(&site, bad_type, 7, (uint64_t)1 << 40), 0);
	/* A string among them takes the path that measures it. */
	uint32_t with_string = (d & ~(0xfu << 16)) | (uint32_t)NT_ARG_STRING << 16;
	assert_int_equal(nt_emit_fixed2_(&site, with_string, (uint64_t)(uintptr_t) "str", 3), 0);
	/* No fast path for a list, or for a fifth argument: no descriptor. */
	static const char *const list[] = { "a", NULL };
	nt_arg l = nt_arg_make_("l", NT_ARG_STRING_LIST);
	l.value.ptr = list;
	assert_int_equal(nt_fixed_desc_(NT_KIND_INSTANT, &l, 1), 0);
	nt_arg five[5] = { a[0], a[1], a[0], a[1], a[0] };
	assert_int_equal(nt_fixed_desc_(NT_KIND_INSTANT, five, 5), 0);
	test_trace t;
	finish_and_read("fx-direct", &t);
	assert_int_equal(t.n, 5);
	assert_same_event(&t.ev[1], &t.ev[0], 1);
	assert_int_equal(t.ev[1].args[0].type, NT_ARG_INT32);
	assert_true(t.ev[1].args[0].value.i64 == -5);
	assert_int_equal(t.ev[1].args[1].type, NT_ARG_UINT64);
	assert_int_equal(t.ev[2].nargs, 1);
	assert_string_equal(t.ev[2].names[0], "x");
	assert_true(t.ev[2].args[0].value.i64 == 9);
	/* The reader keeps None arguments out of the event: only "y" is left. */
	assert_int_equal(t.ev[3].nargs, 1);
	assert_string_equal(t.ev[3].names[0], "y");
	assert_true(t.ev[3].args[0].value.u64 == (uint64_t)1 << 40);
	assert_int_equal(t.ev[4].nargs, 2);
	assert_string_equal(t.ev[4].strs[0], "str");
	assert_true(t.ev[4].args[1].value.u64 == 3);
	test_trace_free(&t);
}

/* Without the TSC the fast path declines every event and the generic path records them. */
static void monotonic_clock_takes_the_generic_path(void **state)
{
	(void)state;
	nt_config cfg = config(NT_MODE_ONESHOT, 0, 0);
	cfg.clock = NT_CLOCK_USE_MONOTONIC;
	assert_int_equal(nt_start(&cfg), NT_OK);
	for (int64_t i = 0; i < 1000; i++)
		NT_INSTANT("fx", "mono", NT_I64("i", i), NT_I64("w", i << 40));
	test_trace t;
	finish_and_read("fx-mono", &t);
	assert_int_equal(t.n, 1000);
	for (int64_t i = 0; i < 1000; i++) {
		assert_true(t.ev[i].args[0].value.i64 == i);
		assert_true(t.ev[i].args[1].value.i64 == i << 40);
	}
	test_trace_free(&t);
}

/* ---- sequences: chunk boundaries, wraps, streaming -------------------------------------- */

/* Event k of a sequence: a record of 24, 32, 40 or 48 bytes (k decides which arguments are
 * wide), so records of every size meet every chunk's end. */
static void emit_seq(uint64_t k)
{
	int64_t wide = (int64_t)1 << 40;
	NT_INSTANT("fx", "seq", NT_U64("k", k), NT_I64("a", k & 1 ? wide + (int64_t)k : -(int64_t)k),
		   NT_I64("b", k & 2 ? -wide - (int64_t)k : (int64_t)k * 3));
}

/* The events of `t` are sequence events with consecutive k from their first; returns it. */
static uint64_t check_seq(const test_trace *t)
{
	assert_true(t->n > 0);
	uint64_t first = t->ev[0].args[0].value.u64;
	for (size_t j = 0; j < t->n; j++) {
		const test_event *e = &t->ev[j];
		uint64_t k = first + j;
		int64_t wide = (int64_t)1 << 40;
		assert_msg(e->nargs == 3 && e->args[0].value.u64 == k,
			   "event %zu: k %llu, expected %llu", j,
			   (unsigned long long)e->args[0].value.u64, (unsigned long long)k);
		assert_true(e->args[1].value.i64 == (k & 1 ? wide + (int64_t)k : -(int64_t)k));
		assert_true(e->args[2].value.i64 == (k & 2 ? -wide - (int64_t)k : (int64_t)k * 3));
		assert_int_equal(e->args[1].type, k & 1 ? NT_ARG_INT64 : NT_ARG_INT32);
	}
	return first;
}

static void records_cross_chunk_boundaries(void **state)
{
	(void)state;
	nt_config cfg = config(NT_MODE_ONESHOT, 1 << 20, 4096);
	assert_int_equal(nt_start(&cfg), NT_OK);
	const uint64_t n = 20000; /* about 700 KiB: some 180 chunks */
	for (uint64_t k = 0; k < n; k++)
		emit_seq(k);
	nt_stats st;
	nt_get_stats(&st);
	assert_int_equal(st.events_dropped, 0);
	assert_true(st.chunks_claimed > 100);
	test_trace t;
	finish_and_read("fx-chunks", &t);
	assert_int_equal(t.n, n);
	assert_int_equal(check_seq(&t), 0);
	assert_int_equal(t.gaps, 0);
	test_trace_free(&t);
}

static void circular_wrap_keeps_a_consecutive_tail(void **state)
{
	(void)state;
	nt_config cfg = config(NT_MODE_CIRCULAR, 64 * 1024, 4096);
	assert_int_equal(nt_start(&cfg), NT_OK);
	const uint64_t n = 100000;
	for (uint64_t k = 0; k < n; k++)
		emit_seq(k);
	nt_stats st;
	nt_get_stats(&st);
	assert_true(st.wraps > 0);
	test_trace t;
	finish_and_read("fx-circular", &t);
	uint64_t first = check_seq(&t);
	assert_int_equal(first + t.n, n); /* the newest events, up to the last */
	assert_int_equal(t.n + st.events_overwritten + st.events_dropped, n);
	test_trace_free(&t);
}

static void streaming_saves_every_event_or_counts_it(void **state)
{
	(void)state;
	char path[256];
	test_tmp_path(path, sizeof(path), "fx-stream");
	nt_config cfg = config(NT_MODE_STREAMING, 256 * 1024, 4096);
	cfg.path = path;
	assert_int_equal(nt_start(&cfg), NT_OK);
	const uint64_t n = 200000;
	for (uint64_t k = 0; k < n; k++) {
		emit_seq(k);
		if (k % 2000 == 0)
			usleep(200); /* let the saver keep up, mostly */
	}
	assert_int_equal(nt_finish(NULL), NT_OK);
	nt_stats st;
	nt_get_stats(&st);
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	unlink(path);
	assert_msg(t.errors == 0, "the reader reports damage: %s", t.first_error);
	/* Every event is read back or was dropped (a loaded machine starves the saver), as the
	 * writer's counters and the archive's header both say. The gaps are some of those: the
	 * last events dropped have no later event to announce them. */
	assert_msg(t.n + st.events_dropped == n && t.info.events_dropped == st.events_dropped,
		   "%zu read back, the writer dropped %llu, the archive says %llu, of %llu", t.n,
		   (unsigned long long)st.events_dropped,
		   (unsigned long long)t.info.events_dropped, (unsigned long long)n);
	assert_true(t.gap_events <= st.events_dropped);
	/* Values are right wherever a gap falls: each event's arguments follow from its k. */
	for (size_t j = 0; j < t.n; j++) {
		uint64_t k = t.ev[j].args[0].value.u64;
		assert_true(k < n && (j == 0 || k > t.ev[j - 1].args[0].value.u64));
		assert_true(t.ev[j].args[2].value.i64 ==
			    (k & 2 ? -((int64_t)1 << 40) - (int64_t)k : (int64_t)k * 3));
	}
	test_trace_free(&t);
}

/* ---- threads ----------------------------------------------------------------------------- */

#define THREADS 8
#define PER_THREAD 20000

typedef struct worker {
	pthread_barrier_t *go;
	uint32_t id;
} worker;

/* Every thread's first event is the call site's first use, all released at once: the site
 * and its argument names are registered once, and every event names them right. */
static void *worker_main(void *p)
{
	worker *w = p;
	pthread_barrier_wait(w->go);
	for (uint64_t k = 0; k < PER_THREAD; k++)
		NT_INSTANT("fx", "race", NT_U32("thread", w->id), NT_U64("k", k),
			   NT_F64("half", (double)k / 2), NT_BOOL("odd", k & 1));
	return NULL;
}

static void threads_and_concurrent_first_use(void **state)
{
	(void)state;
	nt_config cfg = config(NT_MODE_ONESHOT, 64u << 20, 0);
	assert_int_equal(nt_start(&cfg), NT_OK);
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, THREADS);
	pthread_t th[THREADS];
	worker w[THREADS];
	for (uint32_t i = 0; i < THREADS; i++) {
		w[i] = (worker){ &go, i };
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (uint32_t i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	nt_stats st;
	nt_get_stats(&st);
	assert_int_equal(st.events_dropped, 0);
	assert_int_equal(st.callsites, 1);
	test_trace t;
	finish_and_read("fx-threads", &t);
	assert_int_equal(t.n, (size_t)THREADS * PER_THREAD);
	uint64_t next[THREADS] = { 0 };
	for (size_t j = 0; j < t.n; j++) {
		const test_event *e = &t.ev[j];
		assert_int_equal(e->nargs, 4);
		assert_string_equal(e->names[0], "thread");
		assert_string_equal(e->names[1], "k");
		assert_string_equal(e->names[2], "half");
		assert_string_equal(e->names[3], "odd");
		uint64_t id = e->args[0].value.u64, k = e->args[1].value.u64;
		assert_true(id < THREADS);
		assert_msg(k == next[id], "thread %llu: k %llu after %llu", (unsigned long long)id,
			   (unsigned long long)k, (unsigned long long)next[id]);
		next[id]++;
		assert_true(e->args[2].value.f64 == (double)k / 2);
		assert_int_equal(e->args[3].value.u64, k & 1);
	}
	test_trace_free(&t);
}

/* A second session is a new generation: the site's cached state is stale, the fast path
 * declines, the generic path registers it again, and the names are the new archive's. */
static void a_new_session_registers_the_site_again(void **state)
{
	(void)state;
	for (int run = 0; run < 2; run++) {
		nt_config cfg = config(NT_MODE_ONESHOT, 0, 0);
		assert_int_equal(nt_start(&cfg), NT_OK);
		NT_INSTANT("fx", "padding", NT_I64("first_in_run_0_only", 1)); /* shifts indices */
		for (int64_t i = 0; i < 100; i++)
			NT_INSTANT("fx", "again", NT_I64("run", run), NT_I64("i", i));
		test_trace t;
		finish_and_read("fx-again", &t);
		assert_int_equal(t.n, 101);
		for (int64_t i = 0; i < 100; i++) {
			assert_string_equal(t.ev[1 + i].names[0], "run");
			assert_string_equal(t.ev[1 + i].names[1], "i");
			assert_true(t.ev[1 + i].args[0].value.i64 == run);
			assert_true(t.ev[1 + i].args[1].value.i64 == i);
		}
		test_trace_free(&t);
	}
}

/* A disabled category records nothing, first use or not. */
static void disabled_category_records_nothing(void **state)
{
	(void)state;
	nt_config cfg = config(NT_MODE_ONESHOT, 0, 0);
	cfg.categories = "on";
	assert_int_equal(nt_start(&cfg), NT_OK);
	for (int64_t i = 0; i < 10; i++) {
		NT_INSTANT("off", "x", NT_I64("i", i), NT_F64("f", 1.0));
		NT_INSTANT("on", "y", NT_I64("i", i), NT_F64("f", 1.0));
	}
	test_trace t;
	finish_and_read("fx-off", &t);
	assert_int_equal(t.n, 10);
	for (size_t j = 0; j < t.n; j++)
		assert_string_equal(t.ev[j].category, "on");
	test_trace_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_type_at_its_edges),
		cmocka_unit_test(strings_read_back_as_the_generic_path_writes_them),
		cmocka_unit_test(fast_path_taken_after_first_use),
		cmocka_unit_test(monotonic_clock_takes_the_generic_path),
		cmocka_unit_test(records_cross_chunk_boundaries),
		cmocka_unit_test(circular_wrap_keeps_a_consecutive_tail),
		cmocka_unit_test(streaming_saves_every_event_or_counts_it),
		cmocka_unit_test(threads_and_concurrent_first_use),
		cmocka_unit_test(a_new_session_registers_the_site_again),
		cmocka_unit_test(disabled_category_records_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
