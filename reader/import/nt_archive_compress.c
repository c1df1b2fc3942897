/*
 * nt_archive_compress.c - compresses the chunks of a Stream-layout archive in memory
 * (nt_archive_compress in nanotrace_reader.h): what trace-import does to the archive an
 * import builds, with the same encoder the savers use (format/nt_zchunk.h).
 *
 * The input is untrusted like any archive: its header is decoded and verified by
 * format/nt_archive_header_decode.c, every top-level record is framed by format/nt_record.h
 * before it is copied, and the output is never larger than the input plus the re-encoded
 * header (at most 1 KiB).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanotrace/nanotrace_reader.h>
#include "format/nt_archive_header_decode.h"
#include "format/nt_archive_header_encode.h"
#include "format/nt_record.h"
#include "format/nt_zchunk.h"

#define HEADER_CAP 1024u

static int fail(nt_reader_error *err, uint64_t offset, const char *what)
{
	if (err != NULL) {
		err->offset = offset;
		snprintf(err->message, sizeof(err->message), "%s", what);
	}
	return -1;
}

/* The records [from, size) of `in` into `out` at *o, chunks compressed when they shrink. */
static int copy_records(const uint8_t *in, size_t size, uint64_t from, nt_zchunk_encoder *e,
			uint8_t *out, size_t *o, nt_reader_error *err)
{
	uint64_t off = from, rec;
	while (off < size) {
		nt_frame f = nt_record_frame(size - off >= 8 ? nt_record_word_at(in + off) : 0,
					     size - off, 1, &rec);
		if (f != NT_FRAME_OK)
			return fail(err, off, nt_frame_problem(f));
		size_t z = 0;
		if (e != NULL && in[off] == NT_KIND_CHUNK && rec <= NT_MAX_ZCHUNK_BYTES)
			z = nt_zchunk_encode(e, in + off, rec, out + *o, rec);
		if (z == 0)
			memcpy(out + *o, in + off, rec);
		*o += z ? z : rec;
		off += rec;
	}
	return 0;
}

int nt_archive_compress(const void *archive, size_t size, int level, void **out,
			size_t *out_size, nt_reader_error *err)
{
	const uint8_t *in = archive;
	nt_archive_info info;
	char why[200];
	uint64_t where = 0;
	if (archive == NULL || out == NULL || out_size == NULL)
		return fail(err, 0, "nt_archive_compress: invalid argument");
	if (!nt_zchunk_level_ok(level))
		return fail(err, 0, "nt_archive_compress: level out of range");
	uint64_t start = nt_header_decode(in, size, &info, why, sizeof(why), &where);
	if (start == 0)
		return fail(err, where, why);
	if (info.layout != NT_LAYOUT_STREAM)
		return fail(err, 0, "only a Stream-layout archive (a finished one) can be compressed");
	if (info.data_offset >= start && info.data_offset <= size && info.data_offset % 8 == 0)
		start = info.data_offset;
	info.compression = level ? NT_ZCHUNK_CODEC : NT_CODEC_NONE;
	info.compression_level = level;
	uint8_t header[HEADER_CAP];
	size_t hlen = nt_header_encode_stream(&info, header, sizeof(header));
	nt_zchunk_encoder *e = level ? nt_zchunk_encoder_new(level) : NULL;
	uint8_t *buf = malloc(hlen + size);
	if (hlen == 0 || buf == NULL || (level != 0 && e == NULL)) {
		free(buf);
		nt_zchunk_encoder_free(e);
		return fail(err, 0, hlen == 0 ? "the header does not re-encode" : "out of memory");
	}
	memcpy(buf, header, hlen);
	size_t o = hlen;
	int rc = copy_records(in, size, start, e, buf, &o, err);
	nt_zchunk_encoder_free(e);
	if (rc != 0) {
		free(buf);
		return -1;
	}
	*out = buf;
	*out_size = o;
	return 0;
}
