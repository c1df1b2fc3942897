/*
 * nt_ship_internal.h - what ship/'s files share. Layered, each file calling only those below
 * it: nt_ship.c (the public calls, the exporter thread) on top; nt_ship_stream.c (a
 * streaming section's ranges, on the exporter thread); nt_ship_send.c (the sender
 * thread: HTTP, retries); nt_ship_spool.c (the directory and its files); nt_ship_conf.c
 * (the variables); nt_ship_pb.c (reading requests and responses) at the bottom.
 */
#ifndef NT_SHIP_INTERNAL_H
#define NT_SHIP_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "nt_ship.h"
#include "reader/include/nanotrace/nanotrace_reader.h"

#define NT_SHIP_SIGNALS 2 /* nt_otlp_signal: 0 traces, 1 metrics */

/* One signal's resolved configuration. */
typedef struct ship_signal_conf {
	char *url;
	char **headers;      /* "Key: value" lines (secrets), NULL-terminated */
	int gzip;
	unsigned timeout_ms;
	char *ca, *cert, *key; /* NULL: libcurl's defaults */
} ship_signal_conf;

typedef struct ship_conf {
	ship_signal_conf sig[NT_SHIP_SIGNALS];
	char *spool;
	uint64_t cap;
	nt_ship_log_fn log;
	void *log_ctx;
} ship_conf;

/* A file the caller's sections lie in (one dup per file, shared). */
typedef struct ship_file {
	int fd;
	int refs;
	uint64_t dev, ino;
} ship_file;

/* The durable records of a stream so far (nt_ship_part_build). */
typedef struct nt_ship_durable {
	uint8_t *p;
	size_t len, cap;
} nt_ship_durable;

/* A streaming section being shipped as it is saved (nt_ship_stream). */
typedef struct ship_stream {
	uint64_t id;
	char name[128];
	ship_file *file;          /* its saved records */
	uint64_t handed;          /* under lock: the end of the ranges queued */
	int end_queued;           /* under lock: its last item is queued */
	int broken;               /* under lock: a range could not be queued; only its end is */
	nt_otlp_exporter *x;      /* the exporter thread's, as the two below */
	nt_ship_durable durable;
	int failed;               /* a range failed: the rest is not shipped (logged, counted) */
	struct ship_stream *next;
} ship_stream;

/* A queued item: a section (file, offset, len), or a stream's range [from, to) with the
 * header it is read with (and its end: the section's final header, for the Resources of
 * the last requests). */
typedef struct ship_section {
	ship_file *file;
	uint64_t offset, len;
	char name[128];
	ship_stream *stream;
	uint64_t from, to;
	uint8_t *header;          /* the stream's header at this range (a copy), or NULL */
	size_t header_len;
	int ended;
	struct ship_section *next;
} ship_section;

/* A section of a bundle that was shipped as a stream: nt_ship_bundle skips it. */
typedef struct ship_streamed {
	uint64_t dev, ino, offset;
} ship_streamed;

struct nt_ship {
	ship_conf conf;
	pthread_mutex_t lock;
	pthread_cond_t wake;      /* the exporter: a section or stop; the sender: a file or stop */
	pthread_cond_t idle;      /* the exporter's queue emptied, or the spool did */
	ship_section *head, *tail;
	ship_file *last_file;     /* the newest file, reused by the next section of it */
	ship_stream *streams;     /* not yet ended */
	ship_streamed *streamed;  /* ended streams' sections (nt_ship_bundle skips them) */
	size_t nstreamed, streamed_cap;
	int exporting;            /* the exporter holds a section */
	int stop_export, stop_send;
	uint64_t spool_bytes;     /* what the spool holds (ours and earlier runs') */
	uint64_t spool_files;
	unsigned puts_since_scan; /* requests put since the spool was last counted afresh */
	unsigned seq;             /* orders this process's requests of one nanosecond */
	int lock_fd;              /* the spool's .lock, flocked by the sender that sends it */
	nt_ship_counts counts;
	pthread_t exporter, sender;
	int have_exporter, have_sender;
};

/* nt_ship_pb.c */
/* The spans (traces) or data points (metrics) of one serialized request; -1 when it does
 * not parse. */
int64_t nt_ship_pb_items(int signal, const uint8_t *msg, size_t len);
/* A response body's partial_success: rejected count and error_message (cut to cap). 1 when
 * the body has one with something in it, 0 when not, -1 when it does not parse. */
int nt_ship_pb_partial(const uint8_t *msg, size_t len, int64_t *rejected, char *text,
		       size_t cap);
/* A google.rpc.Status body's message (cut to cap): 1 found, 0 none, -1 malformed. */
int nt_ship_pb_status_message(const uint8_t *msg, size_t len, char *text, size_t cap);

/* nt_ship_conf.c */
/* Fills conf from cfg and the variables; 0, or -1 with why. */
int nt_ship_conf_load(ship_conf *conf, const nt_ship_config *cfg, char *why, size_t whylen);
void nt_ship_conf_free(ship_conf *conf);
void nt_ship_log(nt_ship *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* nt_ship_spool.c */
/* Makes or checks the spool directory, opens its lock file and counts what it holds. 0, or
 * -1 with why. */
int nt_ship_spool_open(nt_ship *s, char *why, size_t whylen);
/* Writes one request (called by the exporter without the lock): 0 spooled, 1 dropped (the
 * cap), -1 failed (logged). Counted here. */
int nt_ship_spool_put(nt_ship *s, int signal, const uint8_t *msg, size_t len);
/* The oldest request file's name (into name[cap]) and its signal; 0 when none, -1 on error. */
int nt_ship_spool_oldest(nt_ship *s, char *name, size_t cap, int *signal);
/* Reads a spool file (malloc'd into *data); 0 or -1 with errno. */
int nt_ship_spool_read(nt_ship *s, const char *name, uint8_t **data, size_t *len);
/* Removes a sent or dropped file, its bytes off the spool's count. */
void nt_ship_spool_remove(nt_ship *s, const char *name, size_t len);
/* Files and bytes in the spool now (a scan). */
void nt_ship_spool_scan(nt_ship *s, uint64_t *files, uint64_t *bytes);

/* nt_ship_stream.c */
/* One archive in memory, malloc'd into *out: header + the durable records so far (d, to
 * which the range's are added) + the range's other records in their order (bytes that do
 * not frame as records, as they are). 0, or -1 when memory runs out. */
int nt_ship_part_build(nt_ship_durable *d, const uint8_t *header, size_t header_len,
		       const uint8_t *range, size_t len, uint8_t **out, size_t *out_len);
/* The exporter thread's step of a stream item: its range exported, at its end the exporter
 * finished and freed (the stream itself is the caller's). */
void nt_ship_stream_step(nt_ship *s, ship_section *item);

/* nt_ship_send.c */
void *nt_ship_sender_main(void *arg);

#endif /* NT_SHIP_INTERNAL_H */
