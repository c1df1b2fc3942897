/*
 * test_ahead.c - compressed chunks decompressed ahead on a helper thread
 * (reader/decode/nt_reader_ahead.c) give exactly what the serial visit gives: every event
 * (each field, each argument), gap, damage report (offset and message) and the visit's
 * result, in the same order, in stream and time order, with both damage policies, for
 * intact archives, a damaged CompressedChunk in the middle (its frame, its event count, its
 * framing), truncated files, a callback that stops the visit at any point, a reader visited
 * twice, and several archives read as one; with 1, 2 and 8 buffers (1 makes the helper
 * stall and the visit decompress for itself). The helper exists only when asked for or
 * when it pays (forced, a bundle's sections of one compressed chunk get none of their own); nt_reader_set_decompress_ahead() refuses what it does not know. The public
 * cursor (nt_reader_cursor_next, the orders' pull path) gives the same log as the visit in
 * every one of those cases, two cursors interleaved over one reader read as alone, and bad
 * cursor arguments are refused. TSan and
 * ASan+UBSan in the suite check the threads and that a stopped visit leaks nothing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "tests/support/nt_cmocka.h"
#include "tests/support/nt_test_util.h"
#include "tests/support/nt_finish_test.h"
#include "tests/support/nt_zchunk_test.h"

#define THREADS 4
#define ITERATIONS 6000 /* per thread; 3 events each */

static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	for (int i = 0; i < ITERATIONS; i++) {
		NT_BEGIN("ahead", "work", NT_I64("i", i), NT_U32("t", (uint32_t)id));
		NT_INSTANT("ahead", "tick", NT_STR("s", i % 3 ? "some text" : "x"), NT_F64("d", i / 7.0));
		NT_END("ahead", "work");
		if (i % 500 == 0)
			usleep(100); /* threads' chunks interleave in time and in the file */
	}
	return NULL;
}

/* THREADS threads' events in 8 KiB chunks, compressed by nt_finish(); its bytes. */
static uint8_t *record_archive(size_t *size)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = 8u << 20;
	cfg.chunk_size = 8192;
	cfg.compression_level = 1;
	void *args[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		args[i] = (void *)i;
	return test_record_threads(&cfg, "ahead", 0, THREADS, worker, args, size);
}

static uint8_t *archive;
static size_t archive_size;
static size_t zoffs[4096], nz; /* the CompressedChunk records' offsets */

static int setup(void **state)
{
	(void)state;
	archive = record_archive(&archive_size);
	size_t off = nt_test_records_start(archive), size;
	for (; off < archive_size && (size = nt_test_top_size(archive, archive_size, off)) != 0;
	     off += size)
		if (archive[off] == NT_KIND_ZCHUNK && nz < 4096)
			zoffs[nz++] = off;
	return nz >= 16 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(archive);
	return 0;
}

/* ---- what a visit delivers, as text ---------------------------------------------------- */

typedef struct vlog {
	FILE *f;
	char *text;
	size_t len;
	uint64_t events, stop_at; /* stop_at: on_event returns 1 at this event (0: never) */
	long threads_seen;        /* most threads of the process seen from on_event */
} vlog;

static long process_threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long n = -1;
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Threads: %ld", &n) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return n;
}

static void log_arg(FILE *f, const nt_reader_arg *a)
{
	fprintf(f, " %s:%u=", a->name, a->type);
	switch (a->type) {
	case NT_ARG_STRING:
	case NT_ARG_STRING_REF:
	case NT_ARG_JSON:
		fwrite(a->value.str.ptr, 1, a->value.str.len, f);
		break;
	case NT_ARG_STRING_LIST:
		fwrite(a->value.list.ptr, 1, a->value.list.bytes, f);
		break;
	default:
		fprintf(f, "%llx", (unsigned long long)a->value.u64);
	}
}

