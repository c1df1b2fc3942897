/*
 * test_trace_import - nt_trace2_import() and the Trace2 renderers against bad input.
 *
 *  1. A sample EVENT stream (raw 0xff byte, escapes, nested data_json, brief-less, two
 *     processes, a thread) imports and renders back byte for byte.
 *  2. Malformed input is refused with the right line and reason, never a crash: not JSON,
 *     truncated, wrong types, lone surrogates, deep nesting. (Unknown events and keys are
 *     not malformed: the sample keeps one of each.)
 *  3. Every truncation of the sample and three bit flips per byte either import (and then
 *     render in all three formats) or are refused with a message: run under ASan+UBSan by
 *     tests/run_suite.sh, this is the fuzzing of the JSON reader and the importer.
 *  4. The imported archive, itself damaged (truncations, flips), renders or reports damage
 *     in all six renderings (the kept JsonValue arguments and unknown event included).
 *  5. Kept keys and events are counted by --stats and shown by text and chrome.
 *  6. Several streams interleave by time, each in its own order; errors name the input.
 *  7. Directories: empty and dot files skipped, other entries named when refused.
 * Each numbered part is a cmocka test.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nanotrace/nanotrace_reader.h>
#include "tests/support/nt_cmocka.h"

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
	"{\"event\":\"region_enter\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.940100Z\",\"file\":\"a.c\",\"line\":1,\"nesting\":1,\"x_new\":[1,{\"k\":\"\\u00e9\"}],\"category\":\"c\",\"label\":\"l\",\"msg\":\"\"}\n"
	"{\"event\":\"x_future\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.940200Z\",\"obj\":{\"a\":[true,null,{}]},\"n\":-0.5e-3}\n"
	"{\"event\":\"atexit\",\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\",\"time\":\"2026-11-21T23:02:46.941000Z\",\"file\":\"trace2/tr2_tgt_event.c\",\"line\":204,\"t_abs\":0.020100,\"code\":128}\n";

static void null_error(void *ctx, uint64_t off, const char *msg)
{
	(void)off, (void)msg;
	++*(int *)ctx;
}

/* Any of the six renderings of an archive in memory: 0-2 the Trace2 formats
 * (nt_trace2_format), then text, chrome and stats. Returns the output (caller frees), or
 * NULL when the archive does not open. */
static char *render_view(const void *data, size_t size, int view, int *damage)
{
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, "import", &err);
	if (r == NULL)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	if (view < 3) {
		nt_trace2_options opt;
		nt_trace2_options_init(&opt);
		opt.format = (nt_trace2_format)view;
		opt.on_error = null_error;
		opt.error_ctx = damage;
		nt_render_trace2(&r, 1, out, &opt);
	} else {
		nt_render_options opt;
		nt_render_options_init(&opt);
		opt.on_error = null_error;
		opt.error_ctx = damage;
		(view == 3 ? nt_render_text : view == 4 ? nt_render_chrome : nt_render_stats)(r, out, &opt);
	}
	fclose(out);
	nt_reader_close(r);
	/* Damage must not blow up Trace2 output: it stays proportional to the archive (a forged
	 * nesting of 2^32 once asked for four billion dots). */
	assert_msg(view >= 3 || len <= 64 * size + 4096, "%zu bytes of output from a %zu-byte archive",
		   len, size);
	return buf;
}

static char *render(const void *data, size_t size, nt_trace2_format format, int *damage)
{
	return render_view(data, size, (int)format, damage);
}

/* 4. The imported archive, JsonValue arguments and an unknown event included, damaged:
 * every rendering reads it as untrusted (run under ASan+UBSan by tests/run_suite.sh). */
static void damage_archive(const void *a, size_t n)
{
	for (size_t cut = 0; cut < n; cut += 3) {
		for (int v = 0; v < 6; v++) {
			int d = 0;
			free(render_view(a, cut, v, &d));
		}
	}
	unsigned char *copy = malloc(n);
	for (size_t i = 0; copy != NULL && i < n; i++) {
		memcpy(copy, a, n);
		copy[i] ^= (unsigned char)(1u << (i % 8));
		int d = 0;
		free(render_view(copy, n, (int)(i % 6), &d));
	}
	free(copy);
}

