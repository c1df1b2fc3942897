/*
 * nt_render_otlp_json.c - OTLP requests as files: protobuf (a message whose field 1 is
 * each trace request and field 2 each metrics request, doc/otlp_file.proto) or OTLP/JSON
 * lines, which the Collector's otlpjsonfile receiver reads.
 *
 * The JSON is not a second encoder: each encoded request is walked by the rows of
 * NT_OT_FIELDS (message by message, each message's fields read once and each row's
 * occurrences gathered, repeated ones as an array), so the JSON holds exactly the
 * protobuf's fields, named and written as OTLP's
 * JSON encoding says: lowerCamelCase names, trace and span ids as hex strings, 64-bit
 * integers as decimal strings, enums as numbers, doubles as numbers ("NaN", "Infinity"
 * as strings).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nt_render_otlp.h"

enum { J_MSG, J_STR, J_HEX, J_U32, J_ENUM, J_BOOL, J_I64S, J_F64S, J_S64S, J_DBL };

typedef struct ot_row {
	uint8_t msg, wire, kind, sub, rep;
	uint32_t num;
	const char *json;
	size_t json_len;
} ot_row;

#define OT_ROW(c, m, pm, f, j, number, w, jk, s, r)                                            \
	{ OT_M_##m, NT_PF_WIRE_##w, J_##jk, OT_M_##s, OT_##r, number, j, sizeof(j) - 1 },
static const ot_row rows[] = { NT_OT_FIELDS(OT_ROW) };
#undef OT_ROW
#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* A varint at *q (before end) into *x; 0 when cut short or too long. */
static int varint(const uint8_t **q, const uint8_t *end, uint64_t *x)
{
	*x = 0;
	for (int shift = 0; shift <= 63; shift += 7) {
		if (*q >= end)
			return 0;
		uint8_t byte = *(*q)++;
		*x |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return 1;
	}
	return 0;
}

/* One field of [*p, end): its number, wire type, and value (a varint or fixed64 in *v,
 * bytes at *s of *n). 0 at the end or on bytes that are no field. */
static int field(const uint8_t **p, const uint8_t *end, uint32_t *num, uint32_t *wire,
		 uint64_t *v, const uint8_t **s, size_t *n)
{
	uint64_t tag, x = 0;
	const uint8_t *q = *p;
	if (!varint(&q, end, &tag))
		return 0;
	*num = (uint32_t)(tag >> 3);
	*wire = (uint32_t)(tag & 7);
	if (*wire == NT_PF_WIRE_F) {
		if (end - q < 8)
			return 0;
		for (int i = 7; i >= 0; i--)
			x = x << 8 | q[i];
		q += 8;
	} else if (*wire == NT_PF_WIRE_V || *wire == NT_PF_WIRE_L) {
		if (!varint(&q, end, &x))
			return 0;
		if (*wire == NT_PF_WIRE_L) {
			if (x > (uint64_t)(end - q))
				return 0;
			*s = q, *n = (size_t)x;
			q += x;
		}
	} else {
		return 0;
	}
	*v = x;
	*p = q;
	return 1;
}

/* The rows of each message: rows[first[m]] up to the first row of another message (the
 * table lists each message's rows together; nt_otlp_json_line checks it). */
typedef struct ot_walk {
	nt_out *o;
	uint8_t first[OT_M_COUNT];
} ot_walk;

static int message(ot_walk *w, uint32_t m, const uint8_t *p, size_t len, int depth);

static void hex(nt_out *o, const uint8_t *s, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	nt_out_char(o, '"');
	for (size_t i = 0; i < n; i++) {
		nt_out_char(o, digits[s[i] >> 4]);
		nt_out_char(o, digits[s[i] & 15]);
	}
	nt_out_char(o, '"');
}

