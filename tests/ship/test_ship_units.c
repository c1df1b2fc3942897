/*
 * test_ship_units.c - ship/'s parts a receiver or the environment feeds, alone:
 *   - nt_ship_pb.c counts the spans and data points of requests built here field by field,
 *     reads a response's partial_success and a google.rpc.Status message, and refuses
 *     (-1, never a read past the end) every truncated prefix of them and 200,000 random
 *     buffers (a hostile receiver's bodies; run under ASan by the suite's ASan builds);
 *   - nt_ship_conf.c: endpoints (a base URL with /v1/traces and /v1/metrics appended, its
 *     trailing slashes dropped; a signal's variable used as it is; --otlp-endpoint winning),
 *     headers (trimmed, percent-decoded, the signal's value winning for a key in both, a CR
 *     or LF never a second header line, a pair without '=' or a name with a space refused),
 *     compression, timeout and protocol values refused by name;
 *   - nt_ship_stream.c's part of a streaming section: the header, every durable record so
 *     far (this range's added) and the range's other records in their order, bytes that do
 *     not frame kept as they are; the reader's incremental exporter's bad arguments (NULLs,
 *     another process's part refused and the exporter going on, a finished one refused).
 */
#define _GNU_SOURCE
#include "tests/support/nt_cmocka.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/nt_archive_header_encode.h"
#include "format/nt_record.h"
#include "format/nt_version.h"
#include "ship/nt_ship_internal.h"
#include "tests/support/nt_stream_header_test.h"

/* ---- protobuf, written here ---------------------------------------------------------------- */

typedef struct buf {
	uint8_t b[4096];
	size_t n;
} buf;

static void put_varint(buf *o, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		o->b[o->n++] = (uint8_t)(c | (v ? 0x80 : 0));
	} while (v);
}

static void put_len(buf *o, unsigned field, const buf *sub)
{
	put_varint(o, (uint64_t)field << 3 | 2);
	put_varint(o, sub->n);
	memcpy(o->b + o->n, sub->b, sub->n);
	o->n += sub->n;
}

static void put_str(buf *o, unsigned field, const char *s)
{
	buf t = { .n = strlen(s) };
	memcpy(t.b, s, t.n);
	put_len(o, field, &t);
}

/* A span: a name and a fixed64 start, so the walk skips other wire types. */
static buf span(const char *name)
{
	buf s = { .n = 0 };
	put_str(&s, 5, name);
	put_varint(&s, 7 << 3 | 1);
	memset(s.b + s.n, 0xab, 8);
	s.n += 8;
	return s;
}

/* ExportTraceServiceRequest: 2 ResourceSpans, with 2 + 1 ScopeSpans of 2, 1 and 3 spans. */
static buf trace_request(void)
{
	int per_scope[3] = { 2, 1, 3 };
	buf req = { .n = 0 };
	for (int r = 0, k = 0; r < 2; r++) {
		buf rs = { .n = 0 };
		buf resource = { .n = 0 };
		put_str(&resource, 1, "resource attributes are not counted");
		put_len(&rs, 1, &resource);
		for (int sc = 0; sc < (r == 0 ? 2 : 1); sc++, k++) {
			buf ss = { .n = 0 }, scope = { .n = 0 };
			put_str(&scope, 1, "category");
			put_len(&ss, 1, &scope);
			for (int i = 0; i < per_scope[k]; i++) {
				buf sp = span("s");
				put_len(&ss, 2, &sp);
			}
			put_len(&rs, 2, &ss);
		}
		put_len(&req, 1, &rs);
	}
	return req;
}

/* ExportMetricsServiceRequest: a gauge of 4 points and a metric without a gauge. */
static buf metrics_request(void)
{
	buf gauge = { .n = 0 }, metric = { .n = 0 }, other = { .n = 0 };
	for (int i = 0; i < 4; i++) {
		buf p = { .n = 0 };
		put_varint(&p, 6 << 3 | 0); /* as_int */
		put_varint(&p, (uint64_t)i);
		put_len(&gauge, 1, &p);
	}
	put_str(&metric, 1, "counter.value");
	put_len(&metric, 5, &gauge);
	put_str(&other, 1, "no gauge");
	buf sm = { .n = 0 }, rm = { .n = 0 }, req = { .n = 0 };
	put_len(&sm, 2, &metric);
	put_len(&sm, 2, &other);
	put_len(&rm, 2, &sm);
	put_len(&req, 1, &rm);
	return req;
}