/* 5. What was kept shows everywhere: counted by --stats, shown by text and chrome. */
static void check_kept(const void *a, size_t n)
{
	int d = 0;
	char *stats = render_view(a, n, 5, &d);
	assert_msg(stats != NULL && strstr(stats, "trace2 unknown: 1 events, 1 keys") != NULL,
	      "stats must count the kept event and key:\n%s", stats ? stats : "");
	free(stats);
	char *text = render_view(a, n, 3, &d);
	assert_msg(text != NULL && strstr(text, "x_new=\"[1,{\\\"k\\\":\\\"\\\\u00e9\\\"}]\"") != NULL &&
	      strstr(text, "event=\"x_future\"") != NULL, "text shows kept keys:\n%s",
	      text ? text : "");
	free(text);
	char *chrome = render_view(a, n, 4, &d);
	assert_msg(chrome != NULL && strstr(chrome, "\"obj\":\"{\\\"a\\\":[true,null,{}]}\"") != NULL,
	      "chrome shows kept keys as strings:\n%s", chrome ? chrome : "");
	free(chrome);
	assert_msg(d == 0, "kept keys read as damage");
}

#define LINE(ev, sid, time) \
	"{\"event\":\"" ev "\",\"sid\":\"" sid "\",\"thread\":\"main\",\"time\":\"" time "\"}\n"

/* 6. Several streams: interleaved by time, each in its own order; errors name the input. */
static void check_many(void)
{
	const char *p = LINE("x_a1", "P", "2026-01-01T00:00:01.000000Z")
		LINE("x_a2", "P", "2026-01-01T00:00:03.000000Z")
		LINE("x_a3", "P", "2026-01-01T00:00:02.000000Z");
	const char *q = LINE("x_b1", "Q", "2026-01-01T00:00:00.500000Z")
		LINE("x_b2", "Q", "2026-01-01T00:00:02.500000Z");
	nt_trace2_input in[2] = { { "p", p, strlen(p) }, { "q", q, strlen(q) } };
	void *a = NULL;
	size_t n = 0;
	nt_trace2_import_error err;
	assert_msg(nt_trace2_import_many(in, 2, &a, &n, &err) == 0, "many: %s", err.message);
	int d = 0;
	char *ev = a ? render(a, n, NT_TRACE2_EVENT, &d) : NULL;
	/* a3 is dated before a2 (a shared file's times go backwards) but stays after it. */
	const char *order[] = { "x_b1", "x_a1", "x_b2", "x_a2", "x_a3" };
	const char *at = ev;
	for (int i = 0; at != NULL && i < 5; i++)
		at = strstr(at, order[i]);
	assert_msg(at != NULL, "merged order b1 a1 b2 a2 a3:\n%s", ev ? ev : "");
	free(ev);
	free(a);
	in[1].size = 20;
	assert_msg(nt_trace2_import_many(in, 2, &a, &n, &err) == -1 &&
	      strncmp(err.message, "q: line 1, column", 17) == 0, "error names its input: %s",
	      err.message);
	assert_msg(nt_trace2_import_many(NULL, 1, &a, &n, &err) == -1, "NULL inputs refused");
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_msg(f != NULL, "cannot create %s", path);
	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

static void expect_paths(const char *path, int rc, const char *needle)
{
	void *a = NULL;
	size_t n = 0;
	nt_trace2_import_error err;
	const char *paths[1] = { path };
	assert_msg(nt_trace2_import_paths(paths, 1, &a, &n, &err) == rc, "%s: rc (%s)", path,
	      err.message);
	assert_msg(strstr(err.message, needle) != NULL, "%s: message '%s' lacks '%s'", path,
	      err.message, needle);
	free(a);
}

/* 7. A directory target: empty and dot files skipped; what is not a trace is named. */
static void check_paths(void)
{
	char dir[] = "/tmp/nt-import-XXXXXX", path[512];
	if (mkdtemp(dir) == NULL) {
		assert_msg(0, "mkdtemp");
		return;
	}
	expect_paths(dir, -1, "no Trace2 EVENT file");
	write_file(dir, "prefill1", "");
	write_file(dir, ".hidden", "not json");
	write_file(dir, "20260101T000000.000000Z-H0-P00000001", LINE("x_a", "P", "2026-01-01T00:00:01.000000Z"));
	expect_paths(dir, 0, "");
	write_file(dir, "notes.txt", "hello\n");
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	expect_paths(dir, -1, "notes.txt: line 1, column 1: a line must be one JSON object");
	remove(path);
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_msg(mkdir(path, 0700) == 0, "mkdir");
	expect_paths(dir, -1, "sub: not a regular file");
	rmdir(path);
	snprintf(path, sizeof(path), "%s/missing", dir);
	expect_paths(path, -1, "missing: No such file or directory");
	const char *names[] = { "prefill1", ".hidden", "20260101T000000.000000Z-H0-P00000001" };
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		remove(path);
	}
	rmdir(dir);
}

