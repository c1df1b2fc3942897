/*
 * nt_ship_stream.c - a streaming section shipped as its buffers are saved (nt_ship_stream,
 * run by the exporter thread of nt_ship.c): per stream, the reader's incremental exporter
 * (nt_otlp_exporter_*) and a copy of the durable records seen so far.
 *
 * Each range of saved records becomes an archive of its own in memory: the stream's header
 * (events_written 0: not counted) + every durable record so far (strings, threads, call
 * sites, processes: what the range's events refer to, defined in this range or an earlier
 * one) + the range's other records (its chunks), in their order. The records are split with
 * the archive's one framing step (nt_top_record_frame). The archive is opened with
 * nt_reader_open_memory and added to the stream's exporter, whose requests go to the spool
 * like a section's; at the stream's end the exporter finishes (what is still open ends
 * nanotrace.unended). Memory: the durable copy and one range at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/nt_record.h"
#include "nt_ship_internal.h"

/* Appends n bytes to a growing buffer: 0, or -1 when memory runs out. */
static int append(uint8_t **p, size_t *len, size_t *cap, const uint8_t *from, size_t n)
{
	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 4096;
		while (c < *len + n)
			c *= 2;
		uint8_t *q = realloc(*p, c);
		if (q == NULL)
			return -1;
		*p = q;
		*cap = c;
	}
	memcpy(*p + *len, from, n);
	*len += n;
	return 0;
}

int nt_ship_part_build(nt_ship_durable *d, const uint8_t *header, size_t header_len,
		       const uint8_t *range, size_t len, uint8_t **out, size_t *out_len)
{
	uint64_t rest = 0, off = 0, bytes;
	/* the durable records first (the copy grows); what is past a record that does not
	 * frame goes in as it is, for the reader to report */
	while (off < len && nt_top_record_frame(range, len, off, &bytes) == NT_FRAME_OK) {
		if (nt_kind_is_durable(nt_record_kind(nt_record_word_at(range + off)))) {
			if (append(&d->p, &d->len, &d->cap, range + off, (size_t)bytes) != 0)
				return -1;
		} else {
			rest += bytes;
		}
		off += bytes;
	}
	size_t n = header_len + d->len + (size_t)rest + (len - (size_t)off), at = 0, cap = 0;
	uint8_t *a = NULL;
	if (append(&a, &at, &cap, header, header_len) != 0 ||
	    append(&a, &at, &cap, d->p, d->len) != 0) {
		free(a);
		return -1;
	}
	if (a == NULL && n == 0) /* an empty part */
		a = malloc(1);
	for (uint64_t o = 0; a != NULL && o < off; o += bytes) {
		nt_top_record_frame(range, len, o, &bytes);
		if (!nt_kind_is_durable(nt_record_kind(nt_record_word_at(range + o))) &&
		    append(&a, &at, &cap, range + o, (size_t)bytes) != 0)
			break;
	}
	if (a == NULL || (off < len && append(&a, &at, &cap, range + off, len - off) != 0) ||
	    at != n) {
		free(a);
		return -1;
	}
	*out = a;
	*out_len = n;
	return 0;
}

/* The stream's range [from, to) of its file, read whole (-1 with errno). */
static uint8_t *read_range(int fd, uint64_t from, uint64_t to)
{
	size_t n = (size_t)(to - from);
	uint8_t *b = malloc(n ? n : 1);
	for (size_t done = 0; b != NULL && done < n;) {
		ssize_t k = pread(fd, b + done, n - done, (off_t)(from + done));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			errno = k < 0 ? errno : EIO;
			free(b);
			return NULL;
		}
		done += (size_t)k;
	}
	return b;
}

static int emit_request(void *ctx, nt_otlp_signal signal, const uint8_t *msg, size_t len)
{
	nt_ship_spool_put(ctx, signal == NT_OTLP_METRICS, msg, len);
	return 0; /* a request the spool could not take is counted; the next may fit */
}

/* One range (with its header): read, made an archive, added to the exporter. NULL, or why
 * it failed. */
static const char *add_range(nt_ship *s, ship_stream *st, const ship_section *item, char *buf,
			     size_t cap)
{
	uint64_t from = item->from, to = item->to;
	uint8_t *range = read_range(st->file->fd, from, to), *part = NULL;
	size_t part_len = 0;
	if (range == NULL) {
		snprintf(buf, cap, "reading its saved records: %s", strerror(errno));
		return buf;
	}
	int built = nt_ship_part_build(&st->durable, item->header, item->header_len, range,
				       (size_t)(to - from), &part, &part_len);
	free(range);
	if (built != 0)
		return "out of memory";
	nt_render_options opt;
	nt_render_options_init(&opt);
	if (st->x == NULL)
		st->x = nt_otlp_exporter_new(&opt, emit_request, s);
	nt_reader_error err;
	nt_reader *r = st->x ? nt_reader_open_memory(part, part_len, st->name, &err) : NULL;
	const char *why = NULL;
	if (st->x == NULL) {
		why = "out of memory";
	} else if (r == NULL) {
		snprintf(buf, cap, "%s", err.message);
		why = buf;
	} else if ((errno = 0, nt_otlp_exporter_add(st->x, r)) < 0 &&
		   (errno == ENOMEM || errno == EINVAL)) {
		why = errno == ENOMEM ? "out of memory" : "not the stream's process";
	}
	/* damage inside the records is in the "nanotrace losses" span, not a failure */
	nt_reader_close(r);
	free(part);
	return why;
}

void nt_ship_stream_step(nt_ship *s, ship_section *item)
{
	ship_stream *st = item->stream;
	char buf[600];
	const char *why = NULL;
	/* the end's part holds no records: the section's final header, whose counts the
	 * Resources of the last requests (the unended spans, the losses span) then carry */
	if (!st->failed && item->header != NULL && (item->to > item->from || item->ended))
		why = add_range(s, st, item, buf, sizeof(buf));
	if (why == NULL && !st->failed && item->ended && st->x != NULL &&
	    nt_otlp_exporter_finish(st->x) != 0 && errno == ENOMEM)
		why = "out of memory";
	if (why != NULL) {
		nt_ship_log(s, "stream '%s' (saved bytes %llu to %llu) not exported: %s; the rest "
			    "of it is not shipped", st->name, (unsigned long long)item->from,
			    (unsigned long long)item->to, why);
		st->failed = 1;
		pthread_mutex_lock(&s->lock);
		s->counts.sections_failed++;
		pthread_mutex_unlock(&s->lock);
	}
	if (item->ended) {
		nt_otlp_exporter_free(st->x);
		st->x = NULL;
		free(st->durable.p);
		st->durable = (nt_ship_durable){ 0 };
	}
}