static int log_event(void *ctx, const nt_reader_event *e)
{
	vlog *l = ctx;
	fprintf(l->f, "E %u %s %s %s:%u cs%u/%u t%u %llu %lld %lld %llu @%llu", e->kind, e->category,
		e->name, e->file, e->line, e->callsite, e->callsite_repo, e->thread->index,
		(unsigned long long)e->ticks, (long long)e->time_ns, (long long)e->wall_ns,
		(unsigned long long)e->duration_ns, (unsigned long long)e->offset);
	for (uint32_t i = 0; i < e->arg_count; i++)
		log_arg(l->f, &e->args[i]);
	fputc('\n', l->f);
	if (l->events % 4096 == 0) {
		long n = process_threads();
		if (n > l->threads_seen)
			l->threads_seen = n;
	}
	return ++l->events == l->stop_at;
}

static void log_gap(void *ctx, const nt_reader_gap *g)
{
	vlog *l = ctx;
	fprintf(l->f, "G t%u %llu %lld @%llu\n", g->thread->index, (unsigned long long)g->events,
		(long long)g->time_ns, (unsigned long long)g->offset);
}

static void log_error(void *ctx, uint64_t off, const char *msg)
{
	vlog *l = ctx;
	fprintf(l->f, "X @%llu %s\n", (unsigned long long)off, msg);
}

/* An empty log for one visit of `r` with `ahead` (nt_reader_set_decompress_ahead). */
static void log_open(nt_reader *r, int ahead, uint64_t stop_at, vlog *l)
{
	memset(l, 0, sizeof(*l));
	l->stop_at = stop_at;
	l->f = open_memstream(&l->text, &l->len);
	assert_non_null(l->f);
	assert_int_equal(nt_reader_set_decompress_ahead(r, ahead), 0);
}

/* One visit of `r` with `ahead` (nt_reader_set_decompress_ahead), into *l (free l->text). */
static void visit_log(nt_reader *r, int ahead, nt_order order, nt_corrupt_policy policy,
		      uint64_t stop_at, vlog *l)
{
	log_open(r, ahead, stop_at, l);
	nt_reader_callbacks cb = { .on_event = log_event, .on_error = log_error, .on_gap = log_gap };
	int rc = nt_reader_visit(r, &cb, l, order, policy);
	fprintf(l->f, "R %d\n", rc);
	fclose(l->f);
}

/* The same, pulled through the public cursor (nt_reader_cursor_next) instead of pushed:
 * nt_reader_visit's loop, by the orders' other path. */
static void cursor_log(nt_reader *r, int ahead, nt_order order, nt_corrupt_policy policy,
		       uint64_t stop_at, vlog *l)
{
	log_open(r, ahead, stop_at, l);
	nt_reader_callbacks cb = { .on_error = log_error, .on_gap = log_gap };
	nt_reader_cursor *c = nt_reader_cursor_open(r, &cb, l, order, policy);
	assert_non_null(c);
	const nt_reader_event *ev;
	int rc;
	while ((rc = nt_reader_cursor_next(c, &ev)) > 0)
		if (log_event(l, ev)) {
			rc = 1;
			break;
		}
	if (rc <= 0) { /* done: it says so again */
		assert_int_equal(nt_reader_cursor_next(c, &ev), rc);
		assert_null(ev);
	}
	nt_reader_cursor_close(c);
	fprintf(l->f, "R %d\n", rc);
	fclose(l->f);
}

static void assert_cursor_same(nt_reader *r, int ahead, nt_order o, nt_corrupt_policy p,
			       uint64_t stop_at, const vlog *serial, const char *what)
{
	vlog l;
	cursor_log(r, ahead, o, p, stop_at, &l);
	assert_msg(l.len == serial->len && memcmp(l.text, serial->text, l.len) == 0,
		   "%s: order %d policy %d, %d ahead, cursor: %zu bytes of log, visit %zu", what,
		   (int)o, (int)p, ahead, l.len, serial->len);
	free(l.text);
}

/* Reads `data` serially and with 1, 2 and 8 buffers ahead, in both orders and with both
 * policies (and stopping at `stop_at` when not 0): the same text each time. Returns how
 * many events the serial stream-order visit delivered. */
