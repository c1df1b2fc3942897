/*
 * test_trace_import - nt_trace2_import() and the Trace2 renderers against bad input.
 *
 *  1. A sample EVENT stream (raw 0xff byte, escapes, nested data_json, brief-less, two
 *     processes, a thread) imports and renders back byte for byte.
 *  2. Malformed input is refused with the right line and reason, never a crash: not JSON,
 *     truncated, unknown event or key, wrong types, lone surrogates, deep nesting.
 *  3. Every truncation of the sample and three bit flips per byte either import (and then
 *     render in all three formats) or are refused with a message: run under ASan+UBSan by
 *     tests/run_suite.sh, this is the fuzzing of the JSON reader and the importer.
 *  4. The imported archive, itself damaged (truncations, flips), renders or reports damage.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nanotrace_reader.h"

static int failures;
#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
			fprintf(stderr, __VA_ARGS__);                                      \
			fprintf(stderr, "\n");                                             \
			failures++;                                                        \
		}                                                                          \
	} while (0)

static const char sample[] =
	"{\"event\":\"version\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.920892Z\",\"file\":\"common-main.c\",\"line\":50,\"evt\":\"3\",\"exe\":\"2.39.5\"}\n"
	"{\"event\":\"start\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.920913Z\",\"file\":\"common-main.c\",\"line\":51,\"t_abs\":0.000239,\"argv\":[\"/usr/bin/git\",\"a\\u0001b\x7f" "c\xff" "d\\\\e!f\",\"\",\"tab\\there\\nnl\"]}\n"
	"{\"event\":\"region_enter\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.921000Z\",\"file\":\"read-cache.c\",\"line\":2443,\"repo\":1,\"nesting\":1,\"category\":\"index\",\"label\":\"do_read_index\",\"msg\":\".git/index\"}\n"
	"{\"event\":\"data_json\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.921100Z\",\"file\":\"tree-walk.c\",\"line\":189,\"repo\":1,\"t_abs\":0.006150,\"t_rel\":0.006150,\"nesting\":2,\"category\":\"traverse_trees\",\"key\":\"statistics\",\"value\":{\"a\":[1,2,{\"b\":null}],\"c\":\"\\u00e9\"}}\n"
	"{\"event\":\"child_start\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.921200Z\",\"file\":\"run-command.c\",\"line\":722,\"child_id\":0,\"child_class\":\"hook\",\"hook_name\":\"post-commit\",\"cd\":\"sub dir\",\"use_shell\":false,\"argv\":[\"git\",\"status\"]}\n"
	"{\"event\":\"version\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430/20261121T230246.930000Z-H0a7c9cdf-P00006431\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.930100Z\",\"file\":\"common-main.c\",\"line\":50,\"evt\":\"3\",\"exe\":\"2.39.5\"}\n"
	"{\"event\":\"thread_start\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430/20261121T230246.930000Z-H0a7c9cdf-P00006431\",\"thread\":\"th01:preload\",\"time\":\"2026-11-21T23:02:46.930050Z\",\"file\":\"preload-index.c\",\"line\":10}\n"
	"{\"event\":\"timer\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430/20261121T230246.930000Z-H0a7c9cdf-P00006431\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.931000Z\",\"file\":\"trace2/tr2_tgt_event.c\",\"line\":632,\"category\":\"test\",\"name\":\"t1\",\"intervals\":5,\"t_total\":0.123456,\"t_min\":0.000001,\"t_max\":0.100000}\n"
	"{\"event\":\"child_exit\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.921300Z\",\"file\":\"run-command.c\",\"line\":979,\"child_id\":0,\"pid\":25606,\"code\":-1,\"t_rel\":0.000783}\n"
	"{\"event\":\"region_leave\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.940000Z\",\"file\":\"read-cache.c\",\"line\":2460,\"repo\":1,\"t_rel\":0.019000,\"nesting\":1,\"category\":\"index\",\"label\":\"do_read_index\"}\n"
	"{\"event\":\"atexit\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.941000Z\",\"file\":\"trace2/tr2_tgt_event.c\",\"line\":204,\"t_abs\":0.020100,\"code\":128}\n";

static void null_error(void *ctx, uint64_t off, const char *msg)
{
	(void)off, (void)msg;
	++*(int *)ctx;
}

/* Renders an archive in memory in `format`; returns the output (caller frees) or NULL. */
static char *render(const void *data, size_t size, nt_trace2_format format, int *damage)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "import", &err);
	if (r == NULL)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	nt_trace2_options opt = { .format = format, .brief = -1, .nesting = 2,
				  .policy = NT_ON_CORRUPT_SKIP, .on_error = null_error,
				  .error_ctx = damage };
	nt_render_trace2(&r, 1, out, &opt);
	fclose(out);
	nt_reader_close(r);
	/* Damage must not blow up the output: it stays proportional to the archive (a forged
	 * nesting of 2^32 once asked for four billion dots). */
	CHECK(len <= 64 * size + 4096, "%zu bytes of output from a %zu-byte archive", len, size);
	return buf;
}

static void expect_error(const char *input, unsigned long line, const char *needle)
{
	void *a = NULL;
	size_t n = 0;
	nt_trace2_import_error err;
	int rc = nt_trace2_import(input, strlen(input), &a, &n, &err);
	CHECK(rc == -1, "accepted bad input: %s", input);
	CHECK(err.line == line, "error on line %lu, want %lu (%s)", err.line, line, err.message);
	CHECK(strstr(err.message, needle) != NULL, "message '%s' lacks '%s'", err.message, needle);
	free(a);
}

