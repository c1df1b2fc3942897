/*
 * fuzz_import.c - libFuzzer target: any bytes as Git Trace2 EVENT lines for trace-import's
 * JSON reader (reader/import). One stream goes through nt_trace2_import; an input holding a
 * NUL byte is cut there into two streams merged by nt_trace2_import_many (the several-files
 * path). The importer must refuse bad input with a message, never read past it (the input
 * is handed over exactly as given: no NUL after it), and what it accepts must be an archive
 * the reader opens without a problem and renders back as EVENT: anything else aborts, as a
 * finding.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanotrace/nanotrace_reader.h>

static FILE *sink(void)
{
	static FILE *devnull;
	if (devnull == NULL)
		devnull = fopen("/dev/null", "w");
	return devnull;
}

/* An archive the importer made is well-formed: it opens, has no problem, and renders. */
static void check_archive(const void *archive, size_t size)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(archive, size, "import", &err);
	if (r == NULL) {
		fprintf(stderr, "fuzz_import: the reader refuses the importer's archive: %s\n",
			err.message);
		abort();
	}
	if (nt_reader_problem_count(r) != 0) {
		fprintf(stderr, "fuzz_import: the importer's archive has a problem: %s\n",
			nt_reader_problem_at(r, 0, NULL));
		abort();
	}
	nt_trace2_options t2;
	nt_trace2_options_init(&t2);
	t2.format = NT_TRACE2_EVENT;
	t2.policy = NT_ON_CORRUPT_STOP;
	FILE *out = sink();
	if (out != NULL && nt_render_trace2(&r, 1, out, &t2) != 0) {
		fprintf(stderr, "fuzz_import: the importer's archive does not render\n");
		abort();
	}
	nt_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	void *archive = NULL;
	size_t archive_size = 0;
	nt_trace2_import_error err;
	int rc;
	const uint8_t *nul = memchr(data, '\0', size);
	if (nul == NULL) {
		rc = nt_trace2_import(data, size, &archive, &archive_size, &err);
	} else {
		/* Separate copies, each exactly its size, so ASan sees a read past either. */
		size_t n0 = (size_t)(nul - data), n1 = size - n0 - 1;
		char *a = malloc(n0 ? n0 : 1), *b = malloc(n1 ? n1 : 1);
		if (a == NULL || b == NULL)
			abort();
		memcpy(a, data, n0);
		memcpy(b, nul + 1, n1);
		nt_trace2_input in[2] = { { "first", a, n0 }, { "second", b, n1 } };
		rc = nt_trace2_import_many(in, 2, &archive, &archive_size, &err);
		free(a);
		free(b);
	}
	if (rc == 0)
		check_archive(archive, archive_size);
	else if (err.message[0] == '\0')
		abort(); /* a refusal always says why */
	free(archive);
	return 0;
}