static void test_counts(void **state)
{
	(void)state;
	buf t = trace_request(), m = metrics_request();
	assert_int_equal(nt_ship_pb_items(0, t.b, t.n), 6);
	assert_int_equal(nt_ship_pb_items(1, m.b, m.n), 4);
	assert_int_equal(nt_ship_pb_items(0, t.b, 0), 0); /* an empty request */
	/* every cut inside the request: refused or a count of what is whole, never more */
	for (size_t n = 1; n < t.n; n++) {
		int64_t c = nt_ship_pb_items(0, t.b, n);
		assert_msg(c == -1 || (c >= 0 && c <= 6), "cut at %zu: %lld", n, (long long)c);
	}
	/* a length past the end */
	uint8_t bad[] = { 0x0a, 0x7f, 0x12, 0x01 };
	assert_int_equal(nt_ship_pb_items(0, bad, sizeof(bad)), -1);
	/* a varint of 11 bytes */
	uint8_t longv[12];
	memset(longv, 0xff, sizeof(longv));
	assert_int_equal(nt_ship_pb_items(0, longv, sizeof(longv)), -1);
}

static void test_responses(void **state)
{
	(void)state;
	buf partial = { .n = 0 }, resp = { .n = 0 };
	put_varint(&partial, 1 << 3 | 0);
	put_varint(&partial, 3);
	put_str(&partial, 2, "three too old");
	put_len(&resp, 1, &partial);
	int64_t rejected;
	char text[8];
	assert_int_equal(nt_ship_pb_partial(resp.b, resp.n, &rejected, text, sizeof(text)), 1);
	assert_int_equal(rejected, 3);
	assert_string_equal(text, "three t"); /* cut to the buffer */
	assert_int_equal(nt_ship_pb_partial(resp.b, 0, &rejected, text, sizeof(text)), 0);
	buf empty = { .n = 0 }, none = { .n = 0 };
	put_len(&none, 1, &empty); /* partial_success present, nothing in it: a full success */
	assert_int_equal(nt_ship_pb_partial(none.b, none.n, &rejected, text, sizeof(text)), 0);
	const char *json = "{\"partialSuccess\":{}}";
	assert_int_equal(nt_ship_pb_partial((const uint8_t *)json, strlen(json), &rejected, text,
					    sizeof(text)), -1);
	buf status = { .n = 0 };
	put_varint(&status, 1 << 3 | 0);
	put_varint(&status, 3);
	put_str(&status, 2, "bad");
	char msg[64];
	assert_int_equal(nt_ship_pb_status_message(status.b, status.n, msg, sizeof(msg)), 1);
	assert_string_equal(msg, "bad");
	for (size_t n = 0; n < resp.n; n++)
		nt_ship_pb_partial(resp.b, n, &rejected, text, sizeof(text));
}

static void test_random_bodies(void **state)
{
	(void)state;
	unsigned seed = 27;
	uint8_t b[64];
	int64_t rejected;
	char text[32];
	for (int i = 0; i < 200000; i++) {
		size_t n = (size_t)rand_r(&seed) % sizeof(b);
		for (size_t k = 0; k < n; k++)
			b[k] = (uint8_t)rand_r(&seed);
		uint8_t *exact = malloc(n ? n : 1); /* ASan sees a read one past */
		memcpy(exact, b, n);
		int64_t c = nt_ship_pb_items(i & 1, exact, n);
		assert_true(c >= -1 && c <= (int64_t)n);
		int p = nt_ship_pb_partial(exact, n, &rejected, text, sizeof(text));
		assert_true(p >= -1 && p <= 1 && strlen(text) < sizeof(text));
		nt_ship_pb_status_message(exact, n, text, sizeof(text));
		free(exact);
	}
}

/* ---- configuration ---------------------------------------------------------------------- */

static void clear_env(void)
{
	extern char **environ;
	for (int again = 1; again;) {
		again = 0;
		for (char **e = environ; *e; e++)
			if (strncmp(*e, "OTEL_", 5) == 0) {
				char name[128];
				snprintf(name, sizeof(name), "%.*s", (int)(strchr(*e, '=') - *e), *e);
				unsetenv(name);
				again = 1;
				break;
			}
	}
	setenv("HOME", "/nonexistent-home", 1);
}

static int load(ship_conf *c, const nt_ship_config *cfg, char *why)
{
	return nt_ship_conf_load(c, cfg, why, 256);
}

