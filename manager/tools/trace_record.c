/*
 * trace-record - the trace client: records every registered provider (or the COMMAND it
 * runs and every descendant linking libnanotrace) into one bundle archive.
 *
 * This file is its main loop: signals, the command's end, --duration and the manager's
 * messages until CTL_STOPPED. The manager it speaks to is nt_record_manager.c's, the
 * command nt_record_spawn.c's, the bundle file nt_record_output.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nt_recorder.h"

static void on_signal_byte(recorder *r, char sig)
{
	if (sig == SIGCHLD) {
		nt_record_reap(r, 0);
		if (r->child_done)
			nt_record_send_stop(r);
		return;
	}
	/* SIGINT, SIGTERM: without a command, stop; with one, pass SIGTERM on (a terminal's
	 * Ctrl-C already reached the whole process group) and stop when it ends. */
	if (r->child <= 0)
		nt_record_send_stop(r);
	else if (sig == SIGTERM && !r->child_done)
		kill(r->child, SIGTERM);
}

/* Until CTL_STOPPED: progress, signals, the command's end, --duration. */
static int run_loop(recorder *r)
{
	int64_t deadline = r->o.duration > 0 ? nt_record_now_ns() + (int64_t)(r->o.duration * 1e9) : 0;
	for (;;) {
		struct pollfd p[2] = { { .fd = r->ctl, .events = POLLIN },
				       { .fd = nt_record_signal_fd(), .events = POLLIN } };
		if (poll(p, 2, 100) < 0 && errno != EINTR)
			return nt_record_manager_lost(r, strerror(errno));
		if (p[1].revents) {
			char sigs[16];
			ssize_t n = read(nt_record_signal_fd(), sigs, sizeof(sigs));
			for (ssize_t i = 0; i < n; i++)
				on_signal_byte(r, sigs[i]);
		}
		nt_record_reap(r, 0);
		if (r->child > 0 && r->child_done)
			nt_record_send_stop(r);
		int64_t now = nt_record_now_ns();
		if (deadline && now >= deadline)
			nt_record_send_stop(r);
		if (r->stop_sent && now - r->heard_ns > (int64_t)(r->o.manager_timeout * 1e9))
			return nt_record_manager_silent(r);
		if (!p[0].revents)
			continue;
		nt_wire_msg msg;
		const char *why = NULL;
		int got = nt_record_recv(r->ctl, &msg, 0, &why);
		if (got < 0)
			return nt_record_manager_lost(r, why);
		if (got == 0)
			continue;
		r->heard_ns = now;
		if (msg.type == NT_WIRE_CTL_PROGRESS || msg.type == NT_WIRE_CTL_STOPPED)
			nt_record_ship_written(r, msg.c); /* msg.c: the bundle's bytes written */
		if (msg.type == NT_WIRE_CTL_PROGRESS)
			nt_record_progress(r, &msg);
		else if (msg.type == NT_WIRE_CTL_STOPPED ||
			 (msg.type == NT_WIRE_CTL_END && r->stop_sent && (int64_t)msg.a != -2))
			return nt_record_finished(r, &msg);
	}
}

static int record(recorder *r)
{
	r->tty = isatty(2);
	if (nt_record_signals_install() != 0) {
		say("pipe: %s", strerror(errno));
		return EXIT_FAILED;
	}
	int rc = EXIT_FAILED;
	if (nt_record_make_output(r) != 0)
		return EXIT_FAILED;
	if (nt_record_ship_start(r) != 0 || nt_record_connect(r, 1) != 0 ||
	    nt_record_start(r) != 0) {
		nt_record_drop_output(r);
		nt_record_stop_embedded(r);
		nt_record_ship_end(r);
		return EXIT_FAILED;
	}
	int spawn_failed = r->o.command != NULL && nt_record_spawn(r) != 0;
	if (spawn_failed)
		nt_record_send_stop(r);
	rc = run_loop(r);
	if (spawn_failed && rc == 0)
		rc = EXIT_FAILED;
	if (r->child > 0 && !r->child_done)
		nt_record_reap(r, 1);
	close(r->ctl);
	nt_record_stop_embedded(r);
	nt_record_ship_end(r); /* before a failed run's bundle is removed */
	nt_record_drop_output(r);
	return rc;
}

int main(int argc, char **argv)
{
	recorder r;
	memset(&r, 0, sizeof(r));
	r.ctl = r.out_fd = -1;
	r.t0_ns = nt_record_now_ns();
	if (nt_record_parse_options(argc, argv, &r.o) != 0) {
		fprintf(stderr, "Try 'trace-record --help'.\n");
		return EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	if (r.o.list)
		return nt_record_list(&r);
	return record(&r);
}
