/* nt_progress.c - the reader tools' progress line (nt_progress.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nt_progress.h"

#define NT_PROGRESS_INTERVAL_NS 100000000 /* 100 ms: often enough to look alive */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int nt_progress_wanted(void)
{
	return isatty(STDERR_FILENO) && !isatty(STDOUT_FILENO);
}

int nt_progress_wanted_on_stderr(void)
{
	return isatty(STDERR_FILENO);
}

static void show(nt_progress *p, int64_t t)
{
	fprintf(stderr, "\r%s: %.1f MB written, %.1f s\033[K", p->tool, (double)p->bytes / 1e6,
		(double)(t - p->start_ns) / 1e9);
	fflush(stderr);
	p->shown = 1;
	p->last_ns = t;
}

/* The counting stream's write: on to stdout, then the line when 100 ms have passed. A
 * short write is an error (-1, errno from stdout's write), which the renderer reports. */
static ssize_t write_through(void *cookie, const char *buf, size_t size)
{
	nt_progress *p = cookie;
	size_t n = fwrite(buf, 1, size, stdout);
	p->bytes += n;
	if (n < size)
		return -1;
	int64_t t = now_ns();
	if (t - p->last_ns >= NT_PROGRESS_INTERVAL_NS)
		show(p, t);
	return (ssize_t)n;
}

void nt_progress_start(nt_progress *p, const char *tool)
{
	memset(p, 0, sizeof(*p));
	p->tool = tool;
	p->start_ns = p->last_ns = now_ns();
	cookie_io_functions_t io = { .write = write_through };
	p->out = fopencookie(p, "w", io);
	if (p->out == NULL || setvbuf(p->out, NULL, _IONBF, 0) != 0) {
		if (p->out)
			fclose(p->out);
		p->out = stdout;
	}
}

void nt_progress_begin(nt_progress *p, const char *tool)
{
	memset(p, 0, sizeof(*p));
	p->tool = tool;
	p->out = stdout;
	p->start_ns = p->last_ns = now_ns();
}

void nt_progress_update(nt_progress *p, uint64_t done, uint64_t total)
{
	if (p->tool == NULL)
		return;
	if (done >= total) {
		nt_progress_end(p);
		return;
	}
	int64_t t = now_ns();
	if (t - p->last_ns < NT_PROGRESS_INTERVAL_NS)
		return;
	fprintf(stderr, "\r%s: %.1f of %.1f MB imported (%d%%), %.1f s\033[K", p->tool,
		(double)done / 1e6, (double)total / 1e6, (int)(100.0 * (double)done / (double)total),
		(double)(t - p->start_ns) / 1e9);
	fflush(stderr);
	p->shown = 1;
	p->last_ns = t;
}

void nt_progress_end(nt_progress *p)
{
	if (p->out != stdout) {
		fflush(p->out);
		fclose(p->out);
		p->out = stdout;
	}
	if (p->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->shown = 0;
	}
}
