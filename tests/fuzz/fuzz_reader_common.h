/*
 * fuzz_reader_common.h - what the reader's libFuzzer targets share: a /dev/null sink for
 * renderers, callbacks that count events and ignore damage reports, a visit under one
 * order and policy, and a private directory under $TMPDIR (mkdtemp, removed at exit) for
 * targets that need files. Each target includes it once (its functions are static inline:
 * a target uses some of them).
 */
#ifndef NT_FUZZ_READER_COMMON_H
#define NT_FUZZ_READER_COMMON_H

#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nanotrace/nanotrace_reader.h>

static inline FILE *fuzz_sink(void)
{
	static FILE *devnull;
	if (devnull == NULL)
		devnull = fopen("/dev/null", "w");
	return devnull;
}

/* The renderer targets' one input step: the bytes opened as an archive from memory and, when
 * they open, handed with the sink to `render`; the reader is closed after. */
static inline int fuzz_render_input(const uint8_t *data, size_t size,
				    void (*render)(nt_reader *r, FILE *out))
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "fuzz", &err);
	FILE *out = fuzz_sink();
	if (r != NULL && out != NULL)
		render(r, out);
	nt_reader_close(r);
	return 0;
}

/* A renderer of trace-dump's (nt_render_text, nt_render_chrome, ...). */
typedef int (*fuzz_renderer)(nt_reader *r, FILE *out, const nt_render_options *opt);

/* Each of the `n` renderers in stream order, then each in time order. */
static inline void fuzz_render_both_orders(nt_reader *r, FILE *out, const fuzz_renderer *fns,
					   size_t n)
{
	nt_render_options opt;
	nt_render_options_init(&opt);
	for (int order = 0; order < 2; order++) {
		opt.order = order ? NT_ORDER_TIME : NT_ORDER_STREAM;
		for (size_t i = 0; i < n; i++)
			fns[i](r, out, &opt);
	}
}

static inline int fuzz_count_event(void *ctx, const nt_reader_event *e)
{
	(void)e;
	++*(uint64_t *)ctx;
	return 0;
}

static inline void fuzz_ignore_error(void *ctx, uint64_t offset, const char *message)
{
	(void)ctx;
	(void)offset;
	(void)message;
}

static inline uint64_t fuzz_visit(nt_reader *r, nt_order order, nt_corrupt_policy policy)
{
	nt_reader_callbacks cb = { 0 };
	cb.on_event = fuzz_count_event;
	cb.on_error = fuzz_ignore_error;
	uint64_t n = 0;
	nt_reader_visit(r, &cb, &n, order, policy);
	return n;
}

/* Where a target's scratch files go: /dev/shm when it is there (tmpfs: a file made and
 * removed per input never reaches a disk's journal, which on ext4 cost render_ctf and
 * bundle most of an execution), else $TMPDIR (absolute), else /tmp. */
static inline const char *fuzz_tmp_base(void)
{
	const char *tmp = getenv("TMPDIR");
	if (access("/dev/shm", W_OK | X_OK) == 0)
		return "/dev/shm";
	return tmp != NULL && tmp[0] == '/' && strlen(tmp) < 400 ? tmp : "/tmp";
}

/* "<fuzz_tmp_base()>/nt-fuzz-<what>-XXXXXX", made once (mode 0700 by mkdtemp) and removed
 * at exit with whatever plain files are left in it; NULL when it cannot be made. */
static char fuzz_dir_path[512];

static inline void fuzz_empty_dir(const char *path)
{
	DIR *d = opendir(path);
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

static inline void fuzz_remove_dir(void)
{
	fuzz_empty_dir(fuzz_dir_path);
	rmdir(fuzz_dir_path);
}

static inline const char *fuzz_private_dir(const char *what)
{
	static int tried;
	if (!tried) {
		tried = 1;
		snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/nt-fuzz-%s-XXXXXX",
			 fuzz_tmp_base(), what);
		if (mkdtemp(fuzz_dir_path) == NULL) {
			fuzz_dir_path[0] = '\0';
			return NULL;
		}
		atexit(fuzz_remove_dir);
	}
	return fuzz_dir_path[0] != '\0' ? fuzz_dir_path : NULL;
}

/* Splits an input into the parts between FUZZ_SPLIT markers (the seeds join files with it,
 * so mutations keep file boundaries): calls fn on each of at most max parts, in order. */
#define FUZZ_SPLIT "\n=NT-FUZZ-SPLIT=\n"
#define FUZZ_SPLIT_LEN (sizeof(FUZZ_SPLIT) - 1)

static inline size_t fuzz_split(const uint8_t *data, size_t size, const uint8_t **part,
				size_t *len, size_t max)
{
	size_t n = 0;
	while (n < max) {
		const uint8_t *mark = memmem(data, size, FUZZ_SPLIT, FUZZ_SPLIT_LEN);
		size_t l = mark != NULL ? (size_t)(mark - data) : size;
		part[n] = data;
		len[n++] = l;
		if (mark == NULL)
			break;
		data += l + FUZZ_SPLIT_LEN;
		size -= l + FUZZ_SPLIT_LEN;
	}
	return n;
}

#endif
