/*
 * otlp_parts.c - the reader's incremental OTLP exporter against its whole export.
 *
 *   otlp_parts ARCHIVE K WHOLE PARTS
 *
 * ARCHIVE is a Stream-layout archive (a bundle's compact section: header, then records).
 * WHOLE gets nt_otlp_export's requests of it; PARTS those of the same records cut into K
 * ranges at record boundaries (as many records each, the last takes the rest), each made
 * an archive by the shipper's own step (nt_ship_part_build: the header with events_written
 * 0, the durable records so far, the range's others) and added to one nt_otlp_exporter,
 * finished at the end. Both visit in stream order (NT_ORDER_STREAM), so the K parts visit
 * the events in the whole's order: a test (tests/ship/test_ship.py) then finds the same
 * spans with the same ids. Each file is doc/otlp_file.proto's File (trace-dump --format
 * otlp's). Exit 0, or 1 with a message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/nt_archive_header_decode.h"
#include "format/nt_archive_header_encode.h"
#include "format/nt_record.h"
#include "ship/nt_ship_internal.h"

/* A request as a File field: traces 1, metrics 2 (length-delimited). */
static int emit_file(void *ctx, nt_otlp_signal signal, const uint8_t *msg, size_t len)
{
	FILE *f = ctx;
	uint8_t head[11];
	size_t n = 0;
	head[n++] = (uint8_t)((signal == NT_OTLP_METRICS ? 2 : 1) << 3 | 2);
	for (uint64_t v = len;; v >>= 7) {
		head[n++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
		if (v >> 7 == 0)
			break;
	}
	return fwrite(head, 1, n, f) != n || fwrite(msg, 1, len, f) != len;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	long n = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)n)) != NULL &&
	    fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	if (f)
		fclose(f);
	*len = (size_t)(n > 0 ? n : 0);
	return p;
}

static int fail(const char *what)
{
	fprintf(stderr, "otlp_parts: %s\n", what);
	return 1;
}

static int export_whole(const uint8_t *data, size_t len, const nt_render_options *opt,
			const char *out)
{
	FILE *f = fopen(out, "wb");
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, len, "whole", &err);
	int rc = f && r && nt_otlp_export(r, opt, emit_file, f) >= 0 ? 0 : -1;
	nt_reader_close(r);
	if (f && fclose(f) != 0)
		rc = -1;
	return rc;
}

/* The records' cut points: k ranges of as many records each. */
static int export_parts(const uint8_t *records, size_t len, const uint8_t *header,
			size_t header_len, unsigned k, const nt_render_options *opt,
			const char *out)
{
	uint64_t count = 0, off = 0, bytes;
	while (off < len && nt_top_record_frame(records, len, off, &bytes) == NT_FRAME_OK)
		off += bytes, count++;
	if (off != len)
		return -1;
	FILE *f = fopen(out, "wb");
	nt_otlp_exporter *x = f ? nt_otlp_exporter_new(opt, emit_file, f) : NULL;
	nt_ship_durable d = { 0 };
	int rc = x ? 0 : -1;
	uint64_t from = 0, seen = 0;
	off = 0;
	for (unsigned i = 0; rc == 0 && i < k; i++) {
		uint64_t want = i + 1 == k ? count : count * (i + 1) / k;
		for (; seen < want; seen++) {
			nt_top_record_frame(records, len, off, &bytes);
			off += bytes;
		}
		uint8_t *part;
		size_t part_len;
		nt_reader_error err;
		if (nt_ship_part_build(&d, header, header_len, records + from, off - from, &part,
				       &part_len) != 0) {
			rc = -1;
			break;
		}
		nt_reader *r = nt_reader_open_memory(part, part_len, "part", &err);
		if (r == NULL || nt_otlp_exporter_add(x, r) < 0)
			rc = -1;
		nt_reader_close(r);
		free(part);
		from = off;
	}
	if (rc == 0 && nt_otlp_exporter_finish(x) != 0)
		rc = -1;
	nt_otlp_exporter_free(x);
	free(d.p);
	if (f && fclose(f) != 0)
		rc = -1;
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 5 || atoi(argv[2]) < 1)
		return fail("usage: otlp_parts ARCHIVE K WHOLE PARTS");
	size_t len;
	uint8_t *data = slurp(argv[1], &len);
	nt_archive_info info;
	char why[200];
	uint64_t where;
	if (data == NULL)
		return fail("cannot read the archive");
	if (nt_header_decode(data, len, &info, why, sizeof(why), &where) == 0 ||
	    info.layout != NT_LAYOUT_STREAM || info.data_offset > len)
		return fail("not a Stream-layout archive");
	nt_render_options opt;
	nt_render_options_init(&opt);
	opt.order = NT_ORDER_STREAM;
	if (export_whole(data, len, &opt, argv[3]) != 0)
		return fail("the whole export failed");
	uint8_t header[NT_ARENA_HEADER_BYTES];
	info.events_written = 0; /* not counted: a part holds some */
	size_t header_len = nt_header_encode_stream(&info, header, sizeof(header));
	if (header_len == 0 ||
	    export_parts(data + info.data_offset, len - info.data_offset, header, header_len,
			 (unsigned)atoi(argv[2]), &opt, argv[4]) != 0)
		return fail("the export in parts failed");
	free(data);
	return 0;
}
