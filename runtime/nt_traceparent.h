/*
 * nt_traceparent.h - W3C Trace Context's `traceparent` value: the process's parent span
 * in a distributed trace, as OpenTelemetry SDKs take it from the TRACEPARENT environment
 * variable. Shared because the writer records the value its process was started with
 * (the archive header's `traceparent`) and the reader's OTLP exporter places spans under
 * it; both must accept exactly the same values.
 *
 * The rules (https://www.w3.org/TR/trace-context/#traceparent-header): lower-case hex
 * fields "version-traceid-parentid-flags", 2-32-16-2 digits; version ff is invalid; an
 * all-zero trace or parent id is invalid; version 00 is exactly 55 characters; a higher
 * version is read by its first four fields when it is at least 55 characters and, past
 * them, continues with '-' (what a newer version adds is ignored).
 */
#ifndef NT_TRACEPARENT_H
#define NT_TRACEPARENT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NT_TRACEPARENT_LEN 55u /* the four fields of version 00 and their dashes */

typedef struct nt_traceparent {
	uint64_t trace_hi, trace_lo; /* the 16-byte trace id, big-endian halves */
	uint64_t parent;             /* the 8-byte parent span id */
	uint8_t flags;               /* trace-flags (bit 0: sampled) */
} nt_traceparent;

/* n lower-case hex digits at s into *v (n <= 16); 0 on any other character. */
static inline int nt_traceparent_hex_(const char *s, size_t n, uint64_t *v)
{
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
		if (d < 0)
			return 0;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return 1;
}

/* 1 and *tp filled when s is a valid traceparent by the rules above; 0 (tp untouched)
 * when it is not or s is NULL. Cost: one pass over at most 55 characters and strlen. */
static inline int nt_traceparent_parse(const char *s, nt_traceparent *tp)
{
	uint64_t version, hi, lo, parent, flags;
	if (s == NULL)
		return 0;
	size_t n = strlen(s);
	if (n < NT_TRACEPARENT_LEN || s[2] != '-' || s[35] != '-' || s[52] != '-' ||
	    !nt_traceparent_hex_(s, 2, &version) || version == 0xff ||
	    (version == 0 ? n != NT_TRACEPARENT_LEN : n > NT_TRACEPARENT_LEN && s[55] != '-') ||
	    !nt_traceparent_hex_(s + 3, 16, &hi) || !nt_traceparent_hex_(s + 19, 16, &lo) ||
	    !nt_traceparent_hex_(s + 36, 16, &parent) || !nt_traceparent_hex_(s + 53, 2, &flags) ||
	    (hi == 0 && lo == 0) || parent == 0)
		return 0;
	tp->trace_hi = hi, tp->trace_lo = lo, tp->parent = parent, tp->flags = (uint8_t)flags;
	return 1;
}

#endif /* NT_TRACEPARENT_H */
