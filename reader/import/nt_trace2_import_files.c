/*
 * nt_trace2_import_files.c - which lines go into the archive, in which order: one EVENT
 * stream as it is, or several (files, the per-process files of a git directory target)
 * interleaved as if the processes had written one shared file.
 *
 * Several streams are merged, not sorted: a stream's own order is information (a shared
 * file's times go backwards across processes), so each keeps it, and the next line is the
 * earliest of the streams' next lines. The merge needs every line's time up front, so the
 * lines are parsed twice (once for "time"); a single stream skips that and streams through.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reader/common/nt_grow.h"
#include "nt_trace2_import.h"

/* The next line of [*p, end) without its "\n" or "\r\n"; returns 0 at the end. */
static int next_line(const char **p, const char *end, const char **text, size_t *n)
{
	if (*p >= end)
		return 0;
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	const char *eol = nl ? nl : end;
	*text = *p;
	*n = (size_t)(eol - *p);
	if (*n > 0 && (*p)[*n - 1] == '\r')
		(*n)--;
	*p = nl ? nl + 1 : end;
	return 1;
}

#define PROGRESS_STEP (1u << 20) /* input bytes between two progress calls */

static int import_line(nt_importer *im, const nt_trace2_input *in, unsigned long no,
		       const char *text, size_t n)
{
	im->input = in->name;
	im->line = no;
	im->done_bytes += n + 1;
	if (im->progress != NULL && im->done_bytes >= im->next_report) {
		im->progress(im->progress_ctx, im->done_bytes, im->total_bytes);
		im->next_report = im->done_bytes + PROGRESS_STEP;
	}
	return nt_imp_blank(text, n) || nt_imp_line(im, text, n);
}

typedef struct stream_line {
	const char *text;
	size_t n;
	unsigned long no;
	int64_t us; /* its time, or the time of the line before it */
} stream_line;

typedef struct stream {
	const nt_trace2_input *in;
	size_t index;        /* in the caller's list */
	stream_line *lines;
	size_t nlines, next;
	int64_t first_us;    /* its first time; INT64_MAX for none (such a stream goes last) */
} stream;

static int split_stream(stream *s, unsigned long *lines)
{
	const char *p = s->in->data, *end = p ? p + s->in->size : NULL, *text;
	size_t n, cap = 0;
	unsigned long no = 0;
	int64_t last = INT64_MIN;
	s->first_us = INT64_MAX;
	while (next_line(&p, end, &text, &n)) {
		no++;
		if (nt_imp_blank(text, n))
			continue;
		if (!nt_grow(&s->lines, &cap, s->nlines + 1, sizeof(*s->lines)))
			return 0;
		int64_t us;
		if (nt_imp_line_time(text, n, &us)) {
			last = us;
			if (s->first_us == INT64_MAX)
				s->first_us = us;
		}
		s->lines[s->nlines++] = (stream_line){ text, n, no, last };
	}
	*lines += no;
	/* Lines before the first time go with it. */
	for (size_t i = 0; i < s->nlines && s->lines[i].us == INT64_MIN; i++)
		s->lines[i].us = s->first_us;
	return 1;
}

