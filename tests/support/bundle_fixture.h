/*
 * bundle_fixture.h - what test_bundle.c and test_bundle_many.c share (tests only): archives
 * that NPROC real processes recorded at the same time (setup, teardown), bundles written from
 * them by the tests' bundle writer (support/bundle_writer.h), a visit that checks the time
 * merge and its accounting, the frames' offsets, a damaged header, and the resident memory.
 */
#ifndef BUNDLE_FIXTURE_H
#define BUNDLE_FIXTURE_H

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "bundle_writer.h"
#include "nt_cmocka.h"
#include "nt_sanitizer_test.h"
#include "format/nt_record.h"
#include "nt_test_util.h"

#define NPROC 4
static char dir[256];                 /* private temporary directory */
static char paths[NPROC][300];        /* the processes' archives */
static uint8_t *arch[NPROC];
static size_t arch_size[NPROC];
static pid_t pids[NPROC];
/* Events each process made: 0 two threads x 300 (oneshot, finished), 1 one thread x 20000
 * in a small circular file arena, then SIGKILL; 2 one thread x 20000 streaming through a
 * small arena (saved stream + arena tail), then SIGKILL; 3 one thread x 50 (finished,
 * small: the last section, cut at every byte). */
static const uint64_t made[NPROC] = { 600, 20000, 20000, 50 };

__attribute__((unused)) static void emit(int n)
{
	for (int i = 0; i < n; i++) {
		NT_INSTANT("bundle", "tick", NT_U64("seq", (uint64_t)i));
		if (i % 25 == 0)
			usleep(100); /* the processes' events interleave in time */
	}
}

__attribute__((unused)) static void *second_thread(void *arg)
{
	emit(300);
	return arg;
}

__attribute__((unused)) static void record(int which)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = which == 1 || which == 2 ? 64 * 1024 : 1024 * 1024;
	cfg.chunk_size = 4096;
	if (which == 1 || which == 2) {
		cfg.mode = which == 1 ? NT_MODE_CIRCULAR : NT_MODE_STREAMING;
		cfg.path = paths[which];
	}
	if (nt_start(&cfg) != NT_OK)
		_exit(3);
	if (which == 0) {
		pthread_t th;
		pthread_create(&th, NULL, second_thread, NULL);
		emit(300);
		pthread_join(th, NULL);
	} else {
		emit((int)made[which]);
	}
	if (which == 1 || which == 2)
		raise(SIGKILL); /* its file arena (and saved stream) is its archive */
	_exit(nt_finish(paths[which]) == NT_OK ? 0 : 4);
}

__attribute__((unused)) static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	struct stat st;
	fstat(fileno(f), &st);
	uint8_t *p = malloc((size_t)st.st_size);
	*size = fread(p, 1, (size_t)st.st_size, f);
	fclose(f);
	return p;
}

__attribute__((unused)) static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/nt-bundle-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(dir) == NULL)
		return -1;
	for (int i = 0; i < NPROC; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/p%d.ntrace", dir, i);
		pids[i] = fork();
		if (pids[i] == 0)
			record(i);
	}
	for (int i = 0; i < NPROC; i++) {
		int st;
		waitpid(pids[i], &st, 0);
		if (i != 1 && i != 2 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
			return -1;
		if ((arch[i] = slurp(paths[i], &arch_size[i])) == NULL)
			return -1;
	}
	return 0;
}

__attribute__((unused)) static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < NPROC; i++) {
		free(arch[i]);
		if (!getenv("KEEP")) unlink(paths[i]);
	}
	if (!getenv("KEEP")) rmdir(dir);
	return 0;
}

static const char *const names[NPROC] = { "web", "db", "cache", "cron" };
static const uint8_t states[NPROC] = { NT_SECTION_FINISHED, NT_SECTION_KILLED,
				       NT_SECTION_TIMED_OUT, NT_SECTION_EXITED };
static const uint8_t modes[NPROC] = { NT_MODE_ONESHOT, NT_MODE_CIRCULAR, NT_MODE_STREAMING,
				      NT_MODE_ONESHOT };

/* Section i of a bundle being written: process kind k's numbers (its pid + i, provider
 * i + 1), its archive's bytes or `bytes` of the same size in their place. */
__attribute__((unused)) static void write_section(FILE *f, int i, int k, const uint8_t *bytes,
						   const char *message)
{
	bw_section sec = { bytes ? bytes : arch[k], arch_size[k], states[k], modes[k],
			   (uint32_t)pids[k] + i, (uint32_t)i + 1, names[k], message, 0 };
	bw_section_write(f, &sec);
}

/* A bundle of n sections, each process 0's archive or `bytes` (of the same size), in memory
 * (*size bytes; free() it). */
__attribute__((unused)) static char *copies_bundle(int n, const uint8_t *bytes, size_t *size)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, size);
	assert_non_null(f);
	bw_preamble(f, 1);
	for (int i = 0; i < n; i++)
		write_section(f, i, 0, bytes, "");
	bw_end(f, NT_SECTION_FINISHED, (uint32_t)n, "");
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* A bundle of the three archives (the second damaged by `damage`, if given), in memory. */
__attribute__((unused)) static uint8_t *bundle(size_t *size, int end,
					       void (*damage)(uint8_t *, size_t))
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, size);
	bw_preamble(f, 1);
	for (int i = 0; i < NPROC; i++) {
		uint8_t *copy = malloc(arch_size[i]);
		memcpy(copy, arch[i], arch_size[i]);
		if (damage && i == 1)
			damage(copy, arch_size[i]);
		bw_section s = { copy, arch_size[i], states[i], modes[i], (uint32_t)pids[i],
				 (uint32_t)i + 1, names[i], i == 1 ? "connection closed" : "", 0 };
		bw_section_write(f, &s);
		free(copy);
	}
	if (end)
		bw_end(f, NT_SECTION_FINISHED, NPROC, "");
	fclose(f);
	return (uint8_t *)buf;
}

