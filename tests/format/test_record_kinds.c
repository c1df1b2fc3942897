/*
 * test_record_kinds.c - every record kind, 0..255, is classified the same way by the writer
 * (what it records and counts as written), the streaming saver (piece event counts and
 * ordinals) and the reader (what it delivers, and where it sees gaps): all of them ask
 * format/nt_record.h, and this test proves the answers agree end to end. Byte 0 of 128..255
 * is a compact record (format 2): every code of its head is classified here too.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "format/nt_record.h"
#include "tests/support/nt_test_util.h"

static uint16_t kind_site_names[1];
static nt_callsite kind_site = { .category = "kinds", .name = "k", .file = __FILE__,
				 .line = __LINE__, .arg_names = kind_site_names, .arg_count = 1 };
static nt_callsite kind_site_no_args = { .category = "kinds", .name = "k0", .file = __FILE__,
					 .line = __LINE__ };

/* Emits every kind through the writer's entry points, with an Instant after each: the
 * plain entry points record the kinds without an id, the id ones (nt_emit_id_ and
 * nt_emit_id_args_, id 7 k) the async and flow kinds; neither records anything else. */
static uint64_t emit_every_kind(void)
{
	uint64_t events = 0;
	for (unsigned k = 0; k < 256; k++) {
		nt_arg a = NT_U32("k", k);
		if (k % 2) {
			nt_emit_args_(&kind_site, k, &a, 1);
			nt_emit_id_args_(&kind_site, k, 7u * k, &a, 1);
		} else {
			nt_emit_(&kind_site_no_args, k);
			nt_emit_id_(&kind_site_no_args, k, 7u * k);
		}
		NT_INSTANT("kinds", "after", NT_U32("k", k));
		events += 1 + (uint64_t)nt_kind_is_plain_event(k) + (uint64_t)nt_kind_has_id(k);
	}
	return events;
}

static void writer_and_reader_agree_in_mode(int mode)
{
	char path[256];
	test_tmp_path(path, sizeof(path), "kinds");
	unlink(path);
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = mode;
	cfg.path = path;
	cfg.buffer_size = 256 * 1024;
	assert_int_equal(nt_start(&cfg), NT_OK);
	uint64_t made = emit_every_kind();
	assert_int_equal(nt_finish(path), NT_OK);

	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	unlink(path);
	assert_int_equal(t.errors, 0);
	assert_int_equal(t.gaps, 0);
	assert_int_equal(t.n, made);
	assert_int_equal(t.info.events_written, made);
	assert_int_equal(t.info.events_dropped + t.info.events_overwritten, 0);
	unsigned seen[256] = { 0 };
	for (size_t i = 0; i < t.n; i++) {
		assert_true(nt_kind_is_event(t.ev[i].kind));
		if (strcmp(t.ev[i].name, "k") == 0)
			assert_int_equal(t.ev[i].args[0].value.u64, t.ev[i].kind);
		if (t.ev[i].name[0] == 'k')
			seen[t.ev[i].kind]++;
		assert_int_equal(t.ev[i].id, nt_kind_has_id(t.ev[i].kind) ? 7u * t.ev[i].kind : 0);
		assert_int_equal(t.ev[i].id_scope, nt_kind_id_scope(t.ev[i].kind));
	}
	for (unsigned k = 0; k < 256; k++)
		assert_int_equal(seen[k], nt_kind_is_plain_event(k) || nt_kind_has_id(k) ? 1 : 0);
	test_trace_free(&t);
}

static void kinds_agree_oneshot(void **state)
{
	(void)state;
	writer_and_reader_agree_in_mode(NT_MODE_ONESHOT);
}

static void kinds_agree_circular(void **state)
{
	(void)state;
	writer_and_reader_agree_in_mode(NT_MODE_CIRCULAR);
}

static void kinds_agree_streaming(void **state)
{
	(void)state;
	writer_and_reader_agree_in_mode(NT_MODE_STREAMING);
}

