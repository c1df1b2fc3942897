/* nt_bench_opts.h - the benchmark programs' command lines, read one way: a table of options,
 * each a number in a range ("--events N"), a flag ("--json") or a text ("--trace-record
 * PATH"). A word that is no option, a missing value, a value that is not a whole decimal
 * number or lies outside its range is refused by name, with the usage line the table makes,
 * and the program exits 2: a benchmark that quietly ran with a default instead of what it
 * was asked would report a figure of another run. */
#ifndef NT_BENCH_OPTS_H
#define NT_BENCH_OPTS_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nt_bench_opt {
	const char *name;     /* "--events" */
	const char *meta;     /* what its value is called in the usage line ("N", "PATH") */
	uint64_t *number;     /* a number in [min, max] ... */
	uint64_t min, max;
	int *flag;            /* ... or a flag, set to 1 ... */
	const char **text;    /* ... or a text, the argument itself */
} nt_bench_opt;

/* The largest count an option takes where the benchmark itself sets no limit. */
#define NT_BENCH_MANY 1000000000000ull

#define NT_BENCH_NUMBER(name, meta, var, lo, hi) { name, meta, var, lo, hi, NULL, NULL }
#define NT_BENCH_FLAG(name, var) { name, NULL, NULL, 0, 0, var, NULL }
#define NT_BENCH_TEXT(name, meta, var) { name, meta, NULL, 0, 0, NULL, var }

static inline void nt_bench_usage(const char *prog, const nt_bench_opt *opts, size_t n)
{
	fprintf(stderr, "usage: %s", prog);
	for (size_t i = 0; i < n; i++) {
		if (opts[i].flag != NULL)
			fprintf(stderr, " [%s]", opts[i].name);
		else if (opts[i].number != NULL)
			fprintf(stderr, " [%s %s (%" PRIu64 "..%" PRIu64 ")]", opts[i].name,
				opts[i].meta, opts[i].min, opts[i].max);
		else
			fprintf(stderr, " [%s %s]", opts[i].name, opts[i].meta);
	}
	fputc('\n', stderr);
}

/* Reads argv[1 .. argc) by the n options: 1, or 0 after saying what is wrong and the usage
 * (the caller exits 2). */
static inline int nt_bench_parse(const char *prog, int argc, char **argv,
				 const nt_bench_opt *opts, size_t n)
{
	for (int i = 1; i < argc; i++) {
		const nt_bench_opt *o = NULL;
		for (size_t k = 0; k < n && o == NULL; k++)
			if (strcmp(argv[i], opts[k].name) == 0)
				o = &opts[k];
		if (o == NULL) {
			fprintf(stderr, "%s: unknown option '%s'\n", prog, argv[i]);
			nt_bench_usage(prog, opts, n);
			return 0;
		}
		if (o->flag != NULL) {
			*o->flag = 1;
			continue;
		}
		const char *v = i + 1 < argc ? argv[++i] : NULL;
		if (v == NULL) {
			fprintf(stderr, "%s: %s needs a value (%s)\n", prog, o->name, o->meta);
			nt_bench_usage(prog, opts, n);
			return 0;
		}
		if (o->text != NULL) {
			*o->text = v;
			continue;
		}
		char *end;
		errno = 0;
		uint64_t x = strtoull(v, &end, 10);
		if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 || x < o->min ||
		    x > o->max) {
			fprintf(stderr, "%s: %s needs a whole number from %" PRIu64 " to %" PRIu64
				", not '%s'\n", prog, o->name, o->min, o->max, v);
			return 0;
		}
		*o->number = x;
	}
	return 1;
}

#define NT_BENCH_PARSE(prog, argc, argv, opts)                                                  \
	nt_bench_parse((prog), (argc), (argv), (opts), sizeof(opts) / sizeof((opts)[0]))

#endif /* NT_BENCH_OPTS_H */
