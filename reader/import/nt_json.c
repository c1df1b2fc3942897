/*
 * nt_json.c - strict JSON validation and on-demand decoding over raw text spans.
 * See nt_json.h for why this is hand-written.
 */
#include <string.h>

#include "nt_json.h"

typedef struct cursor {
	const char *s, *end, *err;
	const char *at;
} cursor;

static int fail(cursor *c, const char *p, const char *why)
{
	if (c->err == NULL) {
		c->err = why;
		c->at = p;
	}
	return 0;
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Does any of the 8 bytes in w need a look: '"', '\\' or a control character (< 0x20)?
 * (The classic SWAR tests: a byte equal to b gives a zero byte of w ^ b*0x01..., and
 * "has a zero byte" and "has a byte < 0x20" set that byte's high bit.) */
static int word_is_special(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
	uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
	uint64_t found = ((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w);
	return (found & highs) != 0;
}

/* The first byte of [p, end) that is '"', '\\' or a control character, or end: 8 bytes a
 * step while 8 remain (each word read with memcpy, within the span). */
static const char *skip_plain(const char *p, const char *end)
{
	while (end - p >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		if (word_is_special(w))
			break;
		p += 8;
	}
	while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
		p++;
	return p;
}

/* *pp at the opening quote; on success *pp is past the closing quote. */
static int scan_string(cursor *c, const char **pp)
{
	const char *p = *pp + 1;
	while ((p = skip_plain(p, c->end)) < c->end) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '"') {
			*pp = p + 1;
			return 1;
		}
		if (ch < 0x20)
			return fail(c, p, "control character inside a string (must be escaped)");
		if (ch == '\\') {
			if (p + 1 >= c->end)
				break;
			char e = p[1];
			if (e == 'u') {
				if (c->end - p < 6)
					return fail(c, p, "truncated \\u escape");
				for (int i = 2; i < 6; i++)
					if (hexval(p[i]) < 0)
						return fail(c, p, "bad hex digit in \\u escape");
				p += 6;
				continue;
			}
			if (strchr("\"\\/bfnrt", e) == NULL || e == '\0')
				return fail(c, p, "unknown escape in a string");
			p += 2;
			continue;
		}
		p++; /* not reached: skip_plain stops only at the bytes above */
	}
	return fail(c, *pp, "unterminated string");
}

static int scan_number(cursor *c, const char **pp)
{
	const char *p = *pp, *start = p;
	if (p < c->end && *p == '-')
		p++;
	if (p >= c->end || *p < '0' || *p > '9')
		return fail(c, start, "bad number");
	if (*p == '0')
		p++;
	else
		while (p < c->end && *p >= '0' && *p <= '9')
			p++;
	if (p < c->end && *p == '.') {
		p++;
		if (p >= c->end || *p < '0' || *p > '9')
			return fail(c, start, "bad number: no digit after '.'");
		while (p < c->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < c->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < c->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= c->end || *p < '0' || *p > '9')
			return fail(c, start, "bad number: empty exponent");
		while (p < c->end && *p >= '0' && *p <= '9')
			p++;
	}
	*pp = p;
	return 1;
}

static int scan_value(cursor *c, const char **pp, int depth, nt_json_value *v);

static int scan_container(cursor *c, const char **pp, int depth, int object)
{
	const char *p = skip_ws(*pp + 1, c->end);
	char close = object ? '}' : ']';
	if (p < c->end && *p == close) {
		*pp = p + 1;
		return 1;
	}
	for (;;) {
		nt_json_value v;
		if (object) {
			if (p >= c->end || *p != '"')
				return fail(c, p, "expected a member name (a string)");
			if (!scan_string(c, &p))
				return 0;
			p = skip_ws(p, c->end);
			if (p >= c->end || *p != ':')
				return fail(c, p, "expected ':' after a member name");
			p = skip_ws(p + 1, c->end);
		}
		if (!scan_value(c, &p, depth + 1, &v))
			return 0;
		p = skip_ws(p, c->end);
		if (p < c->end && *p == ',') {
			p = skip_ws(p + 1, c->end);
			continue;
		}
		if (p < c->end && *p == close) {
			*pp = p + 1;
			return 1;
		}
		return fail(c, p, object ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int literal(cursor *c, const char **pp, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(c->end - *pp) < n || memcmp(*pp, word, n) != 0)
		return fail(c, *pp, "unexpected character");
	*pp += n;
	return 1;
}

static int scan_value(cursor *c, const char **pp, int depth, nt_json_value *v)
{
	const char *p = *pp;
	if (depth > NT_JSON_MAX_DEPTH)
		return fail(c, p, "nesting too deep");
	if (p >= c->end)
		return fail(c, p, "expected a value");
	v->p = p;
	int ok;
	switch (*p) {
	case '"': v->type = NT_JSON_STRING; ok = scan_string(c, &p); break;
	case '{': v->type = NT_JSON_OBJECT; ok = scan_container(c, &p, depth, 1); break;
	case '[': v->type = NT_JSON_ARRAY; ok = scan_container(c, &p, depth, 0); break;
	case 't': v->type = NT_JSON_TRUE; ok = literal(c, &p, "true"); break;
	case 'f': v->type = NT_JSON_FALSE; ok = literal(c, &p, "false"); break;
	case 'n': v->type = NT_JSON_NULL; ok = literal(c, &p, "null"); break;
	default: v->type = NT_JSON_NUMBER; ok = scan_number(c, &p); break;
	}
	if (!ok)
		return 0;
	v->n = (size_t)(p - v->p);
	*pp = p;
	return 1;
}

int nt_json_object(const char *s, size_t n, nt_json_member *out, int max, const char **err,
		   size_t *at)
{
	cursor c = { s, s + n, NULL, NULL };
	const char *p = skip_ws(s, c.end);
	nt_json_value top;
	int count = 0;
	if (p >= c.end || *p != '{') {
		fail(&c, p, "a line must be one JSON object");
		goto bad;
	}
	if (!scan_value(&c, &p, 0, &top))
		goto bad;
	if (skip_ws(p, c.end) != c.end) {
		fail(&c, skip_ws(p, c.end), "text after the JSON object");
		goto bad;
	}
	/* Validated: list the members without re-checking. */
	p = skip_ws(top.p + 1, c.end);
	while (*p != '}') {
		nt_json_member m;
		if (!scan_value(&c, &p, 1, &m.key))
			goto bad;
		p = skip_ws(p, c.end) + 1; /* ':' */
		p = skip_ws(p, c.end);
		if (!scan_value(&c, &p, 1, &m.value))
			goto bad;
		if (count == max) {
			fail(&c, m.key.p, "too many members in one object");
			goto bad;
		}
		out[count++] = m;
		p = skip_ws(p, c.end);
		if (*p == ',')
			p = skip_ws(p + 1, c.end);
	}
	return count;
bad:
	*err = c.err;
	*at = (size_t)(c.at - s);
	return -1;
}

static void put_utf8(char **o, uint32_t cp)
{
	char *q = *o;
	if (cp < 0x80) {
		*q++ = (char)cp;
	} else if (cp < 0x800) {
		*q++ = (char)(0xC0 | (cp >> 6));
		*q++ = (char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*q++ = (char)(0xE0 | (cp >> 12));
		*q++ = (char)(0x80 | ((cp >> 6) & 0x3F));
		*q++ = (char)(0x80 | (cp & 0x3F));
	} else {
		*q++ = (char)(0xF0 | (cp >> 18));
		*q++ = (char)(0x80 | ((cp >> 12) & 0x3F));
		*q++ = (char)(0x80 | ((cp >> 6) & 0x3F));
		*q++ = (char)(0x80 | (cp & 0x3F));
	}
	*o = q;
}

static uint32_t hex4(const char *p)
{
	return (uint32_t)(hexval(p[0]) << 12 | hexval(p[1]) << 8 | hexval(p[2]) << 4 | hexval(p[3]));
}

long nt_json_string_decode(const nt_json_value *v, char *out)
{
	const char *p = v->p + 1, *end = v->p + v->n - 1;
	char *o = out;
	while (p < end) {
		if (*p != '\\') {
			*o++ = *p++;
			continue;
		}
		char e = p[1];
		p += 2;
		switch (e) {
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			/* A 6-byte escape decodes to at most 3 bytes, a 12-byte pair to 4. */
			uint32_t cp = hex4(p);
			p += 4;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
					return -1;
				uint32_t lo = hex4(p + 2);
				if (lo < 0xDC00 || lo > 0xDFFF)
					return -1;
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				p += 6;
			} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
				return -1;
			}
			put_utf8(&o, cp);
			break;
		}
		default: *o++ = e; break; /* " \ / */
		}
	}
	return (long)(o - out);
}

int nt_json_string_is(const nt_json_value *v, const char *text)
{
	return nt_json_string_is_n(v, text, strlen(text));
}

int nt_json_string_is_n(const nt_json_value *v, const char *text, size_t n)
{
	if (v->type != NT_JSON_STRING)
		return 0;
	/* Fast path: Git's keys and event names never need escapes. An escape is longer than
	 * what it stands for, so a raw text no longer than `text` matches only as it is. */
	if (v->n <= n + 2)
		return v->n == n + 2 && memcmp(v->p + 1, text, n) == 0;
	if (memchr(v->p, '\\', v->n) == NULL || v->n > 256)
		return 0;
	char buf[256];
	long len = nt_json_string_decode(v, buf);
	return len == (long)n && memcmp(buf, text, n) == 0;
}

int nt_json_array_next(const nt_json_value *a, size_t *pos, nt_json_value *elem)
{
	cursor c = { a->p, a->p + a->n - 1, NULL, NULL }; /* up to the closing ']' */
	const char *p = a->p + (*pos ? *pos : 1);
	p = skip_ws(p, c.end);
	if (p < c.end && *p == ',')
		p = skip_ws(p + 1, c.end);
	if (p >= c.end)
		return 0;
	if (!scan_value(&c, &p, 1, elem))
		return 0;
	*pos = (size_t)(p - a->p);
	return 1;
}

int nt_json_int64(const nt_json_value *v, int64_t *out)
{
	if (v->type != NT_JSON_NUMBER || v->n == 0 || v->n > 20)
		return 0;
	const char *p = v->p, *end = v->p + v->n;
	int neg = *p == '-';
	if (neg)
		p++;
	uint64_t acc = 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return 0; /* fraction or exponent */
		if (acc > (UINT64_MAX - 9) / 10)
			return 0;
		acc = acc * 10 + (uint64_t)(*p - '0');
	}
	if (neg ? acc > (uint64_t)INT64_MAX + 1 : acc > (uint64_t)INT64_MAX)
		return 0;
	*out = neg ? (int64_t)(0 - acc) : (int64_t)acc;
	return 1;
}

int nt_json_fixed(const nt_json_value *v, unsigned digits, uint64_t *out)
{
	if (v->type != NT_JSON_NUMBER || v->n == 0 || v->p[0] == '-')
		return 0;
	const char *p = v->p, *end = v->p + v->n;
	uint64_t acc = 0;
	unsigned frac = 0;
	int dot = 0;
	for (; p < end; p++) {
		if (*p == '.' && !dot) {
			dot = 1;
			continue;
		}
		if (*p < '0' || *p > '9')
			return 0;
		if (dot && ++frac > digits)
			return 0;
		if (acc > (UINT64_MAX - 9) / 10)
			return 0;
		acc = acc * 10 + (uint64_t)(*p - '0');
	}
	for (; frac < digits; frac++) {
		if (acc > UINT64_MAX / 10)
			return 0;
		acc *= 10;
	}
	*out = acc;
	return 1;
}
