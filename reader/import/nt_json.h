/*
 * nt_json.h - a small, strict JSON reader for Git Trace2 EVENT lines (not installed).
 *
 * Why not a maintained library: Git writes bytes >= 0x80 raw even when they are not UTF-8
 * (trace2-formats.md §4, case quoting_bytes), and the JSON libraries packaged in Debian
 * (json-c, jansson, cJSON) reject or rewrite such strings; trace-import must keep the bytes
 * exactly. So this reader accepts any byte >= 0x80 inside strings and is otherwise RFC 8259:
 * it validates the whole value, limits nesting depth, and never reads past the given span,
 * which makes it easy to fuzz (tests/trace2/test_trace_import.c drives it with damaged input).
 *
 * Values are not copied: a nt_json_value is the raw text span of one value, decoded on
 * demand.
 */
#ifndef NT_JSON_H
#define NT_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum nt_json_type {
	NT_JSON_NULL,
	NT_JSON_FALSE,
	NT_JSON_TRUE,
	NT_JSON_NUMBER,
	NT_JSON_STRING,
	NT_JSON_ARRAY,
	NT_JSON_OBJECT,
} nt_json_type;

typedef struct nt_json_value {
	nt_json_type type;
	const char *p; /* raw text of the value, quotes and brackets included */
	size_t n;
} nt_json_value;

typedef struct nt_json_member {
	nt_json_value key; /* a string */
	nt_json_value value;
} nt_json_member;

#define NT_JSON_MAX_DEPTH 64

/* Parse one JSON object that spans [s, s + n) (whitespace around it allowed) and list its
 * members, up to `max`. Returns the member count, or -1 with *err (a static message) and
 * *at (byte offset into s) set: syntax error, nesting deeper than NT_JSON_MAX_DEPTH, a
 * top-level value that is not an object, or more than `max` members. */
int nt_json_object(const char *s, size_t n, nt_json_member *out, int max, const char **err,
		   size_t *at);

/* Does string value `v` equal the NUL-terminated `text` (after decoding)? */
int nt_json_string_is(const nt_json_value *v, const char *text);
/* The same with text's length given (callers comparing many values against one text). */
int nt_json_string_is_n(const nt_json_value *v, const char *text, size_t n);

/* Decode string value `v` into `out`, which needs room for v->n bytes (decoding never grows
 * a string). Escapes become their bytes (\uXXXX as UTF-8, surrogate pairs joined); other
 * bytes are copied as they are. Returns the decoded length, or -1 for a lone surrogate. */
long nt_json_string_decode(const nt_json_value *v, char *out);

/* Next element of array value `a`: *pos starts at 0. Returns 1 and sets *elem, or 0 at the
 * end. The array was validated by nt_json_object, so this cannot fail. */
int nt_json_array_next(const nt_json_value *a, size_t *pos, nt_json_value *elem);

/* An integer number (no fraction, no exponent) that fits int64. Returns 0 otherwise. */
int nt_json_int64(const nt_json_value *v, int64_t *out);

/* A non-negative decimal with at most `digits` fraction digits (no exponent), scaled by
 * 10^digits exactly: "0.000254" with 6 digits gives 254. Returns 0 otherwise. */
int nt_json_fixed(const nt_json_value *v, unsigned digits, uint64_t *out);

#endif /* NT_JSON_H */