static void dbl(nt_out *o, uint64_t bits)
{
	double d;
	memcpy(&d, &bits, 8);
	if (isnan(d))
		nt_out_str(o, "\"NaN\"");
	else if (isinf(d))
		nt_out_str(o, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	else
		nt_out_printf(o, "%.17g", d);
}

static int value(ot_walk *w, const ot_row *r, uint64_t v, const uint8_t *s, size_t n,
		 int depth)
{
	nt_out *o = w->o;
	switch (r->kind) {
	case J_MSG: return message(w, r->sub, s, n, depth + 1);
	case J_STR: nt_out_json_str(o, (const char *)s, n); break;
	case J_HEX: hex(o, s, n); break;
	case J_U32:
	case J_ENUM: nt_out_u64(o, v); break;
	case J_BOOL: nt_out_str(o, v ? "true" : "false"); break;
	case J_F64S:
		nt_out_char(o, '"');
		nt_out_u64(o, v);
		nt_out_char(o, '"');
		break;
	case J_I64S:
	case J_S64S:
		nt_out_char(o, '"');
		nt_out_i64(o, (int64_t)v);
		nt_out_char(o, '"');
		break;
	default: dbl(o, v); break;
	}
	return 0;
}

/* One occurrence of row r: its key the first time (an array opened for a repeated row), a
 * comma before the next. -1 on a singular field seen twice (never written by the exporter)
 * or bytes that are no message. */
static int occurrence(ot_walk *w, const ot_row *r, int count, int first, uint64_t v,
		      const uint8_t *s, size_t n, int depth)
{
	nt_out *o = w->o;
	if (count == 0) {
		nt_out_bytes(o, first ? "\"" : ",\"", first ? 1 : 2);
		nt_out_bytes(o, r->json, r->json_len);
		nt_out_bytes(o, "\":[", r->rep ? 3 : 2);
	} else if (r->rep) {
		nt_out_char(o, ',');
	} else {
		return -1;
	}
	return value(w, r, v, s, n, depth);
}

/* Row r's occurrences in [p, p + len), read by walking the message again: one value (the
 * last, as protobuf reads a repeated scalar field), or an array. Returns how many, or -1
 * on bytes that are no message. */
static int row(ot_walk *w, const ot_row *r, const uint8_t *p, size_t len, int first, int depth)
{
	const uint8_t *q = p, *end = p + len, *s = NULL;
	uint32_t num, wire;
	uint64_t v;
	size_t n = 0;
	int count = 0;
	while (q < end) {
		if (!field(&q, end, &num, &wire, &v, &s, &n))
			return -1;
		if (num != r->num || wire != r->wire)
			continue;
		if (occurrence(w, r, count, first, v, s, n, depth) < 0)
			return -1;
		count++;
	}
	if (count && r->rep)
		nt_out_char(w->o, ']');
	return count;
}

/* A message's fields found in one walk, each with its row: a span's dozen fields would
 * otherwise be walked once per row of its type. A message of more fields than this takes
 * row() for each row instead. */
#define OT_OCC_MAX 64
typedef struct ot_occ {
	uint64_t v;
	const uint8_t *s;
	size_t n;
	size_t row;
} ot_occ;

/* The row of field `num` of wire type `wire` among rows [lo, hi), looked for from `from`
 * on (the exporter writes a message's fields in the order of its rows, so the row after the
 * last one found is nearly always the next); hi when none. */
static size_t row_of(size_t lo, size_t hi, size_t from, uint32_t num, uint32_t wire)
{
	for (size_t k = 0, i = from; k < hi - lo; k++, i = i + 1 < hi ? i + 1 : lo)
		if (rows[i].num == num && rows[i].wire == wire)
			return i;
	return hi;
}

/* 1: every field of [p, p + len) with a row in [lo, hi) is in occ[0 .. *count), in the
 * order of the bytes; 0: more than OT_OCC_MAX; -1: bytes that are no message. */
static int index_fields(const uint8_t *p, size_t len, size_t lo, size_t hi, ot_occ *occ,
			size_t *count)
{
	const uint8_t *q = p, *end = p + len, *s = NULL;
	uint32_t num, wire;
	uint64_t v;
	size_t n = 0, k = 0, from = lo;
	int fits = 1;
	while (q < end) {
		if (!field(&q, end, &num, &wire, &v, &s, &n))
			return -1;
		size_t i = row_of(lo, hi, from, num, wire);
		if (i == hi)
			continue;
		from = i;
		if (k == OT_OCC_MAX)
			fits = 0; /* walked on to the end: bytes that are no message are still -1 */
		else
			occ[k++] = (ot_occ){ .v = v, .s = s, .n = n, .row = i };
	}
	*count = k;
	return fits;
}

/* The indexed fields in the order of their rows, each row's in the order of the bytes
 * (a stable insertion sort: the exporter's order is nearly always this one already, so it
 * costs one comparison a field). */
static void sort_by_row(ot_occ *occ, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		ot_occ x = occ[i];
		size_t j = i;
		for (; j > 0 && occ[j - 1].row > x.row; j--)
			occ[j] = occ[j - 1];
		occ[j] = x;
	}
}