static uint64_t assert_same_as_serial(const uint8_t *data, size_t size, uint64_t stop_at,
				      const char *what)
{
	static const int aheads[] = { 1, 2, 8 };
	uint64_t events = 0;
	for (int o = 0; o < 2; o++)
		for (int p = 0; p < 2; p++) {
			nt_reader *r = nt_reader_open_memory(data, size, "ahead", NULL);
			if (r == NULL)
				return 0; /* not an archive: no visit to compare */
			vlog serial, l;
			visit_log(r, NT_READER_AHEAD_OFF, (nt_order)o, (nt_corrupt_policy)p, stop_at, &serial);
			if (o == 0 && p == 1)
				events = serial.events;
			assert_cursor_same(r, NT_READER_AHEAD_OFF, (nt_order)o, (nt_corrupt_policy)p,
					   stop_at, &serial, what);
			assert_cursor_same(r, 2, (nt_order)o, (nt_corrupt_policy)p, stop_at, &serial,
					   what);
			for (int a = 0; a < 3; a++) {
				visit_log(r, aheads[a], (nt_order)o, (nt_corrupt_policy)p, stop_at, &l);
				assert_msg(l.len == serial.len && memcmp(l.text, serial.text, l.len) == 0,
					   "%s: order %d policy %d, %d buffers ahead: %zu bytes of log, "
					   "serially %zu", what, o, p, aheads[a], l.len, serial.len);
				free(l.text);
			}
			free(serial.text);
			nt_reader_close(r);
		}
	return events;
}

/* ---- the tests ------------------------------------------------------------------------ */

static void intact_archive_reads_the_same(void **state)
{
	(void)state;
	uint64_t n = assert_same_as_serial(archive, archive_size, 0, "intact");
	assert_int_equal(n, (uint64_t)THREADS * ITERATIONS * 3);
}

/* The chunk in the middle damaged three ways: its zstd frame, its header copy's event count
 * (a count lie found at the chunk's end), and its record framing (a resync). */
static void damaged_middle_chunk_reads_the_same(void **state)
{
	(void)state;
	uint8_t *copy = malloc(archive_size);
	size_t z = zoffs[nz / 2];
	for (int how = 0; how < 3; how++) {
		memcpy(copy, archive, archive_size);
		if (how == 0) {
			for (size_t i = 80; i < 120; i++)
				copy[z + i] ^= 0x5a;
		} else if (how == 1) {
			nt_zchunk_record *h = (nt_zchunk_record *)(void *)(copy + z);
			h->chunk.event_count += 3;
		} else {
			copy[z + 1] = 0xff; /* a record size running past the chunk */
		}
		vlog serial;
		nt_reader *r = nt_reader_open_memory(copy, archive_size, "ahead", NULL);
		assert_non_null(r);
		visit_log(r, NT_READER_AHEAD_OFF, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP, 0, &serial);
		nt_reader_close(r);
		assert_msg(strstr(serial.text, "\nX @") != NULL, "damage %d is reported", how);
		free(serial.text);
		char what[32];
		snprintf(what, sizeof(what), "damage %d", how);
		assert_same_as_serial(copy, archive_size, 0, what);
	}
	free(copy);
}

/* Cut inside CompressedChunks (early, middle, last) and between records. */
static void truncated_archive_reads_the_same(void **state)
{
	(void)state;
	size_t cuts[] = { zoffs[1] + 40, zoffs[nz / 2] + 100, zoffs[nz / 2], zoffs[nz - 1] + 9,
			  archive_size - 8, archive_size * 2 / 3 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		char what[48];
		snprintf(what, sizeof(what), "cut at %zu", cuts[i]);
		uint8_t *copy = malloc(cuts[i]);
		memcpy(copy, archive, cuts[i]);
		assert_same_as_serial(copy, cuts[i], 0, what);
		free(copy);
	}
}

