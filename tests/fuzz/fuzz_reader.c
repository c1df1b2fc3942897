/*
 * fuzz_reader.c - libFuzzer target: any bytes as an archive (or a bundle), opened from
 * memory, visited in both orders under both damage policies, records counted, and rendered
 * by every renderer trace-dump offers: text, Chrome JSON, --stats, Git Trace2's NORMAL,
 * PERF and EVENT, and CTF (into a directory of this process's own, made with mkdtemp and
 * emptied after each input); then compressed as trace-import compresses
 * (nt_archive_compress) and the result read back. The reader's promise
 * (nanotrace_reader.h, ARCHITECTURE.md "Reader"): no input makes it read outside the
 * buffer, hit undefined behaviour, leak or crash; damage is reported, never trusted.
 *
 * Built as fuzz_reader with -Dfuzz=true (clang, libFuzzer) and, in every build, as
 * replay_reader, which runs the inputs of tests/fuzz/corpus/reader once (replay_main.c).
 */
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

static FILE *sink(void)
{
	static FILE *devnull;
	if (devnull == NULL)
		devnull = fopen("/dev/null", "w");
	return devnull;
}

static int count_event(void *ctx, const nt_reader_event *e)
{
	(void)e;
	++*(uint64_t *)ctx;
	return 0;
}

static void ignore_error(void *ctx, uint64_t offset, const char *message)
{
	(void)ctx;
	(void)offset;
	(void)message;
}

static void visit_all(nt_reader *r)
{
	nt_reader_callbacks cb = { 0 };
	cb.on_event = count_event;
	cb.on_error = ignore_error;
	uint64_t n = 0;
	for (int order = 0; order < 2; order++)
		for (int policy = 0; policy < 2; policy++)
			nt_reader_visit(r, &cb, &n, order ? NT_ORDER_TIME : NT_ORDER_STREAM,
					policy ? NT_ON_CORRUPT_SKIP : NT_ON_CORRUPT_STOP);
	uint64_t counts[256];
	nt_reader_count_records(r, counts);
	nt_reader_summary s;
	nt_reader_get_summary(r, &s);
}

static void render_all(nt_reader *r, FILE *out)
{
	nt_render_options opt;
	nt_render_options_init(&opt);
	for (int order = 0; order < 2; order++) {
		opt.order = order ? NT_ORDER_TIME : NT_ORDER_STREAM;
		nt_render_text(r, out, &opt);
		nt_render_chrome(r, out, &opt);
		nt_render_stats(r, out, &opt);
	}
	nt_trace2_options t2;
	nt_trace2_options_init(&t2);
	for (int f = NT_TRACE2_NORMAL; f <= NT_TRACE2_EVENT; f++) {
		t2.format = (nt_trace2_format)f;
		nt_render_trace2(&r, 1, out, &t2);
	}
	t2.brief = 1; /* Git's brief mode takes other paths through the model */
	nt_render_trace2(&r, 1, out, &t2);
}

/* The directory CTF exports go to: "<TMPDIR>/nt-fuzz-ctf-XXXXXX/trace", removed with its
 * base at exit; NULL when no private directory can be made (then CTF is not rendered). */
static char ctf_base[512], ctf_dir[600];

static void remove_ctf_dir(void)
{
	DIR *d = opendir(ctf_dir);
	if (d != NULL) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL)
			if (e->d_name[0] != '.')
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
		rmdir(ctf_dir);
	}
}

static void remove_ctf_base(void)
{
	remove_ctf_dir();
	rmdir(ctf_base);
}

static const char *ctf_output(void)
{
	static int tried;
	if (!tried) {
		tried = 1;
		const char *tmp = getenv("TMPDIR");
		snprintf(ctf_base, sizeof(ctf_base), "%s/nt-fuzz-ctf-XXXXXX",
			 tmp != NULL && tmp[0] == '/' && strlen(tmp) < 400 ? tmp : "/tmp");
		if (mkdtemp(ctf_base) == NULL) {
			ctf_base[0] = '\0';
			return NULL;
		}
		snprintf(ctf_dir, sizeof(ctf_dir), "%s/trace", ctf_base);
		atexit(remove_ctf_base);
	}
	return ctf_base[0] != '\0' ? ctf_dir : NULL;
}

static void render_ctf(nt_reader *r)
{
	const char *dir = ctf_output();
	if (dir == NULL)
		return;
	nt_render_options opt;
	nt_render_options_init(&opt);
	nt_reader_error err;
	nt_render_ctf(r, dir, &opt, &err);
	remove_ctf_dir();
}

/* nt_archive_compress (trace-import's last step, reader/import) reads archives too: the
 * input compressed at zstd's fastest level, and what it makes opened and visited (its
 * CompressedChunk records hold well-formed frames of whatever the chunks held). */
static void compress_and_visit(const uint8_t *data, size_t size)
{
	void *z = NULL;
	size_t zsize = 0;
	nt_reader_error err;
	if (nt_archive_compress(data, size, -5, &z, &zsize, &err) != 0)
		return;
	nt_reader *r = nt_reader_open_memory(z, zsize, "compressed", &err);
	if (r != NULL) {
		nt_reader_callbacks cb = { 0 };
		cb.on_event = count_event;
		cb.on_error = ignore_error;
		uint64_t n = 0;
		nt_reader_visit(r, &cb, &n, NT_ORDER_TIME, NT_ON_CORRUPT_SKIP);
		nt_reader_close(r);
	}
	free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "fuzz", &err);
	if (r == NULL)
		return 0;
	visit_all(r);
	FILE *out = sink();
	if (out != NULL)
		render_all(r, out);
	render_ctf(r);
	nt_reader_close(r);
	compress_and_visit(data, size);
	return 0;
}