static int by_first_time(const void *a, const void *b)
{
	const stream *x = a, *y = b;
	if (x->first_us != y->first_us)
		return x->first_us < y->first_us ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Does stream a's next line go before stream b's? Ties: the stream ranked first. */
static int before(const stream *s, size_t a, size_t b)
{
	int64_t ta = s[a].lines[s[a].next].us, tb = s[b].lines[s[b].next].us;
	return ta < tb || (ta == tb && a < b);
}

static void sift_down(const stream *s, size_t *heap, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && before(s, heap[l], heap[m]))
			m = l;
		if (r < n && before(s, heap[r], heap[m]))
			m = r;
		if (m == i)
			return;
		size_t t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/* The streams (ranked by first time) merged through a binary heap of their next lines. */
static int import_merged(nt_importer *im, stream *s, size_t n)
{
	size_t *heap = malloc((n ? n : 1) * sizeof(*heap)), h = 0;
	if (heap == NULL)
		return nt_imp_oom(im);
	for (size_t i = 0; i < n; i++)
		if (s[i].nlines > 0)
			heap[h++] = i;
	for (size_t i = h / 2; i-- > 0;)
		sift_down(s, heap, h, i);
	int ok = 1;
	while (ok && h > 0) {
		stream *top = &s[heap[0]];
		const stream_line *l = &top->lines[top->next++];
		ok = import_line(im, top->in, l->no, l->text, l->n);
		if (top->next == top->nlines)
			heap[0] = heap[--h];
		sift_down(s, heap, h, 0);
	}
	free(heap);
	return ok;
}

/* Imports every line of the inputs; *lines counts them all, blank ones included. */
static int import_all(nt_importer *im, const nt_trace2_input *inputs, size_t n,
		      unsigned long *lines)
{
	if (n == 1) {
		const char *p = inputs[0].data, *end = p ? p + inputs[0].size : NULL, *text;
		size_t len;
		unsigned long no = 0;
		int ok = 1;
		while (ok && next_line(&p, end, &text, &len))
			ok = import_line(im, &inputs[0], ++no, text, len);
		*lines = no;
		return ok;
	}
	stream *s = calloc(n ? n : 1, sizeof(*s));
	int ok = s != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		s[i].in = &inputs[i];
		s[i].index = i;
		ok = split_stream(&s[i], lines);
	}
	if (!ok) {
		nt_imp_oom(im);
	} else {
		qsort(s, n, sizeof(*s), by_first_time);
		ok = import_merged(im, s, n);
	}
	for (size_t i = 0; s != NULL && i < n; i++)
		free(s[i].lines);
	free(s);
	return ok;
}

static int import_many(const nt_trace2_input *inputs, size_t n, void **archive,
		       size_t *archive_size, nt_trace2_import_error *err,
		       nt_trace2_import_progress progress, void *ctx)
{
	nt_trace2_import_error dummy;
	if (err == NULL)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	int bad = archive == NULL || archive_size == NULL || (inputs == NULL && n > 0);
	for (size_t i = 0; !bad && i < n; i++)
		bad = inputs[i].data == NULL && inputs[i].size != 0;
	if (bad) {
		snprintf(err->message, sizeof(err->message), "invalid argument");
		return -1;
	}
	*archive = NULL;
	*archive_size = 0;
	nt_importer im = { .err = err, .progress = progress, .progress_ctx = ctx };
	for (size_t i = 0; i < n; i++)
		im.total_bytes += inputs[i].size;
	unsigned long lines = 0;
	int ok = import_all(&im, inputs, n, &lines);
	im.input = NULL;
	im.line = 0;
	if (ok)
		ok = nt_imp_finish(&im, archive, archive_size);
	nt_imp_free(&im);
	if (ok)
		err->lines = lines;
	if (ok && progress != NULL)
		progress(ctx, im.total_bytes, im.total_bytes);
	return ok ? 0 : -1;
}

int nt_trace2_import_many(const nt_trace2_input *inputs, size_t n, void **archive,
			  size_t *archive_size, nt_trace2_import_error *err)
{
	return import_many(inputs, n, archive, archive_size, err, NULL, NULL);
}

int nt_trace2_import(const void *data, size_t size, void **archive, size_t *archive_size,
		     nt_trace2_import_error *err)
{
	nt_trace2_input in = { NULL, data, size };
	return nt_trace2_import_many(&in, 1, archive, archive_size, err);
}

/* ---- files and directories ------------------------------------------------------------ */

typedef struct path_list {
	char **path;
	size_t n, cap;
} path_list;

static int path_error(nt_trace2_import_error *err, const char *path, const char *why)
{
	snprintf(err->message, sizeof(err->message), "%s: %s", path, why);
	return 0;
}

static int add_path(path_list *l, const char *dir, const char *name)
{
	if (!nt_grow(&l->path, &l->cap, l->n + 1, sizeof(*l->path)))
		return 0;
	size_t dlen = dir ? strlen(dir) : 0;
	const char *sep = dlen > 0 && dir[dlen - 1] != '/' ? "/" : "";
	size_t len = dlen + 1 + strlen(name) + 1;
	char *full = malloc(len);
	if (full == NULL)
		return 0;
	snprintf(full, len, "%s%s%s", dir ? dir : "", sep, name);
	l->path[l->n++] = full;
	return 1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory target's files: git names each after the last SID component, whose UTC
 * start time makes name order the processes' start order (the merge orders lines anyway;
 * names only decide ties). */