/* Each row's occurrences among the indexed fields (sorted by row), as row() writes them. */
static int rows_indexed(ot_walk *w, ot_occ *occ, size_t nocc, int depth)
{
	sort_by_row(occ, nocc);
	for (size_t k = 0; k < nocc;) {
		const ot_row *r = &rows[occ[k].row];
		int count = 0;
		for (size_t i = occ[k].row; k < nocc && occ[k].row == i; k++, count++)
			if (occurrence(w, r, count, k == 0, occ[k].v, occ[k].s, occ[k].n, depth) < 0)
				return -1;
		if (r->rep)
			nt_out_char(w->o, ']');
	}
	return 0;
}

static int message(ot_walk *w, uint32_t m, const uint8_t *p, size_t len, int depth)
{
	if (depth > 16 || m >= OT_M_COUNT)
		return -1;
	size_t lo = w->first[m], hi = lo, nocc = 0;
	while (hi < NROWS && rows[hi].msg == m)
		hi++;
	ot_occ occ[OT_OCC_MAX];
	int indexed = index_fields(p, len, lo, hi, occ, &nocc);
	if (indexed < 0)
		return -1;
	nt_out_char(w->o, '{');
	if (indexed) {
		if (rows_indexed(w, occ, nocc, depth) < 0)
			return -1;
	} else {
		int first = 1;
		for (size_t i = lo; i < hi; i++) {
			int n = row(w, &rows[i], p, len, first, depth);
			if (n < 0)
				return -1;
			if (n)
				first = 0;
		}
	}
	nt_out_char(w->o, '}');
	return 0;
}

int nt_otlp_json_line(nt_out *out, int metrics, const uint8_t *msg, size_t len)
{
	ot_walk w = { .o = out };
	uint8_t seen[OT_M_COUNT] = { 0 };
	for (size_t i = NROWS; i-- > 0;) {
		w.first[rows[i].msg] = (uint8_t)i;
		if (i + 1 < NROWS && rows[i + 1].msg != rows[i].msg && seen[rows[i].msg]++)
			return -1; /* a message's rows apart in the table: never in this build */
	}
	if (message(&w, metrics ? OT_M_METRICS_REQ : OT_M_TRACE_REQ, msg, len, 0) < 0)
		return -1;
	nt_out_char(out, '\n');
	return 0;
}

/* ---- the file formats ----------------------------------------------------------------- */

typedef struct ot_file {
	nt_out out;
	nt_otlp_format format;
} ot_file;

static int write_request(void *ctx, nt_otlp_signal signal, const uint8_t *msg, size_t len)
{
	ot_file *f = ctx;
	if (f->format == NT_OTLP_JSON) {
		if (nt_otlp_json_line(&f->out, signal == NT_OTLP_METRICS, msg, len) < 0) {
			errno = EPROTO;
			return 1;
		}
	} else {
		uint8_t head[11];
		head[0] = (uint8_t)((signal == NT_OTLP_METRICS ? 2 : 1) << 3 | NT_PF_WIRE_L);
		size_t h = 1 + nt_pb_put_varint(head + 1, len);
		nt_out_bytes(&f->out, head, h);
		nt_out_bytes(&f->out, msg, len);
	}
	return f->out.failed != 0;
}

int nt_render_otlp(nt_reader *r, FILE *out, nt_otlp_format format,
		   const nt_render_options *opt)
{
	if (r == NULL || out == NULL || (format != NT_OTLP_PROTOBUF && format != NT_OTLP_JSON)) {
		errno = EINVAL;
		return -1;
	}
	ot_file f = { .format = format };
	nt_out_init(&f.out, out);
	int rc = nt_otlp_export(r, opt, write_request, &f);
	int err = errno;
	if (nt_out_flush(&f.out) != 0)
		return -1;
	errno = err;
	return rc;
}
