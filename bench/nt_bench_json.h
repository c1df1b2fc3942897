/* nt_bench_json.h - the one JSON object a benchmark prints as its last line: numbers, or
 * null beside a "<key>_reason" string saying why (a peer not installed, a figure unstable). */
#ifndef NT_BENCH_JSON_H
#define NT_BENCH_JSON_H

#include <math.h>
#include <stdio.h>

typedef struct nt_json {
	FILE *f;
	int depth;
	int first[8];
} nt_json;

static inline void nt_json_sep(nt_json *j)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = 0;
}

static inline void nt_json_string(nt_json *j, const char *s)
{
	fputc('"', j->f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', j->f);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, j->f);
	}
	fputc('"', j->f);
}

static inline void nt_json_key(nt_json *j, const char *key)
{
	nt_json_sep(j);
	nt_json_string(j, key);
	fputc(':', j->f);
}

static inline void nt_json_begin(nt_json *j, FILE *f)
{
	j->f = f, j->depth = 0, j->first[0] = 1;
	fputc('{', f);
}

static inline void nt_json_end(nt_json *j)
{
	fputs("}\n", j->f);
	fflush(j->f);
}

/* "key": v, or "key": null, "key_reason": reason when !ok (or v is not finite). */
static inline void nt_json_num(nt_json *j, const char *key, double v, int ok, const char *reason)
{
	nt_json_key(j, key);
	if (ok && isfinite(v)) {
		fprintf(j->f, "%.10g", v);
		return;
	}
	fputs("null", j->f);
	char k[160];
	snprintf(k, sizeof(k), "%s_reason", key);
	nt_json_key(j, k);
	nt_json_string(j, ok ? "not a finite number" : reason);
}

/* A nested object ('{') or array ('[') under `key`, and its end ('}' or ']'). */
static inline void nt_json_nest(nt_json *j, const char *key, char bracket)
{
	nt_json_key(j, key);
	fputc(bracket, j->f);
	j->first[++j->depth] = 1;
}

static inline void nt_json_unnest(nt_json *j, char bracket)
{
	fputc(bracket, j->f);
	j->depth--;
}

static inline void nt_json_item(nt_json *j, double v)
{
	nt_json_sep(j);
	if (isfinite(v))
		fprintf(j->f, "%.10g", v);
	else
		fputs("null", j->f);
}

#endif /* NT_BENCH_JSON_H */
