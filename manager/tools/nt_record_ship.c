/*
 * nt_record_ship.c - trace-record --otlp-endpoint: each section of the bundle is handed to
 * the shipper (ship/nt_ship.h) once the manager has written it whole. The manager, the
 * embedded one or a daemon, writes the bundle through the descriptor trace-record passed,
 * and its progress (4 times a second) and CTL_STOPPED say how far the file is written
 * (nt_wire_msg.c): the frames up to there are walked (nt_ship_bundle), so a process is
 * shipped while the others still record, whichever manager wrote it. The embedded manager
 * also hands each streaming provider's saves to the shipper as they are made
 * (nt_stream_ship.h), and the bundle walk skips those sections; over a daemon, a streaming
 * section is shipped when the bundle holds it. The shipper's threads
 * export and send; the main loop never waits for them. At the end: the spool is given at
 * most the OTLP timeout to drain, and one line says what was sent, dropped and left.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/stat.h>

#include "nt_recorder.h"

static void ship_log(void *ctx, const char *line)
{
	(void)ctx;
	say("otlp: %s", line);
}

int nt_record_ship_start(recorder *r)
{
	if (!r->o.otlp)
		return 0;
	nt_ship_config cfg;
	nt_ship_config_init(&cfg);
	cfg.endpoint = r->o.otlp_endpoint;
	cfg.spool_dir = r->o.otlp_spool;
	cfg.spool_cap = r->o.otlp_spool_size;
	cfg.log = ship_log;
	char why[512];
	r->ship = nt_ship_new(&cfg, why, sizeof(why));
	if (r->ship == NULL) {
		say("%s: %s", r->o.otlp_endpoint ? "--otlp-endpoint" : "--otlp", why);
		return -1;
	}
	return 0;
}

void nt_record_ship_written(recorder *r, uint64_t end)
{
	if (r->ship != NULL && r->out_fd >= 0)
		nt_ship_bundle(r->ship, r->out_fd, &r->ship_cursor, end);
}

void nt_record_ship_end(recorder *r)
{
	if (r->ship == NULL)
		return;
	if (r->embedded_stuck) { /* its saver threads may still hand streams to the shipper */
		say("otlp: the embedded manager did not stop: what is not yet sent stays in the "
		    "spool for the next run");
		return;
	}
	struct stat st;
	/* what a salvaged bundle (the manager lost) holds, or the last sections */
	if (r->out_fd >= 0 && fstat(r->out_fd, &st) == 0)
		nt_record_ship_written(r, (uint64_t)st.st_size);
	nt_ship_counts c;
	char line[1024];
	nt_ship_close(r->ship, nt_ship_timeout_ms(r->ship), &c);
	r->ship = NULL;
	say("%s", nt_ship_summary(&c, line, sizeof(line)));
}