static void test_endpoints(void **state)
{
	(void)state;
	clear_env();
	nt_ship_config cfg;
	nt_ship_config_init(&cfg);
	ship_conf c;
	char why[256];
	assert_int_equal(load(&c, &cfg, why), 0);
	assert_string_equal(c.sig[0].url, "http://localhost:4318/v1/traces");
	assert_string_equal(c.sig[1].url, "http://localhost:4318/v1/metrics");
	assert_int_equal(c.sig[0].timeout_ms, 10000);
	assert_int_equal(c.sig[0].gzip, 0);
	assert_string_equal(c.spool, "/nonexistent-home/.local/state/nanotrace/otlp-spool");
	nt_ship_conf_free(&c);

	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318//", 1);
	setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:1/custom", 1);
	setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", 1);
	setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "none", 1);
	setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2500", 1);
	setenv("XDG_STATE_HOME", "/state", 1);
	assert_int_equal(load(&c, &cfg, why), 0);
	assert_string_equal(c.sig[0].url, "https://collector:4318/v1/traces");
	assert_string_equal(c.sig[1].url, "http://m:1/custom");
	assert_int_equal(c.sig[0].gzip, 0);
	assert_int_equal(c.sig[1].gzip, 1);
	assert_int_equal(c.sig[1].timeout_ms, 2500);
	assert_string_equal(c.spool, "/state/nanotrace/otlp-spool");
	nt_ship_conf_free(&c);

	cfg.endpoint = "http://given:9/"; /* --otlp-endpoint: over every variable */
	assert_int_equal(load(&c, &cfg, why), 0);
	assert_string_equal(c.sig[0].url, "http://given:9/v1/traces");
	assert_string_equal(c.sig[1].url, "http://given:9/v1/metrics");
	nt_ship_conf_free(&c);

	static const char *const bad[][2] = {
		{ "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd" },
		{ "OTEL_EXPORTER_OTLP_TIMEOUT", "-1" },
		{ "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1e3" },
		{ "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		clear_env();
		setenv(bad[i][0], bad[i][1], 1);
		nt_ship_config_init(&cfg);
		memset(why, 0, sizeof(why));
		assert_int_equal(load(&c, &cfg, why), -1);
		assert_msg(strstr(why, bad[i][0]) != NULL, "%s: %s", bad[i][0], why);
		nt_ship_conf_free(&c);
	}
	clear_env();
	nt_ship_config_init(&cfg);
	cfg.endpoint = "collector:4318";
	assert_int_equal(load(&c, &cfg, why), -1);
	assert_non_null(strstr(why, "--otlp-endpoint"));
	nt_ship_conf_free(&c);
}

static void test_headers(void **state)
{
	(void)state;
	clear_env();
	setenv("OTEL_EXPORTER_OTLP_HEADERS", " api-key = s%3Dcr%2Cet , X-Team=a b,empty=", 1);
	setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "API-KEY=traces%0D%0AEvil: 1", 1);
	nt_ship_config cfg;
	nt_ship_config_init(&cfg);
	ship_conf c;
	char why[256];
	assert_int_equal(load(&c, &cfg, why), 0);
	char **t = c.sig[0].headers, **m = c.sig[1].headers;
	assert_string_equal(t[0], "API-KEY: traces  Evil: 1"); /* the signal's, one line */
	assert_string_equal(t[1], "X-Team: a b");
	assert_string_equal(t[2], "empty;"); /* libcurl's form of an empty header */
	assert_null(t[3]);
	assert_string_equal(m[0], "api-key: s=cr,et");
	assert_null(m[3]);
	nt_ship_conf_free(&c);
	static const char *const bad[] = { "k=v,novalue", "bad name=v", "a:b=c", "=v" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("OTEL_EXPORTER_OTLP_HEADERS", bad[i], 1);
		assert_int_equal(load(&c, &cfg, why), -1);
		assert_non_null(strstr(why, "OTEL_EXPORTER_OTLP_HEADERS"));
		assert_null(strstr(why, "novalue")); /* never quoted: it may be a secret */
		nt_ship_conf_free(&c);
	}
	/* the caller's list (cfg.headers) stands for the variables */
	cfg.headers = "Authorization=Bearer%20x";
	assert_int_equal(load(&c, &cfg, why), 0);
	assert_string_equal(c.sig[0].headers[0], "Authorization: Bearer x");
	assert_null(c.sig[0].headers[1]);
	nt_ship_conf_free(&c);
}

/* ---- a streaming section's parts ----------------------------------------------------------- */

/* A top-level record of `words` 8-byte words: word 0 its kind and size, then `fill`. */
static size_t put_record(uint8_t *at, unsigned kind, unsigned words, uint8_t fill)
{
	uint64_t w0 = kind | (uint64_t)words << 8;
	memcpy(at, &w0, 8);
	memset(at + 8, fill, 8 * (words - 1));
	return 8 * (size_t)words;
}