/* 7. A key only another message has is kept as written, not taken and lost (the importer
 * once read exec's "code", cmd_mode's "hierarchy" and region_enter's "t_rel" as fields,
 * which those messages' renderings never write). */
static void check_other_keys(void)
{
#define SID_ "\"sid\":\"20261121T230246.920813Z-H0a7c9cdf-P00006430\",\"thread\":\"main\""
	static const char odd[] =
		"{\"event\":\"cmd_mode\"," SID_ ",\"time\":\"2026-11-21T23:02:46.920892Z\","
		"\"file\":\"a.c\",\"line\":1,\"name\":\"branch\",\"hierarchy\":\"h\"}\n"
		"{\"event\":\"exec\"," SID_ ",\"time\":\"2026-11-21T23:02:46.920900Z\","
		"\"file\":\"a.c\",\"line\":2,\"exec_id\":0,\"exe\":\"git\",\"argv\":[\"a\"],"
		"\"code\":7}\n"
		"{\"event\":\"region_enter\"," SID_ ",\"time\":\"2026-11-21T23:02:46.920910Z\","
		"\"file\":\"a.c\",\"line\":3,\"t_rel\":0.5,\"nesting\":1,\"category\":\"c\","
		"\"label\":\"l\"}\n";
#undef SID_
	void *a = NULL;
	size_t n = 0;
	nt_trace2_import_error err;
	assert_msg(nt_trace2_import(odd, sizeof(odd) - 1, &a, &n, &err) == 0, "odd keys: %s",
	           err.message);
	int damage = 0;
	char *ev = a ? render(a, n, NT_TRACE2_EVENT, &damage) : NULL;
	assert_msg(ev != NULL && strcmp(ev, odd) == 0, "keys of other messages lost:\n%s",
	           ev ? ev : "");
	free(ev);
	free(a);
}

static void expect_error(const char *input, unsigned long line, const char *needle)
{
	void *a = NULL;
	size_t n = 0;
	nt_trace2_import_error err;
	int rc = nt_trace2_import(input, strlen(input), &a, &n, &err);
	assert_msg(rc == -1, "accepted bad input: %s", input);
	assert_msg(err.line == line, "error on line %lu, want %lu (%s)", err.line, line, err.message);
	assert_msg(strstr(err.message, needle) != NULL, "message '%s' lacks '%s'", err.message, needle);
	free(a);
}

static void import_and_render(const char *data, size_t size)
{
	void *a = NULL;
	size_t n = 0;
	nt_trace2_import_error err;
	if (nt_trace2_import(data, size, &a, &n, &err) != 0) {
		assert_msg(err.message[0] != '\0', "refused without a message");
		return;
	}
	for (int f = 0; f < 3; f++) {
		int damage = 0;
		char *out = render(a, n, (nt_trace2_format)f, &damage);
		assert_msg(out != NULL && damage == 0, "an imported archive must open and render cleanly");
		free(out);
	}
	free(a);
}

static const size_t slen = sizeof(sample) - 1;

