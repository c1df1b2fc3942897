/*
 * nt_record_options.h - trace-record's command line: what it asks for, its usage text, and
 * the one way trace-record speaks to its user (nt_record_say).
 */
#ifndef NT_RECORD_OPTIONS_H
#define NT_RECORD_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#define NT_RECORD_MAX_PROVIDERS 64

typedef struct options {
	const char *output;
	const char *categories;
	int mode;
	int disposition;
	int32_t compression;    /* CTL_START's (nt_wire_start_d): 0 = the manager's default */
	uint64_t buffer_size;
	double duration;
	double manager_timeout; /* seconds the manager may stay silent while stopping */
	const char *providers[NT_RECORD_MAX_PROVIDERS];
	int nproviders;
	int list, verbose;
	int otlp;                  /* --otlp or --otlp-endpoint: ship each section
				    * (nt_record_ship.c) */
	const char *otlp_endpoint; /* --otlp-endpoint; NULL: the OTEL_EXPORTER_OTLP_* variables */
	const char *otlp_spool;    /* --otlp-spool DIR; NULL: the default */
	uint64_t otlp_spool_size;  /* --otlp-spool-size; 0: the shipper's default */
	char **command;
} options;

/* One line on stderr, "trace-record: " first. */
void nt_record_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void nt_record_usage(FILE *f);

/* Fills *o from the command line; -1 after saying what is wrong (a usage error). --help and
 * --version print and exit 0. */
int nt_record_parse_options(int argc, char **argv, options *o);

#endif /* NT_RECORD_OPTIONS_H */