typedef struct merge_check {
	uint64_t per_section[NPROC + 1];
	uint64_t events, errors, disorder, seq_disorder;
	int64_t last_ns;
	uint32_t last_section;
	int stream_order_broken;
	int64_t *last_seq; /* by global thread index */
	uint64_t first_error_offset;
} merge_check;

__attribute__((unused)) static int on_event(void *ctx, const nt_reader_event *e)
{
	merge_check *m = ctx;
	if (m->events && e->time_ns < m->last_ns)
		m->disorder++;
	if (m->events && e->thread->section < m->last_section)
		m->stream_order_broken = 1;
	m->last_ns = e->time_ns;
	m->last_section = e->thread->section;
	m->events++;
	if (e->thread->section <= NPROC)
		m->per_section[e->thread->section]++;
	int64_t seq = e->arg_count ? (int64_t)e->args[0].value.u64 : -1;
	if (seq <= m->last_seq[e->thread->index])
		m->seq_disorder++;
	m->last_seq[e->thread->index] = seq;
	return 0;
}

__attribute__((unused)) static void on_error(void *ctx, uint64_t off, const char *msg)
{
	merge_check *m = ctx;
	if (m->errors++ == 0)
		m->first_error_offset = off;
	assert_true(strlen(msg) > 0);
}

__attribute__((unused)) static merge_check visit(nt_reader *r, nt_order order)
{
	merge_check m;
	memset(&m, 0, sizeof(m));
	m.last_seq = malloc(sizeof(int64_t) * (nt_reader_thread_index_limit(r) + 1));
	for (uint32_t i = 0; i <= nt_reader_thread_index_limit(r); i++)
		m.last_seq[i] = -1;
	nt_reader_callbacks cb = { .on_event = on_event, .on_error = on_error };
	nt_reader_visit(r, &cb, &m, order, NT_ON_CORRUPT_SKIP);
	free(m.last_seq);
	m.last_seq = NULL;
	return m;
}

/* Every section's events: decoded + dropped + overwritten == made. */
__attribute__((unused)) static void check_accounting(nt_reader *r, const merge_check *m,
						      int skip)
{
	for (int i = 0; i < NPROC; i++) {
		if (i == skip)
			continue;
		const nt_reader_section *s = nt_reader_section_at(r, (uint32_t)i);
		assert_non_null(s->info);
		uint64_t lost = s->info->events_dropped + s->info->events_overwritten;
		assert_msg(m->per_section[i] + lost == made[i],
			   "section %d: decoded %llu + lost %llu != made %llu", i,
			   (unsigned long long)m->per_section[i], (unsigned long long)lost,
			   (unsigned long long)made[i]);
	}
}

__attribute__((unused)) static void smash_header(uint8_t *a, size_t n)
{
	(void)n;
	memset(a + 4, 0xA5, 24); /* the header FlatBuffer's root and vtable */
}

/* Offsets of the frames: the last SECTION's and the END's. */
__attribute__((unused)) static void frame_offsets(const uint8_t *b, size_t size,
						   uint64_t *last_section, uint64_t *end)
{
	uint64_t off = sizeof(nt_bundle_preamble);
	while (off + sizeof(nt_bundle_frame) <= size) {
		nt_bundle_frame f;
		memcpy(&f, b + off, sizeof(f));
		if (f.kind == NT_BUNDLE_END) {
			*end = off;
			return;
		}
		*last_section = off;
		off += nt_bundle_frame_head(&f) + NT_BUNDLE_PAD8(f.archive_size);
	}
}

/* The offset of the frame of section k (the END frame's for k = the count). */
__attribute__((unused)) static uint64_t frame_offset_of(const uint8_t *b, size_t size,
							size_t k)
{
	uint64_t off = sizeof(nt_bundle_preamble);
	for (; k > 0 && off + sizeof(nt_bundle_frame) <= size; k--) {
		nt_bundle_frame f;
		memcpy(&f, b + off, sizeof(f));
		off += nt_bundle_frame_head(&f) + NT_BUNDLE_PAD8(f.archive_size);
	}
	return off;
}


/* Sanitizers' allocators write shadow or metadata for the pages of every block, touched or
 * not: what an allocation costs in memory is measured only without them. So does glibc's
 * calloc when MALLOC_PERTURB_ is set (meson test sets it): it is turned off around the
 * measurement (mallopt M_PERTURB). */
#define NT_PLAIN_ALLOCATOR (!NT_SANITIZED)

/* Resident anonymous memory of this process, in KiB (/proc/self/status). */
__attribute__((unused)) static long rss_anon_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "RssAnon:", 8) == 0)
			kib = atol(line + 8);
	if (f != NULL)
		fclose(f);
	return kib;
}

#endif /* BUNDLE_FIXTURE_H */