/* A callback that stops: at the first event, in the middle, at the last. */
static void stop_from_callback_reads_the_same(void **state)
{
	(void)state;
	uint64_t all = (uint64_t)THREADS * ITERATIONS * 3;
	uint64_t at[] = { 1, 2, 5000, all / 2, all - 1, all };
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		char what[48];
		snprintf(what, sizeof(what), "stop at event %llu", (unsigned long long)at[i]);
		assert_int_equal(assert_same_as_serial(archive, archive_size, at[i], what), at[i]);
	}
}

/* One reader visited again and again, switching between serial and ahead. */
static void visiting_twice_reads_the_same(void **state)
{
	(void)state;
	nt_reader *r = nt_reader_open_memory(archive, archive_size, "ahead", NULL);
	assert_non_null(r);
	vlog first, l;
	visit_log(r, NT_READER_AHEAD_OFF, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP, 0, &first);
	for (int i = 0; i < 4; i++) {
		visit_log(r, i % 2 ? NT_READER_AHEAD_OFF : 4, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP,
			  i == 2 ? 77 : 0, &l);
		if (i != 2)
			assert_true(l.len == first.len && memcmp(l.text, first.text, l.len) == 0);
		free(l.text);
	}
	free(first.text);
	nt_reader_close(r);
}

/* A private temporary file for archive i of a set named `set` (its path in path[256],
 * for names[i] too), open for writing. */
static FILE *archive_file(char path[256], const char **name, const char *set, int i)
{
	char tag[32];
	snprintf(tag, sizeof(tag), "%s%d", set, i);
	test_tmp_path(path, 256, tag);
	*name = path;
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	return f;
}

/* Several archives as one reader (nt_reader_open_many): both orders, both policies. */
static void many_archives_read_the_same(void **state)
{
	(void)state;
	char paths[3][256];
	const char *names[3];
	for (int i = 0; i < 3; i++) {
		FILE *f = archive_file(paths[i], &names[i], "ahead-many", i);
		/* the second is damaged in the middle, the third cut short */
		size_t n = i == 2 ? archive_size * 3 / 5 : archive_size;
		for (size_t k = 0; k < n; k++)
			fputc(i == 1 && k >= zoffs[nz / 2] + 64 && k < zoffs[nz / 2] + 96
				      ? archive[k] ^ 0x33 : archive[k], f);
		fclose(f);
	}
	for (int o = 0; o < 2; o++)
		for (int p = 0; p < 2; p++) {
			vlog serial, l;
			nt_reader *r = nt_reader_open_many(names, 3, NULL);
			assert_non_null(r);
			visit_log(r, NT_READER_AHEAD_OFF, (nt_order)o, (nt_corrupt_policy)p, 0, &serial);
			assert_cursor_same(r, NT_READER_AHEAD_OFF, (nt_order)o, (nt_corrupt_policy)p, 0,
					   &serial, "many");
			for (int a = 1; a <= 8; a *= 8) {
				visit_log(r, a, (nt_order)o, (nt_corrupt_policy)p, 0, &l);
				assert_msg(l.len == serial.len && memcmp(l.text, serial.text, l.len) == 0,
					   "many: order %d policy %d, %d ahead", o, p, a);
				free(l.text);
			}
			free(serial.text);
			nt_reader_close(r);
		}
	for (int i = 0; i < 3; i++)
		unlink(paths[i]);
}

/* Two cursors over one reader, interleaved, each read as a visit alone reads it; a cursor
 * closed early (its helper running) leaves nothing behind; bad arguments are refused. */