static void import_and_render(const char *data, size_t size)
{
	void *a = NULL;
	size_t n = 0;
	nt_trace2_import_error err;
	if (nt_trace2_import(data, size, &a, &n, &err) != 0) {
		CHECK(err.message[0] != '\0', "refused without a message");
		return;
	}
	for (int f = 0; f < 3; f++) {
		int damage = 0;
		char *out = render(a, n, (nt_trace2_format)f, &damage);
		CHECK(out != NULL && damage == 0, "an imported archive must open and render cleanly");
		free(out);
	}
	free(a);
}

int main(void)
{
	size_t slen = sizeof(sample) - 1;
	/* 1. Round trip. */
	void *a = NULL;
	size_t n = 0;
	nt_trace2_import_error err;
	CHECK(nt_trace2_import(sample, slen, &a, &n, &err) == 0, "sample: %s", err.message);
	int damage = 0;
	char *ev = a ? render(a, n, NT_TRACE2_EVENT, &damage) : NULL;
	CHECK(ev != NULL && strcmp(ev, sample) == 0, "EVENT round trip differs:\n%s", ev ? ev : "");
	free(ev);
	char *perf = a ? render(a, n, NT_TRACE2_PERF, &damage) : NULL;
	CHECK(perf != NULL && strstr(perf, "| d1 | th01:preload ") != NULL,
	      "perf depth and thread column");
	CHECK(perf != NULL && strstr(perf, "[ch0] class:hook hook:post-commit cd:'sub dir' "
					   "argv:[git status]") != NULL, "perf child_start");
	free(perf);
	char *normal = a ? render(a, n, NT_TRACE2_NORMAL, &damage) : NULL;
	CHECK(normal != NULL && strstr(normal, "start /usr/bin/git 'a\x01" "b\x7f" "c\xff" "d\\e'\\!'f' '' '") != NULL,
	      "normal shell quoting");
	CHECK(normal != NULL && strstr(normal, "timer test/t1 intervals:5 total:0.123456 "
					     "min:0.000001 max:0.100000") != NULL, "normal timer");
	free(normal);

	/* 4. The archive itself damaged. */
	for (size_t cut = 0; a != NULL && cut < n; cut += 3) {
		for (int f = 0; f < 3; f++) {
			int d = 0;
			free(render(a, cut, (nt_trace2_format)f, &d));
		}
	}
	unsigned char *copy = a ? malloc(n) : NULL;
	for (size_t i = 0; copy != NULL && i < n; i++) {
		memcpy(copy, a, n);
		copy[i] ^= (unsigned char)(1u << (i % 8));
		int d = 0;
		free(render(copy, n, (nt_trace2_format)(i % 3), &d));
	}
	free(copy);
	free(a);

	/* 2. Malformed input. */
	expect_error("{\"event\":\"version\"", 1, "");
	expect_error("\n\nnot json\n", 3, "one JSON object");
	expect_error("{\"event\":\"bogus\",\"sid\":\"s\",\"thread\":\"main\"}\n", 1, "unknown Trace2 event");
	expect_error("{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"code\":\"x\"}\n", 1, "integer");
	expect_error("{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"color\":1}\n", 1, "not part of");
	expect_error("{\"event\":\"start\",\"sid\":\"s\",\"thread\":\"main\",\"argv\":[1]}\n", 1, "string");
	expect_error("{\"event\":\"start\",\"sid\":\"s\",\"thread\":\"main\",\"argv\":[\"\\ud800\"]}\n", 1, "surrogate");
	expect_error("{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"t_abs\":-1}\n", 1, "seconds");
	expect_error("{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"time\":\"yesterday\"}\n", 1, "UTC");
	expect_error("{\"event\":\"exit\",\"sid\":\"s\"}\n", 1, "missing");
	expect_error("{\"sid\":\"s\",\"thread\":\"t\",\"event\":\"exit\"} x\n", 1, "after the JSON");
	{
		/* Nesting far deeper than the limit: refused, not a stack overflow. */
		size_t depth = 100000;
		char *deep = malloc(2 * depth + 200);
		if (deep == NULL)
			return 1;
		int k = sprintf(deep, "{\"event\":\"data_json\",\"sid\":\"s\",\"thread\":\"t\",\"value\":");
		memset(deep + k, '[', depth);
		memset(deep + k + depth, ']', depth);
		strcpy(deep + k + 2 * depth, "}\n");
		expect_error(deep, 1, "too deep");
		free(deep);
	}
	{
		/* A record over the size limit. */
		char *big = malloc(4000);
		if (big == NULL)
			return 1;
		int k = sprintf(big, "{\"event\":\"cmd_path\",\"sid\":\"s\",\"thread\":\"t\",\"path\":\"");
		memset(big + k, 'x', 3000);
		strcpy(big + k + 3000, "\"}\n");
		expect_error(big, 1, "at most 2040");
		free(big);
	}
	/* Blank lines and CRLF are accepted. */
	{
		const char *ok = "\n{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"t_abs\":1.5,\"code\":0}\r\n\n";
		CHECK(nt_trace2_import(ok, strlen(ok), &a, &n, &err) == 0, "blank/CRLF: %s", err.message);
		free(a);
	}

	/* 3. Truncations and bit flips of the input. */
	for (size_t cut = 0; cut <= slen; cut++)
		import_and_render(sample, cut);
	char *mut = malloc(slen);
	if (mut == NULL)
		return 1;
	for (size_t i = 0; i < slen; i++) {
		for (int b = 0; b < 3; b++) {
			memcpy(mut, sample, slen);
			mut[i] ^= (char)(1u << ((i + (size_t)b * 3) % 8));
			import_and_render(mut, slen);
		}
	}
	free(mut);
	printf("trace-import: %zu truncations, %zu bit flips, %d failures\n", slen + 1, 3 * slen,
	       failures);
	return failures ? 1 : 0;
}