#define PROBES 8

/* Offset of the first event from the second on (to the last but one) whose record is
 * compact (`compact`) or not, and its index in *which. A compact record may be wide when its
 * delta is long (a page fault in between, a slow sanitizer build). */
static uint64_t offset_of_probe(const uint8_t *data, size_t size, int compact, unsigned *which)
{
	test_trace t;
	assert_int_equal(test_read_memory(data, size, NT_ORDER_STREAM, &t), 0);
	assert_int_equal(t.n, PROBES);
	for (unsigned i = 1; i + 1 < PROBES; i++) {
		uint64_t at = t.ev[i].offset;
		if (nt_head_is_compact(nt_record_head_at(data + at)) == compact) {
			test_trace_free(&t);
			*which = i;
			return at;
		}
	}
	fail_msg("no %s event among %u", compact ? "compact" : "wide", PROBES);
	return 0;
}

static uint16_t probe_site_names[1];
static nt_callsite probe_site = { .category = "kinds", .name = "probe", .file = __FILE__,
				  .line = __LINE__, .arg_names = probe_site_names, .arg_count = 1 };

/* An archive of PROBES Instants with one uint32 argument, i + 7: compact records (4-byte
 * head and value) from the macro's fast path, or 8-byte word 0 and an ArgHeader from the
 * generic path (`generic`). */
static uint8_t *probe_instants(int generic, size_t *size)
{
	char path[256];
	test_tmp_path(path, sizeof(path), "kinds-reader");
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.compression_level = NT_COMPRESSION_OFF; /* the records as the writer wrote them */
	assert_int_equal(nt_start(&cfg), NT_OK);
	for (unsigned i = 0; i < PROBES; i++) {
		nt_arg a = NT_U32("i", i + 7);
		if (generic)
			nt_emit_args_(&probe_site, NT_KIND_INSTANT, &a, 1);
		else
			NT_INSTANT("kinds", "probe", NT_U32("i", i + 7));
	}
	assert_int_equal(nt_finish(path), NT_OK);
	uint8_t *data = test_slurp(path, size);
	assert_non_null(data);
	unlink(path);
	return data;
}

/* `orig` with byte 0 of the record at `at` made `byte0` (in `copy`), read back into *t. */
static void read_patched(const uint8_t *orig, uint8_t *copy, size_t size, uint64_t at,
			 unsigned byte0, test_trace *t)
{
	memcpy(copy, orig, size);
	copy[at] = (uint8_t)byte0;
	assert_int_equal(test_read_memory(copy, size, NT_ORDER_STREAM, t), 0);
}

/* The patched record read as `kind`: no damage, no gap (an event of a kind this reader does
 * not know, 64..127, still takes its ordinal), delivered (event `which` of the PROBES)
 * exactly when it is an event this reader knows. */
static void assert_read_as(const test_trace *t, unsigned kind, unsigned which)
{
	if (t->errors)
		print_error("kind %u: %s\n", kind, t->first_error);
	assert_int_equal(t->errors, 0);
	assert_int_equal(t->gaps, 0);
	assert_int_equal(t->n, PROBES - 1 + (unsigned)nt_kind_is_known_event(kind));
	if (nt_kind_is_known_event(kind))
		assert_int_equal(t->ev[which].kind, kind);
}

/* The reader's half for kinds the writer never records: a record of any kind in a chunk is
 * delivered as an event exactly when nt_kind_is_event() says so, framed by its size
 * otherwise, and never shifts the ordinals of the events after it. */