static void cursors_interleave_and_refuse(void **state)
{
	(void)state;
	nt_reader *r = nt_reader_open_memory(archive, archive_size, "ahead", NULL);
	assert_non_null(r);
	vlog want[2], got[2];
	for (int o = 0; o < 2; o++) {
		visit_log(r, 2, (nt_order)o, NT_ON_CORRUPT_STOP, 0, &want[o]);
		memset(&got[o], 0, sizeof(got[o]));
		got[o].f = open_memstream(&got[o].text, &got[o].len);
	}
	nt_reader_callbacks cb = { .on_error = log_error, .on_gap = log_gap };
	nt_reader_cursor *c[2] = { nt_reader_cursor_open(r, &cb, &got[0], NT_ORDER_STREAM,
							 NT_ON_CORRUPT_STOP),
				   nt_reader_cursor_open(r, &cb, &got[1], NT_ORDER_TIME,
							 NT_ON_CORRUPT_STOP) };
	int rc[2] = { 1, 1 };
	const nt_reader_event *ev;
	while (rc[0] > 0 || rc[1] > 0)
		for (int o = 0; o < 2; o++)
			if (rc[o] > 0 && (rc[o] = nt_reader_cursor_next(c[o], &ev)) > 0)
				log_event(&got[o], ev);
	for (int o = 0; o < 2; o++) {
		nt_reader_cursor_close(c[o]);
		fprintf(got[o].f, "R %d\n", rc[o]);
		fclose(got[o].f);
		assert_int_equal(got[o].len, want[o].len);
		assert_memory_equal(got[o].text, want[o].text, want[o].len);
		free(got[o].text);
		free(want[o].text);
	}
	nt_reader_cursor *early = nt_reader_cursor_open(r, NULL, NULL, NT_ORDER_TIME,
							NT_ON_CORRUPT_SKIP);
	assert_int_equal(nt_reader_cursor_next(early, &ev), 1);
	assert_non_null(ev);
	nt_reader_cursor_close(early);
	assert_null(nt_reader_cursor_open(NULL, NULL, NULL, NT_ORDER_TIME, NT_ON_CORRUPT_STOP));
	assert_null(nt_reader_cursor_open(r, NULL, NULL, (nt_order)2, NT_ON_CORRUPT_STOP));
	assert_null(nt_reader_cursor_open(r, NULL, NULL, NT_ORDER_TIME, (nt_corrupt_policy)7));
	assert_int_equal(nt_reader_cursor_next(NULL, &ev), -1);
	nt_reader_cursor_close(NULL);
	nt_reader_close(r);
}

/* The helper is a thread of its own while the visit runs, and only when asked for: by the
 * setter, or by NANOTRACE_READER_AHEAD when the setter leaves it to the environment. */
static void helper_runs_only_when_asked(void **state)
{
	(void)state;
	nt_reader *r = nt_reader_open_memory(archive, archive_size, "ahead", NULL);
	assert_non_null(r);
	long before = process_threads();
	vlog l;
	visit_log(r, 2, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP, 0, &l);
	assert_int_equal(l.threads_seen, before + 1);
	free(l.text);
	visit_log(r, NT_READER_AHEAD_OFF, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP, 0, &l);
	assert_int_equal(l.threads_seen, before);
	free(l.text);
	setenv("NANOTRACE_READER_AHEAD", "off", 1);
	visit_log(r, NT_READER_AHEAD_AUTO, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP, 0, &l);
	assert_int_equal(l.threads_seen, before);
	free(l.text);
	setenv("NANOTRACE_READER_AHEAD", "3", 1);
	visit_log(r, NT_READER_AHEAD_AUTO, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP, 0, &l);
	assert_int_equal(l.threads_seen, before + 1);
	free(l.text);
	unsetenv("NANOTRACE_READER_AHEAD");
	assert_int_equal(process_threads(), before); /* joined */
	assert_int_equal(nt_reader_set_decompress_ahead(r, -2), -1);
	assert_int_equal(nt_reader_set_decompress_ahead(r, NT_READER_AHEAD_MAX_BUFFERS + 1), -1);
	assert_int_equal(nt_reader_set_decompress_ahead(r, NT_READER_AHEAD_MAX_BUFFERS), 0);
	assert_int_equal(nt_reader_set_decompress_ahead(NULL, 1), -1);
	nt_reader_close(r);
}

static void *few_events(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20; i++) {
		NT_BEGIN("ahead", "short", NT_I64("i", i));
		NT_END("ahead", "short");
	}
	return NULL;
}

/* The threads a stream-order visit of `names` (forced to decompress ahead) runs beside it,
 * counted at every 4,096th event from the first. */