static int list_dir(const char *dir, path_list *out, nt_trace2_import_error *err)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return path_error(err, dir, strerror(errno));
	size_t first = out->n;
	int ok = 1;
	struct dirent *de;
	while (ok && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		ok = add_path(out, dir, de->d_name);
		if (!ok) {
			path_error(err, dir, "out of memory");
			break;
		}
		struct stat st;
		const char *full = out->path[out->n - 1];
		if (stat(full, &st) != 0)
			ok = path_error(err, full, strerror(errno));
		else if (!S_ISREG(st.st_mode))
			ok = path_error(err, full, "not a regular file (a Trace2 directory target "
						   "holds one EVENT file per process)");
		else if (st.st_size == 0)
			free(out->path[--out->n]); /* a pre-filled or never-written file */
	}
	closedir(d);
	if (ok && out->n == first)
		ok = path_error(err, dir, "no Trace2 EVENT file in this directory (empty files "
					  "are skipped)");
	if (ok)
		qsort(out->path + first, out->n - first, sizeof(char *), by_name);
	return ok;
}

static int read_file(const char *path, nt_trace2_input *in, nt_trace2_import_error *err)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return path_error(err, path, strerror(errno));
	/* Sized from fstat once (plus room to see the end), grown by doubling only if the file
	 * grows meanwhile: no zeroing and no copy of a large input (nt_grow zeroes). */
	struct stat st;
	size_t cap = fstat(fileno(f), &st) == 0 && st.st_size > 0 ? (size_t)st.st_size : 0, n = 0;
	cap = cap > SIZE_MAX - (1 << 16) ? SIZE_MAX : cap + (1 << 16);
	char *buf = malloc(cap);
	int oom = buf == NULL;
	while (!oom) {
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
		if (n == cap) {
			char *more = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
			oom = more == NULL;
			buf = more ? more : buf;
			cap *= 2;
		}
	}
	int failed = oom || ferror(f);
	int e = oom ? ENOMEM : errno;
	fclose(f);
	if (failed) {
		free(buf);
		return path_error(err, path, strerror(e));
	}
	*in = (nt_trace2_input){ path, buf, n };
	return 1;
}

int nt_trace2_import_paths(const char *const *paths, size_t n, void **archive,
			   size_t *archive_size, nt_trace2_import_error *err)
{
	return nt_trace2_import_paths_progress(paths, n, archive, archive_size, err, NULL, NULL);
}

int nt_trace2_import_paths_progress(const char *const *paths, size_t n, void **archive,
				    size_t *archive_size, nt_trace2_import_error *err,
				    nt_trace2_import_progress progress, void *ctx)
{
	nt_trace2_import_error dummy;
	if (err == NULL)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	if ((paths == NULL && n > 0) || archive == NULL || archive_size == NULL) {
		snprintf(err->message, sizeof(err->message), "invalid argument");
		return -1;
	}
	path_list files = { 0 };
	int ok = 1;
	for (size_t i = 0; ok && i < n; i++) {
		struct stat st;
		if (paths[i] == NULL)
			ok = path_error(err, "(null)", "invalid argument");
		else if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode))
			ok = list_dir(paths[i], &files, err);
		else if (!add_path(&files, NULL, paths[i]))
			ok = path_error(err, paths[i], "out of memory");
	}
	nt_trace2_input *in = ok ? calloc(files.n ? files.n : 1, sizeof(*in)) : NULL;
	if (ok && in == NULL)
		ok = path_error(err, "trace-import", "out of memory");
	size_t nin = 0;
	for (; ok && nin < files.n; nin++)
		ok = read_file(files.path[nin], &in[nin], err);
	int rc = ok ? import_many(in, nin, archive, archive_size, err, progress, ctx) : -1;
	for (size_t i = 0; in != NULL && i < nin; i++)
		free((void *)in[i].data);
	free(in);
	for (size_t i = 0; i < files.n; i++)
		free(files.path[i]);
	free(files.path);
	return rc;
}
