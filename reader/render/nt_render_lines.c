/* nt_render_lines.c - a long list of lines, its later part formatted on a helper thread
 * into memory (nt_render_lines.h). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "reader/common/nt_helpers.h"
#include "nt_render_lines.h"

typedef struct lines_half {
	nt_line_fn *line;
	const void *ctx;
	uint32_t from, to;
	nt_out out; /* into `mem`, whose writes append to `bytes` */
	FILE *mem;
	char *bytes;
	size_t len, cap;
	int no_memory; /* a write failed: the half is not whole, whatever stdio says */
	pthread_t thread;
} lines_half;

/* The memory stream's write: appended, the buffer grown by realloc (open_memstream's
 * copied itself at each growth: its half took a third longer than this thread's). A
 * failure returns 0, as fopencookie(3) asks: glibc took a -1 from a direct write of a
 * large block as (size_t)-1 bytes written, and read past the caller's buffer. */
static ssize_t append(void *cookie, const char *buf, size_t n)
{
	lines_half *h = cookie;
	if (h->no_memory)
		return 0;
	if (n > h->cap - h->len) {
		size_t cap = h->cap ? h->cap : 256 * 1024;
		while (cap - h->len < n) {
			if (cap > SIZE_MAX / 2) {
				h->no_memory = 1;
				return 0;
			}
			cap *= 2;
		}
		char *bytes = realloc(h->bytes, cap);
		if (bytes == NULL) {
			h->no_memory = 1;
			return 0;
		}
		h->bytes = bytes;
		h->cap = cap;
	}
	memcpy(h->bytes + h->len, buf, n);
	h->len += n;
	return (ssize_t)n;
}

static void format_lines(nt_out *o, uint32_t from, uint32_t to, nt_line_fn *line,
			 const void *ctx)
{
	for (uint32_t i = from; i < to && !o->failed; i++)
		line(o, i, ctx);
}

static void *format_half(void *arg)
{
	lines_half *h = arg;
	format_lines(&h->out, h->from, h->to, h->line, h->ctx);
	nt_out_flush(&h->out); /* (into memory: only running out of it fails) */
	return NULL;
}

/* Whether this process may run a helper for n lines. */
static int split_worth_it(uint32_t n)
{
	int env = nt_helpers_env();
	if (env == 0)
		return 0;
	if (env > 0) /* forced (the tests) */
		return n >= 2;
	return n >= NT_RENDER_LINES_SPLIT && nt_helpers_cpus() > 1;
}

/* The helper formatting the later lines, started; NULL when there is none. */
static lines_half *start_half(uint32_t n, nt_line_fn *line, const void *ctx)
{
	lines_half *h = split_worth_it(n) ? calloc(1, sizeof(*h)) : NULL;
	if (h == NULL)
		return NULL;
	h->line = line;
	h->ctx = ctx;
	h->from = n / 2 + n / 32; /* its memory is new: the pages it writes fault in first */
	h->to = n;
	cookie_io_functions_t io = { .write = append };
	if ((h->mem = fopencookie(h, "w", io)) != NULL) {
		nt_out_init(&h->out, h->mem);
		if (pthread_create(&h->thread, NULL, format_half, h) == 0)
			return h;
		fclose(h->mem);
	}
	free(h->bytes);
	free(h);
	return NULL;
}

/* The helper joined and its lines written into o; 0 when it ran out of memory (nothing of
 * its half was written). */
static int join_half(nt_out *o, lines_half *h)
{
	pthread_join(h->thread, NULL);
	int whole = fclose(h->mem) == 0 && !h->out.failed && !h->no_memory;
	if (whole)
		nt_out_bytes(o, h->bytes, h->len);
	free(h->bytes);
	free(h);
	return whole;
}

void nt_render_lines(nt_out *o, uint32_t n, nt_line_fn *line, const void *ctx)
{
	lines_half *h = start_half(n, line, ctx);
	uint32_t mine = h != NULL ? h->from : n;
	format_lines(o, 0, mine, line, ctx);
	if (h != NULL && !join_half(o, h))
		format_lines(o, mine, n, line, ctx);
}