static void reader_classifies_every_kind(void **state)
{
	(void)state;
	size_t size;
	unsigned which;
	uint8_t *orig = probe_instants(1, &size), *copy = malloc(size);
	const uint64_t at = offset_of_probe(orig, size, 0, &which);
	uint64_t base[256], counts[256];
	nt_reader *r = nt_reader_open_memory(orig, size, "orig", NULL);
	assert_non_null(r);
	nt_reader_count_records(r, base);
	nt_reader_close(r);
	for (unsigned k = 1; k < NT_COMPACT_FLAG; k++) {
		test_trace t;
		read_patched(orig, copy, size, at, k, &t);
		assert_read_as(&t, k, which);
		test_trace_free(&t);
		/* What the visit does not deliver is counted by kind (--stats says so): a kind this
		 * reader does not know, or a record that is no event. */
		r = nt_reader_open_memory(copy, size, "copy", NULL);
		assert_non_null(r);
		nt_reader_count_records(r, counts);
		nt_reader_close(r);
		assert_int_equal(counts[k], base[k] + (nt_kind_is_known_event(k) ? 0 : 1));
	}
	free(orig);
	free(copy);
}

/* The same for every code of a compact head (byte 0 of 128..255): a Pad is framed by its
 * values and delivers nothing; Begin, End, Instant, Counter and the Trace2 region enter and
 * leave deliver their kind with the call site's arguments; a reserved code or bit is damage,
 * reported at the record, that never shifts the ordinals of the events after it. */
static void reader_classifies_every_compact_code(void **state)
{
	(void)state;
	size_t size;
	unsigned which;
	uint8_t *orig = probe_instants(0, &size), *copy = malloc(size);
	const uint64_t at = offset_of_probe(orig, size, 1, &which);
	uint32_t head = nt_record_head_at(orig + at);
	assert_int_equal(nt_compact_kind(head), NT_KIND_INSTANT);
	assert_int_equal(nt_compact_values(head), 1);
	for (unsigned b = NT_COMPACT_FLAG; b < 256; b++) {
		if (((b >> 3) & 7u) != 1)
			continue; /* another value count frames another size: not this test */
		test_trace t;
		read_patched(orig, copy, size, at, b, &t);
		unsigned kind = nt_compact_kind(nt_record_head_at(copy + at));
		if (kind == NT_KIND_INVALID) {
			assert_true(t.errors >= 1);
			assert_non_null(strstr(t.first_error, "compact record has a reserved code"));
			test_trace_free(&t);
			continue;
		}
		assert_read_as(&t, kind, which);
		if (nt_kind_is_event(kind)) {
			assert_int_equal(t.ev[which].nargs, 1);
			assert_int_equal(t.ev[which].args[0].value.u64, 7 + which);
		}
		assert_int_equal(t.ev[t.n - 1].args[0].value.u64, 7 + PROBES - 1);
		test_trace_free(&t);
	}
	free(orig);
	free(copy);
}

/* A compact head's code and its kind: nt_compact_code() inverts nt_compact_kinds for every
 * code that carries an event, and gives no code to any other kind. */
static void compact_codes_invert_kinds(void **state)
{
	(void)state;
	unsigned with_code = 0;
	for (unsigned kind = 0; kind < 256; kind++) {
		unsigned code = nt_compact_code(kind);
		assert_true(code < 7);
		if (code == 0)
			continue;
		with_code++;
		assert_int_equal(nt_compact_kinds[code], kind);
		assert_true(nt_kind_has_compact(kind));
	}
	for (unsigned code = 1; code < 7; code++)
		assert_int_equal(nt_compact_code(nt_compact_kinds[code]), code);
	assert_int_equal(with_code, 6);
	assert_int_equal(nt_compact_kind(7), NT_KIND_INVALID);
	assert_int_equal(nt_compact_kind(0x40u | 3u), NT_KIND_INVALID);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(compact_codes_invert_kinds),
		cmocka_unit_test(kinds_agree_oneshot),
		cmocka_unit_test(kinds_agree_circular),
		cmocka_unit_test(kinds_agree_streaming),
		cmocka_unit_test(reader_classifies_every_kind),
		cmocka_unit_test(reader_classifies_every_compact_code),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