static void test_part_build(void **state)
{
	(void)state;
	uint8_t header[16], r1[128], r2[64], want[512];
	memset(header, 'H', sizeof(header));
	size_t n1 = 0, n2 = 0, w = 0;
	n1 += put_record(r1 + n1, NT_KIND_STRING, 2, 'a');
	n1 += put_record(r1 + n1, NT_KIND_CHUNK, 3, 'b');
	n1 += put_record(r1 + n1, NT_KIND_THREAD, 1, 0);
	n1 += put_record(r1 + n1, NT_KIND_ZCHUNK, 2, 'c');
	nt_ship_durable d = { 0 };
	uint8_t *part;
	size_t len;
	assert_int_equal(nt_ship_part_build(&d, header, sizeof(header), r1, n1, &part, &len), 0);
	memcpy(want, header, 16);
	w = 16;
	memcpy(want + w, r1, 16), w += 16;          /* the string */
	memcpy(want + w, r1 + 40, 8), w += 8;       /* the thread */
	memcpy(want + w, r1 + 16, 24), w += 24;     /* the chunks, in order */
	memcpy(want + w, r1 + 48, 16), w += 16;
	assert_int_equal(len, w);
	assert_memory_equal(part, want, w);
	free(part);
	assert_int_equal(d.len, 24);
	/* the next range: the durable records so far, its own durable one, its chunk, and 5
	 * bytes that do not frame (as they are, for the reader to report) */
	n2 += put_record(r2 + n2, NT_KIND_CHUNK, 2, 'd');
	n2 += put_record(r2 + n2, NT_KIND_CALLSITE, 2, 'e');
	memset(r2 + n2, 0x5a, 5), n2 += 5;
	assert_int_equal(nt_ship_part_build(&d, header, sizeof(header), r2, n2, &part, &len), 0);
	w = 16;
	memcpy(want + w, r1, 16), w += 16;
	memcpy(want + w, r1 + 40, 8), w += 8;
	memcpy(want + w, r2 + 16, 16), w += 16;
	memcpy(want + w, r2, 16), w += 16;
	memcpy(want + w, r2 + 32, 5), w += 5;
	assert_int_equal(len, w);
	assert_memory_equal(part, want, w);
	free(part);
	/* an empty range: the header and the durable records */
	assert_int_equal(nt_ship_part_build(&d, header, sizeof(header), r2, 0, &part, &len), 0);
	assert_int_equal(len, 16 + 40);
	free(part);
	free(d.p);
}

static int count_emit(void *ctx, nt_otlp_signal signal, const uint8_t *msg, size_t len)
{
	(void)signal, (void)msg, (void)len;
	++*(int *)ctx;
	return 0;
}

/* An archive of a header alone, of process `pid`. */
static nt_reader *empty_archive(uint32_t pid, uint8_t *buf, size_t cap)
{
	nt_archive_info in;
	test_stream_header(&in);
	in.pid = pid;
	in.start_realtime_ns = 1700000000000000000ull;
	size_t n = nt_header_encode_stream(&in, buf, cap);
	assert_true(n > 0);
	nt_reader_error e;
	nt_reader *r = nt_reader_open_memory(buf, n, "part", &e);
	assert_non_null(r);
	return r;
}

static void test_exporter_arguments(void **state)
{
	(void)state;
	uint8_t b1[4096], b2[4096];
	int requests = 0;
	errno = 0;
	assert_null(nt_otlp_exporter_new(NULL, NULL, NULL));
	assert_int_equal(errno, EINVAL);
	nt_otlp_exporter *x = nt_otlp_exporter_new(NULL, count_emit, &requests);
	assert_non_null(x);
	nt_reader *mine = empty_archive(41, b1, sizeof(b1)), *other = empty_archive(42, b2,
										      sizeof(b2));
	assert_int_equal(nt_otlp_exporter_add(NULL, mine), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(nt_otlp_exporter_add(x, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(nt_otlp_exporter_add(x, mine), 0);
	errno = 0;
	assert_int_equal(nt_otlp_exporter_add(x, other), -1); /* another process: refused */
	assert_int_equal(errno, EINVAL);
	assert_int_equal(nt_otlp_exporter_add(x, mine), 0);   /* and the exporter goes on */
	assert_int_equal(requests, 0);                        /* nothing to send */
	assert_int_equal(nt_otlp_exporter_finish(x), 0);
	assert_int_equal(nt_otlp_exporter_finish(x), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(nt_otlp_exporter_add(x, mine), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(nt_otlp_exporter_finish(NULL), -1);
	nt_otlp_exporter_free(x);
	nt_otlp_exporter_free(NULL);
	nt_reader_close(mine);
	nt_reader_close(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),     cmocka_unit_test(test_responses),
		cmocka_unit_test(test_random_bodies), cmocka_unit_test(test_endpoints),
		cmocka_unit_test(test_headers),    cmocka_unit_test(test_part_build),
		cmocka_unit_test(test_exporter_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
