/* nt_test_util.h - read an archive back into plain arrays for assertions (tests only).
 * Valid C and C++ (tests/writer/test_cpp_macros.cpp includes it). */
#ifndef NT_TEST_UTIL_H
#define NT_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanotrace/nanotrace_reader.h>

typedef struct test_event {
	uint8_t kind;
	char category[64], name[64], file[128];
	uint32_t line;
	uint32_t thread, tid;
	char thread_name[64];
	int64_t time_ns;
	uint64_t duration_ns;
	uint64_t offset; /* of the record in the archive */
	uint64_t id;     /* an async or flow event's id, and its scope (NT_ID_*) */
	uint8_t id_scope;
	uint32_t nargs;
	nt_reader_arg args[8]; /* args[i].name is names[i]; a string's value.str.ptr is strs[i] */
	char *strs[8];         /* string values, malloc'd whole; NULL for other types */
	char names[8][64];     /* copies of argument names */
} test_event;

typedef struct test_trace {
	test_event *ev;
	size_t n, cap;
	unsigned long errors;
	char first_error[600];
	uint64_t gaps, gap_events;
	uint32_t callsites; /* call sites the archive defines */
	nt_archive_info info;
	int visit_rc;
} test_trace;

static int test_collect(void *ctx, const nt_reader_event *e)
{
	test_trace *t = (test_trace *)ctx; /* a cast: also compiled as C++ */
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->ev = (test_event *)realloc(t->ev, t->cap * sizeof(*t->ev));
		if (t->ev == NULL)
			abort();
	}
	test_event *x = &t->ev[t->n++];
	memset(x, 0, sizeof(*x));
	x->kind = e->kind;
	snprintf(x->category, sizeof(x->category), "%s", e->category);
	snprintf(x->name, sizeof(x->name), "%s", e->name);
	snprintf(x->file, sizeof(x->file), "%s", e->file);
	x->line = e->line;
	x->thread = e->thread->index;
	x->tid = e->thread->tid;
	snprintf(x->thread_name, sizeof(x->thread_name), "%s", e->thread->name);
	x->time_ns = e->time_ns;
	x->duration_ns = e->duration_ns;
	x->offset = e->offset;
	x->id = e->id;
	x->id_scope = e->id_scope;
	x->nargs = e->arg_count < 8 ? e->arg_count : 8;
	for (uint32_t i = 0; i < x->nargs; i++) {
		x->args[i] = e->args[i];
		snprintf(x->names[i], sizeof(x->names[i]), "%s", e->args[i].name);
		x->args[i].name = x->names[i];
		if (e->args[i].type == NT_ARG_STRING || e->args[i].type == NT_ARG_STRING_REF) {
			/* Kept out of line: events are many (hundreds of thousands in a
			 * streaming test), strings few. */
			uint32_t len = e->args[i].value.str.len;
			x->strs[i] = (char *)malloc((size_t)len + 1);
			if (x->strs[i] == NULL)
				abort();
			memcpy(x->strs[i], e->args[i].value.str.ptr, len);
			x->strs[i][len] = '\0';
			x->args[i].value.str.ptr = x->strs[i];
		}
	}
	return 0;
}

static void test_gap(void *ctx, const nt_reader_gap *g)
{
	test_trace *t = (test_trace *)ctx;
	t->gaps++;
	t->gap_events += g->events;
}

static void test_error(void *ctx, uint64_t off, const char *msg)
{
	test_trace *t = (test_trace *)ctx;
	if (t->errors++ == 0)
		snprintf(t->first_error, sizeof(t->first_error), "byte %llu: %s",
			 (unsigned long long)off, msg);
}

/* Reads the opened archive `r` into `t` in `order`, and closes it; returns 0, or -1 when `r`
 * is NULL (the open failed: `err` says why). The trace may still report damage. */
__attribute__((unused)) static int test_read_reader(nt_reader *r, const nt_reader_error *err, nt_order order,
			    test_trace *t)
{
	memset(t, 0, sizeof(*t));
	if (r == NULL) {
		snprintf(t->first_error, sizeof(t->first_error), "%s", err->message);
		return -1;
	}
	t->info = *nt_reader_info(r);
	nt_reader_summary sum;
	nt_reader_get_summary(r, &sum);
	t->callsites = sum.callsites;
	nt_reader_callbacks cb; /* assigned, not designated: C++ before C++20 has none */
	memset(&cb, 0, sizeof(cb));
	cb.on_event = test_collect;
	cb.on_error = test_error;
	cb.on_gap = test_gap;
	t->visit_rc = nt_reader_visit(r, &cb, t, order, NT_ON_CORRUPT_SKIP);
	nt_reader_close(r);
	for (size_t j = 0; j < t->n; j++) /* the array moved as it grew */
		for (uint32_t i = 0; i < t->ev[j].nargs; i++)
			t->ev[j].args[i].name = t->ev[j].names[i];
	return 0;
}

/* Reads `path` in `order`; returns 0 on success (the trace may still report errors). */
__attribute__((unused)) static int test_read(const char *path, nt_order order, test_trace *t)
{
	nt_reader_error err;
	return test_read_reader(nt_reader_open(path, &err), &err, order, t);
}

/* The same for an archive in memory. */
__attribute__((unused)) static int test_read_memory(const void *data, size_t size,
						    nt_order order, test_trace *t)
{
	nt_reader_error err;
	return test_read_reader(nt_reader_open_memory(data, size, "memory", &err), &err, order,
				t);
}

__attribute__((unused)) static void test_trace_free(test_trace *t)
{
	for (size_t j = 0; j < t->n; j++)
		for (uint32_t i = 0; i < t->ev[j].nargs; i++)
			free(t->ev[j].strs[i]);
	free(t->ev);
	memset(t, 0, sizeof(*t));
}

/* A per-test temporary path; removed by the caller. */
__attribute__((unused)) static void test_tmp_path(char *buf, size_t cap, const char *tag)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(buf, cap, "%s/nt-test-%s-%d.ntrace", dir, tag, (int)getpid());
}

/* The whole file at `path`, malloc'd (the caller frees it), its size in *size; NULL when it
 * cannot be read whole. */
__attribute__((unused)) static uint8_t *test_slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	uint8_t *data = NULL;
	long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (data = (uint8_t *)malloc(n > 0 ? (size_t)n : 1)) != NULL &&
	    fread(data, 1, (size_t)n, f) != (size_t)n) {
		free(data);
		data = NULL;
	}
	fclose(f);
	*size = n > 0 ? (size_t)n : 0;
	return data;
}

#endif /* NT_TEST_UTIL_H */
