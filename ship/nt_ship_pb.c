/*
 * nt_ship_pb.c - the little of protobuf's wire format the shipper reads: how many spans or
 * data points a request carries (for exact counts of what is sent and dropped) and a
 * response's partial_success. Field numbers from the vendored opentelemetry-proto
 * (tests/ship/test_ship.py proves them against the schema):
 *   ExportTraceServiceRequest.resource_spans = 1, ResourceSpans.scope_spans = 2,
 *   ScopeSpans.spans = 2;
 *   ExportMetricsServiceRequest.resource_metrics = 1, ResourceMetrics.scope_metrics = 2,
 *   ScopeMetrics.metrics = 2, Metric.gauge = 5, Gauge.data_points = 1;
 *   Export*ServiceResponse.partial_success = 1, Export*PartialSuccess.rejected_spans /
 *   rejected_data_points = 1, error_message = 2; google.rpc.Status.message = 2 (the body
 *   of a failed request, OTLP/HTTP's "Failures").
 * A decoder library (protobuf-c) would need generated code for four levels of nesting that
 * are a dozen lines here; every length is checked against its enclosing message.
 */
#include <string.h>

#include "nt_ship_internal.h"

#define PB_REQ_RESOURCE 1
#define PB_RES_SCOPE 2
#define PB_SCOPE_ITEMS 2
#define PB_METRIC_GAUGE 5
#define PB_GAUGE_POINTS 1
#define PB_RESP_PARTIAL 1
#define PB_PARTIAL_REJECTED 1
#define PB_PARTIAL_MESSAGE 2
#define PB_STATUS_MESSAGE 2 /* google.rpc.Status.message: an error response's body */

typedef struct pb_span {
	const uint8_t *p, *end;
} pb_span;

static int varint(pb_span *s, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (s->p >= s->end)
			return -1;
		uint8_t b = *s->p++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* The next field: its number, wire type and, for a length-delimited one, its bytes.
 * 1 a field, 0 the end, -1 malformed. */
static int next_field(pb_span *s, unsigned *field, unsigned *wt, pb_span *sub, uint64_t *val)
{
	if (s->p == s->end)
		return 0;
	uint64_t key, n;
	if (varint(s, &key) != 0)
		return -1;
	*field = (unsigned)(key >> 3);
	*wt = (unsigned)(key & 7);
	switch (*wt) {
	case 0:
		return varint(s, val) == 0 ? 1 : -1;
	case 1:
	case 5:
		n = *wt == 1 ? 8 : 4;
		if ((uint64_t)(s->end - s->p) < n)
			return -1;
		s->p += n;
		return 1;
	case 2:
		if (varint(s, &n) != 0 || (uint64_t)(s->end - s->p) < n)
			return -1;
		sub->p = s->p;
		sub->end = s->p + n;
		s->p += n;
		return 1;
	}
	return -1;
}

/* Counts, below `s`, the fields path[0] > path[1] > ... (length-delimited each). */
static int64_t count_path(pb_span s, const unsigned *path, int depth)
{
	unsigned f, wt;
	pb_span sub;
	uint64_t v;
	int64_t total = 0;
	int r;
	while ((r = next_field(&s, &f, &wt, &sub, &v)) == 1) {
		if (f != path[0] || wt != 2)
			continue;
		if (depth == 1) {
			total++;
			continue;
		}
		int64_t n = count_path(sub, path + 1, depth - 1);
		if (n < 0)
			return -1;
		total += n;
	}
	return r < 0 ? -1 : total;
}

int64_t nt_ship_pb_items(int signal, const uint8_t *msg, size_t len)
{
	static const unsigned spans[] = { PB_REQ_RESOURCE, PB_RES_SCOPE, PB_SCOPE_ITEMS };
	static const unsigned points[] = { PB_REQ_RESOURCE, PB_RES_SCOPE, PB_SCOPE_ITEMS,
					   PB_METRIC_GAUGE, PB_GAUGE_POINTS };
	pb_span s = { msg, msg + len };
	return signal == 0 ? count_path(s, spans, 3) : count_path(s, points, 5);
}

int nt_ship_pb_partial(const uint8_t *msg, size_t len, int64_t *rejected, char *text,
		       size_t cap)
{
	pb_span s = { msg, msg + len }, sub, inner;
	unsigned f, wt;
	uint64_t v;
	int r, found = 0;
	*rejected = 0;
	text[0] = '\0';
	while ((r = next_field(&s, &f, &wt, &sub, &v)) == 1) {
		if (f != PB_RESP_PARTIAL || wt != 2)
			continue;
		int q;
		while ((q = next_field(&sub, &f, &wt, &inner, &v)) == 1) {
			if (f == PB_PARTIAL_REJECTED && wt == 0) {
				*rejected = (int64_t)v;
				found |= v != 0;
			} else if (f == PB_PARTIAL_MESSAGE && wt == 2 && cap > 0) {
				size_t n = (size_t)(inner.end - inner.p);
				n = n < cap - 1 ? n : cap - 1;
				memcpy(text, inner.p, n);
				text[n] = '\0';
				found |= n != 0;
			}
		}
		if (q < 0)
			return -1;
	}
	return r < 0 ? -1 : found;
}

int nt_ship_pb_status_message(const uint8_t *msg, size_t len, char *text, size_t cap)
{
	pb_span s = { msg, msg + len }, sub;
	unsigned f, wt;
	uint64_t v;
	int r;
	text[0] = '\0';
	while ((r = next_field(&s, &f, &wt, &sub, &v)) == 1) {
		if (f != PB_STATUS_MESSAGE || wt != 2 || cap == 0)
			continue;
		size_t n = (size_t)(sub.end - sub.p);
		n = n < cap - 1 ? n : cap - 1;
		memcpy(text, sub.p, n);
		text[n] = '\0';
		return n != 0;
	}
	return r < 0 ? -1 : 0;
}
