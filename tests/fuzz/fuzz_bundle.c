/*
 * fuzz_bundle.c - libFuzzer target: nt_reader_open_many (trace-dump's several paths, a
 * bundle) over hostile files. The input is up to 6 files joined by FUZZ_SPLIT
 * (fuzz_reader_common.h; the seeds join bundles and archives so). They are written as
 * f0, f1, ... into a private directory (mkdtemp) and opened by their paths (one file: a
 * bundle is mapped and its frames read, as trace-dump opens it; several: read as one); the
 * reader is visited in time order (damage skipped) and --stats rendered (a line per
 * section; its visit is the stream-order one, damage skipped, so a visit of our own in that
 * order, which this target made too until 2026-11-27, reached nothing more), its summary,
 * sections and problems read. The files are removed after each input.
 *
 * Built a second time as fuzz_bundle_dir (fuzz_bundle_dir.c, BUNDLE_DIRECTORY): the same
 * files opened as the directory that holds them, of whose reader only the summary,
 * sections and problems are read (listing and ordering a directory is what it adds). One
 * target did both until 2026-11-27: each opened every file twice per input.
 */
#include "fuzz_reader_common.h"

#define MAX_FILES 6

#ifndef BUNDLE_DIRECTORY
#define BUNDLE_DIRECTORY 0
#endif

static void read_all(nt_reader *r, int visit)
{
	if (r == NULL)
		return;
	if (visit) /* stream order: --stats's own visit, below */
		fuzz_visit(r, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP);
	nt_reader_summary s;
	nt_reader_get_summary(r, &s);
	for (uint32_t i = 0; i < nt_reader_section_count(r); i++)
		(void)nt_reader_section_at(r, i);
	for (uint32_t i = 0; i < nt_reader_problem_count(r); i++)
		(void)nt_reader_problem_at(r, i, NULL);
	FILE *out = fuzz_sink();
	if (visit && out != NULL) {
		nt_render_options opt;
		nt_render_options_init(&opt);
		nt_render_stats(r, out, &opt);
	}
	nt_reader_close(r);
}

static int write_file(const char *path, const uint8_t *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_private_dir("bundle");
	if (dir == NULL)
		return 0;
	const uint8_t *part[MAX_FILES];
	size_t len[MAX_FILES];
	size_t n = fuzz_split(data, size, part, len, MAX_FILES);
	char names[MAX_FILES][600];
	const char *paths[MAX_FILES];
	size_t files = 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(names[files], sizeof(names[files]), "%s/f%zu", dir, i);
		if (write_file(names[files], part[i], len[i]) == 0) {
			paths[files] = names[files];
			files++;
		}
	}
	nt_reader_error err;
	if (BUNDLE_DIRECTORY)
		read_all(nt_reader_open_many(&dir, 1, &err), 0);
	else if (files > 0)
		read_all(nt_reader_open_many(paths, files, &err), 1);
	fuzz_empty_dir(dir);
	return 0;
}
