/*
 * nt_ship.h - leaving the machine: a shipper that sends finished sections (one process's
 * archive) to an OpenTelemetry collector over OTLP/HTTP protobuf (issue 27; doc/otlp.md,
 * "Live shipping"). What the manager's programs include of ship/; not installed.
 *
 * The caller hands over a section (nt_ship_section: where its archive lies in a file) and
 * never waits for the export or the network. Two threads do the rest:
 *   exporter  maps the archive (file-backed: memory does not grow with it), runs the reader's
 *             nt_otlp_export and writes each request (about 128 KiB: the exporter's batch)
 *             as one file of the spool: 0600, a random name, written under a temporary name
 *             and renamed, so a crash never leaves half a request that is sent;
 *   sender    sends the spool's files oldest first (a restart sends what an earlier run
 *             left), POST /v1/traces or /v1/metrics, application/x-protobuf, gzip when on;
 *             deletes a file on 2xx (logging a partial success), retries 429, 502, 503, 504
 *             and failed connections with capped exponential backoff and jitter, honouring
 *             Retry-After; drops (counts, logs) on any other status.
 * The spool is a 0700 directory of the caller's (made when missing; another user's, a
 * link, or one open to others is refused) capped in bytes: a request that would pass the
 * cap is dropped and counted. One process sends a spool at a time (an flock); another
 * shipper on the same spool only adds to it.
 *
 * Configuration (nt_ship_config_init, then the fields): what is left NULL/0 comes from the
 * OTEL_EXPORTER_OTLP_* variables as the OpenTelemetry SDKs read them.
 */
#ifndef NT_SHIP_H
#define NT_SHIP_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/nt_saved_range.h"

typedef struct nt_ship nt_ship;

/* One line, no newline. Never given a header's value (secrets). */
typedef void (*nt_ship_log_fn)(void *ctx, const char *line);

enum { NT_SHIP_GZIP = 1, NT_SHIP_NONE = 2 };

typedef struct nt_ship_config {
	size_t struct_size;   /* set by nt_ship_config_init: the fields a caller knows */
	/* Base URL: "<endpoint>/v1/traces" and ".../v1/metrics". NULL: the signal's variable
	 * (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, _METRICS_ENDPOINT, used as they are), else
	 * OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318. Given, it wins over all of
	 * them (trace-record's --otlp-endpoint). */
	const char *endpoint;
	/* "k=v,k2=v2", values percent-decoded; NULL: OTEL_EXPORTER_OTLP_HEADERS, and
	 * OTEL_EXPORTER_OTLP_TRACES_HEADERS / _METRICS_HEADERS for each signal (a key in
	 * both: the signal's value). Secrets: never logged. */
	const char *headers;
	int compression;       /* NT_SHIP_GZIP, NT_SHIP_NONE; 0: OTEL_EXPORTER_OTLP_COMPRESSION
				* (gzip|none; the signal's variable first), else none */
	unsigned timeout_ms;   /* one request; 0: OTEL_EXPORTER_OTLP_TIMEOUT (ms), else 10000 */
	/* PEM files; NULL: OTEL_EXPORTER_OTLP_CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY
	 * (the signal's variable first), else the system's CAs and no client certificate. */
	const char *certificate, *client_certificate, *client_key;
	const char *spool_dir; /* NULL: nt_ship_default_spool() */
	uint64_t spool_cap;    /* bytes of requests the spool may hold; 0: 64 MiB */
	nt_ship_log_fn log;    /* NULL: stderr, "nanotrace: otlp: " first */
	void *log_ctx;
} nt_ship_config;

/* The defaults (every field 0 or NULL: the variables, then the built-in defaults),
 * struct_size set. Cost: a memset. */
void nt_ship_config_init(nt_ship_config *cfg);

/* $XDG_STATE_HOME/nanotrace/otlp-spool, else $HOME/.local/state/nanotrace/otlp-spool, into
 * buf[cap]: 0, or -1 when neither variable is an absolute path or it does not fit. */
int nt_ship_default_spool(char *buf, size_t cap);

/* A shipper: reads the variables, checks (or makes, 0700, with its missing parents) the
 * spool, starts both threads. NULL with the reason in why (naming the variable or path):
 * cfg NULL or not filled by nt_ship_config_init (or setting a field this library does not
 * know), a malformed variable, a refused spool, no memory, a thread that cannot start.
 * Cost: a few system calls, a directory scan (what the spool holds), two threads. */