static long threads_beside(const char *const *names, size_t n)
{
	nt_reader *r = nt_reader_open_many(names, n, NULL);
	assert_non_null(r);
	long before = process_threads();
	vlog l;
	visit_log(r, 2, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP, 0, &l);
	free(l.text);
	nt_reader_close(r);
	assert_int_equal(process_threads(), before); /* joined */
	return l.threads_seen - before;
}

/* Many processes of a compressed chunk or two each: forced, the visit decompresses ahead
 * with one helper for the sections (nt_reader_section_ahead.c, from 64 of them), never a
 * thread per section (a thread started and joined for each one's chunk made 20,000 sections
 * 33 times slower); a section of many chunks still has a helper of its own. */
static void sections_of_one_chunk_start_no_helper(void **state)
{
	(void)state;
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.compression_level = 1;
	void *arg = NULL;
	size_t small_size;
	uint8_t *small = test_record_threads(&cfg, "ahead-small", 0, 1, few_events, &arg,
					     &small_size);
	nt_reader *one = nt_reader_open_memory(small, small_size, "small", NULL);
	assert_non_null(one);
	uint64_t zchunks, plain;
	nt_reader_get_compression(one, &zchunks, &plain);
	nt_reader_close(one);
	assert_int_equal(zchunks, 1);
	char paths[4][256];
	const char *names[4];
	for (int i = 0; i < 4; i++) {
		FILE *f = archive_file(paths[i], &names[i], "ahead-section", i);
		/* the first one is the archive of many chunks (its helper starts before its first
		 * event, where the log counts the threads) */
		assert_int_equal(fwrite(i > 0 ? small : archive, 1, i > 0 ? small_size : archive_size,
					f), i > 0 ? small_size : archive_size);
		assert_int_equal(fclose(f), 0);
	}
	assert_int_equal(threads_beside(names + 1, 3), 0);
	assert_int_equal(threads_beside(names, 4), 1);
	for (int i = 0; i < 4; i++)
		unlink(paths[i]);
	free(small);
}

/* A value of NANOTRACE_READER_AHEAD that is none: one line on stderr naming it, however
 * many visits, and the default rule. In a child, whose stderr is a pipe read here. */
static void bad_environment_is_reported_once(void **state)
{
	(void)state;
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		setenv("NANOTRACE_READER_AHEAD", "lots", 1);
		nt_reader *r = nt_reader_open_memory(archive, archive_size, "ahead", NULL);
		vlog l;
		for (int i = 0; r != NULL && i < 3; i++) {
			visit_log(r, NT_READER_AHEAD_AUTO, NT_ORDER_STREAM, NT_ON_CORRUPT_SKIP, 0, &l);
			free(l.text);
		}
		_exit(r == NULL || l.events != (uint64_t)THREADS * ITERATIONS * 3);
	}
	close(fd[1]);
	char buf[1024] = { 0 };
	size_t n = 0;
	ssize_t k;
	while (n < sizeof(buf) - 1 && (k = read(fd[0], buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)k;
	close(fd[0]);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_msg(strstr(buf, "NANOTRACE_READER_AHEAD=\"lots\"") != NULL, "stderr: %s", buf);
	char *nl = strchr(buf, '\n');
	assert_msg(nl != NULL && nl[1] == '\0', "one line, not: %s", buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(intact_archive_reads_the_same),
		cmocka_unit_test(damaged_middle_chunk_reads_the_same),
		cmocka_unit_test(truncated_archive_reads_the_same),
		cmocka_unit_test(stop_from_callback_reads_the_same),
		cmocka_unit_test(visiting_twice_reads_the_same),
		cmocka_unit_test(many_archives_read_the_same),
		cmocka_unit_test(cursors_interleave_and_refuse),
		cmocka_unit_test(helper_runs_only_when_asked),
		cmocka_unit_test(sections_of_one_chunk_start_no_helper),
		cmocka_unit_test(bad_environment_is_reported_once),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
