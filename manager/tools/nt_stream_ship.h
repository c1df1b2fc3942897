/*
 * nt_stream_ship.h - the manager's on_stream (manager/core/nt_manager.h) handed to the
 * shipper's nt_ship_stream (ship/nt_ship.h): a streaming section shipped as its buffers are
 * saved, by nanotrace-manager --otlp-endpoint and trace-record's embedded manager. Called on
 * a saver thread or the manager's: it only queues (nt_ship_stream never waits).
 */
#ifndef NT_STREAM_SHIP_H
#define NT_STREAM_SHIP_H

#include "manager/core/nt_manager.h"
#include "ship/nt_ship.h"

static inline void nt_stream_ship(void *ship, const nt_manager_stream *st)
{
	nt_ship_range r = { .id = st->id, .name = st->name, .header = st->header,
			    .header_len = st->header_len, .fd = st->fd, .from = st->from,
			    .to = st->to, .ended = st->ended, .bundle_fd = st->bundle_fd,
			    .offset = st->offset, .len = st->len };
	(void)nt_ship_stream(ship, &r); /* a failure is counted and logged by the shipper */
}

#endif /* NT_STREAM_SHIP_H */