nt_ship *nt_ship_new(const nt_ship_config *cfg, char *why, size_t whylen);

/* Hands over the archive of one process: `len` bytes at `offset` of the file `fd` (a
 * bundle's section, or a whole archive), named `name` (its service.name when the archive
 * names none). The fd is duplicated (one per file, shared by its sections), never read
 * here: the exporter thread maps it later, so the bytes must stay as they are. Never waits
 * (a short lock); 0, or -1 with errno (EINVAL, ENOMEM, dup's) and the section counted as
 * failed. */
int nt_ship_section(nt_ship *s, int fd, uint64_t offset, uint64_t len, const char *name);

/* Walks the bundle in fd from *cursor (0 at first: the preamble is skipped) up to `end`
 * (bytes known written: the manager's progress) and hands every whole SECTION frame's
 * archive to nt_ship_section; *cursor moves past them. A frame not yet whole is left for a
 * later call; a damaged one stops the walk for good (*cursor = UINT64_MAX, logged).
 * Returns the sections handed over; 0 when s or cursor is NULL. Cost: one pread per frame. */
int nt_ship_bundle(nt_ship *s, int fd, uint64_t *cursor, uint64_t end);

/* A streaming section's next saved records (nanotrace-manager's on_stream;
 * runtime/nt_saved_range.h says what each field is). The first call of a stream `id` duplicates fd;
 * each call copies its header and queues the range [from, to) of the saved records (they
 * must stay as they are: the exporter thread reads them later), which the exporter thread
 * makes an archive of (the header + the durable records so far + the range's records) and
 * exports with the stream's incremental exporter (nt_otlp_exporter_add), so a collector
 * sees the spans that ended in each save; open spans wait. `ended`: the last call, its
 * header (the section's final one) added as a part of no records, then the exporter
 * finishes (spans still open end nanotrace.unended); its section (len bytes at offset of
 * bundle_fd) is then skipped by nt_ship_bundle, so nothing is shipped twice. Never waits (a
 * short lock). 0, or -1 with errno: EINVAL (s or r NULL, to < from, a range that does not
 * follow the stream's last, a first call with no header or not from 0, a call after the
 * stream's end), ENOMEM or dup's (the stream counted as a failed section: its later
 * ranges refused with EINVAL, its end still finishing what was exported). */
int nt_ship_stream(nt_ship *s, const nt_saved_range *r);

typedef struct nt_ship_counts {
	uint64_t sections;          /* handed over */
	uint64_t sections_failed;   /* could not be mapped, opened or exported (logged) */
	uint64_t spooled;           /* requests written to the spool */
	uint64_t found;             /* requests an earlier run left in the spool */
	uint64_t sent, sent_spans, sent_points, sent_bytes; /* 2xx; bytes on the wire */
	uint64_t retries;           /* 429/502/503/504, timeouts and failed connections */
	uint64_t rejected_spans, rejected_points; /* partial success: the receiver's count */
	uint64_t dropped_full, dropped_full_spans, dropped_full_points; /* past the cap */
	uint64_t dropped_http, dropped_http_spans, dropped_http_points; /* refused (4xx, 5xx) */
	uint64_t dropped_bad;       /* spool files that could not be read (logged) */
	uint64_t dropped_io;        /* requests the spool could not be written with */
	uint64_t left, left_bytes;  /* in the spool now: sent by the next run */
} nt_ship_counts;

/* The counts so far (all zero for a NULL s). Cost: a lock and a directory scan (left,
 * left_bytes). */
void nt_ship_get_counts(nt_ship *s, nt_ship_counts *out);

/* One line saying what was sent, dropped and left, into buf[cap] (cut to fit); returns buf.
 * Cost: one snprintf. */
const char *nt_ship_summary(const nt_ship_counts *c, char *buf, size_t cap);

/* Exports every section handed over into the spool (local work: waits for it), waits at
 * most wait_ms for the spool to be sent, stops both threads (a transfer in flight is
 * aborted: its file stays), fills *out (when not NULL) and frees everything. NULL ignored. */
void nt_ship_close(nt_ship *s, unsigned wait_ms, nt_ship_counts *out);

/* The OTLP timeout in ms (OTEL_EXPORTER_OTLP_TIMEOUT, default 10000; the default for a
 * NULL s): what trace-record waits at most for the spool at its end. */
unsigned nt_ship_timeout_ms(const nt_ship *s);

#endif /* NT_SHIP_H */