/* 1, 5 and 4: the sample round trip, what was kept, and the imported archive damaged. */
static void sample_round_trip(void **state)
{
	(void)state;
	void *a = NULL;
	size_t n = 0;
	nt_trace2_import_error err;
	assert_msg(nt_trace2_import(sample, slen, &a, &n, &err) == 0, "sample: %s", err.message);
	int damage = 0;
	char *ev = render(a, n, NT_TRACE2_EVENT, &damage);
	assert_msg(ev != NULL && strcmp(ev, sample) == 0, "EVENT round trip differs:\n%s", ev ? ev : "");
	free(ev);
	char *perf = render(a, n, NT_TRACE2_PERF, &damage);
	assert_msg(perf != NULL && strstr(perf, "| d1 | th01:preload ") != NULL,
	      "perf depth and thread column");
	assert_msg(perf != NULL && strstr(perf, "[ch0] class:hook hook:post-commit cd:'sub dir' "
					   "argv:[git status]") != NULL, "perf child_start");
	free(perf);
	char *normal = render(a, n, NT_TRACE2_NORMAL, &damage);
	assert_msg(normal != NULL && strstr(normal, "start /usr/bin/git 'a\x01" "b\x7f" "c\xff" "d\\e'\\!'f' '' '") != NULL,
	      "normal shell quoting");
	assert_msg(normal != NULL && strstr(normal, "timer test/t1 intervals:5 total:0.123456 "
					     "min:0.000001 max:0.100000") != NULL, "normal timer");
	free(normal);
	check_kept(a, n);
	damage_archive(a, n);
	free(a);
}

/* Keys only another message has are kept as written, not taken and lost. */
static void other_messages_keys_are_kept(void **state)
{
	(void)state;
	check_other_keys();
}

/* 6. */
static void several_streams(void **state)
{
	(void)state;
	check_many();
}

/* 7. */
static void directories(void **state)
{
	(void)state;
	check_paths();
}

/* 2. Malformed input. */
static void malformed_input_is_refused(void **state)
{
	(void)state;
	void *a = NULL;
	size_t n = 0;
	nt_trace2_import_error err;
	expect_error("{\"event\":\"version\"", 1, "");
	expect_error("\n\nnot json\n", 3, "one JSON object");
	expect_error("{\"event\":1,\"sid\":\"s\",\"thread\":\"main\"}\n", 1, "\"event\" must be a string");
	expect_error("{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"a\\u0000b\":1}\n", 1, "NUL");
	expect_error("{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"code\":\"x\"}\n", 1, "integer");
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
		if (deep == NULL) {
			fail_msg("out of memory");
			return;
		}
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
		if (big == NULL) {
			fail_msg("out of memory");
			return;
		}
		int k = sprintf(big, "{\"event\":\"cmd_path\",\"sid\":\"s\",\"thread\":\"t\",\"path\":\"");
		memset(big + k, 'x', 3000);
		strcpy(big + k + 3000, "\"}\n");
		expect_error(big, 1, "at most 2040");
		free(big);
	}
	/* Blank lines and CRLF are accepted. */
	{
		const char *ok = "\n{\"event\":\"exit\",\"sid\":\"s\",\"thread\":\"main\",\"t_abs\":1.5,\"code\":0}\r\n\n";
		assert_msg(nt_trace2_import(ok, strlen(ok), &a, &n, &err) == 0, "blank/CRLF: %s", err.message);
		free(a);
	}
}

/* 3. Every truncation and three bit flips per byte of the sample. */
static void truncations_and_bit_flips(void **state)
{
	(void)state;
	for (size_t cut = 0; cut <= slen; cut++)
		import_and_render(sample, cut);
	char *mut = malloc(slen);
	if (mut == NULL) {
		fail_msg("out of memory");
		return;
	}
	for (size_t i = 0; i < slen; i++) {
		for (int b = 0; b < 3; b++) {
			memcpy(mut, sample, slen);
			mut[i] ^= (char)(1u << ((i + (size_t)b * 3) % 8));
			import_and_render(mut, slen);
		}
	}
	free(mut);
	printf("trace-import: %zu truncations, %zu bit flips\n", slen + 1, 3 * slen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sample_round_trip),
		cmocka_unit_test(other_messages_keys_are_kept),
		cmocka_unit_test(several_streams),
		cmocka_unit_test(directories),
		cmocka_unit_test(malformed_input_is_refused),
		cmocka_unit_test(truncations_and_bit_flips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
