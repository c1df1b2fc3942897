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

static inline void nt_stream_ship(void *ship, const nt_saved_range *st)
{
	(void)nt_ship_stream(ship, st); /* a failure is counted and logged by the shipper */
}

#endif /* NT_STREAM_SHIP_H */
