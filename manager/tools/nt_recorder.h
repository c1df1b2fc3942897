/*
 * nt_recorder.h - trace-record's pieces (manager/tools/nt_record_*.c, trace_record.c): the
 * recorder they share and what each offers the others. Not installed.
 */
#ifndef NT_RECORDER_H
#define NT_RECORDER_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/nt_wire.h"
#include "manager/core/nt_manager.h"
#include "nt_record_options.h"
#include "ship/nt_ship.h"

/* EXIT_NOT_RUN: the command could not be run, as a shell says it. */
enum { EXIT_USAGE = 1, EXIT_FAILED = 2, EXIT_MANAGER_LOST = 3, EXIT_NOT_RUN = 127 };
#define say nt_record_say

typedef struct recorder {
	options o;
	char socket_path[PATH_MAX];
	int ctl;                 /* controller connection */
	nt_manager *embedded;    /* the manager on our own thread, or NULL */
	pthread_t embedded_thread;
	char embedded_dir[PATH_MAX];
	char tmp_path[PATH_MAX]; /* the bundle until it is renamed onto o.output */
	int out_fd;
	pid_t child;
	int child_status;        /* exit code for the command, once it ended */
	int child_done;
	int exec_failed;         /* errno of the command's exec: no archive is kept */
	int stop_sent;
	int embedded_stuck;      /* its thread did not end when asked: it owns the file still */
	int64_t heard_ns;        /* the manager's last message, or CTL_STOP if later */
	int tty;
	int64_t t0_ns;
	nt_ship *ship;           /* --otlp-endpoint's shipper, or NULL */
	uint64_t ship_cursor;    /* the bundle's next frame not yet shipped */
} recorder;

/* nt_record_manager.c: the manager trace-record speaks to (the default one, else its own
 * on a thread) and the controller messages. */
int64_t nt_record_now_ns(void);
/* One message, with `fd` attached when >= 0; 0, or -1 with errno. */
int nt_record_send(int sock, const nt_wire_msg *msg, int fd);
/* One message from the manager within timeout_ms: 1, 0 on timeout, -1 when the manager
 * closed or sent something malformed (why says which). */
int nt_record_recv(int sock, nt_wire_msg *msg, int timeout_ms, const char **why);
/* 0 connected; -1 when none answers (and none may be embedded); -2 when the one there is
 * refused (said). */
int nt_record_connect(recorder *r, int may_embed);
/* 0 once the embedded manager is gone (or there was none); -1 when it is stuck. */
int nt_record_stop_embedded(recorder *r);
int nt_record_list(recorder *r);
int nt_record_start(recorder *r);
void nt_record_send_stop(recorder *r);

/* nt_record_spawn.c: the command, and how it ended. A command that cannot be run sets
 * exec_failed (said here); -1 only when no child could be made. */
int nt_record_spawn(recorder *r);
void nt_record_reap(recorder *r, int block);

/* nt_record_progress.c: the progress line on a terminal. */
void nt_record_progress(recorder *r, const nt_wire_msg *m);
void nt_record_end_progress(recorder *r);

/* nt_record_output.c: the bundle file, from its private temporary name to -o FILE, and
 * each way a recording ends (returns trace-record's exit code). */
int nt_record_make_output(recorder *r);
void nt_record_drop_output(recorder *r);
int nt_record_finished(recorder *r, const nt_wire_msg *m);
int nt_record_manager_lost(recorder *r, const char *why);
int nt_record_manager_silent(recorder *r);

/* nt_record_ship.c: --otlp-endpoint. Start: 0, or -1 after saying why (no shipper). Each
 * section whole below `end` (bytes of the bundle written) is handed to the shipper; the end
 * ships what is left, waits for the spool at most the OTLP timeout and says what happened. */
int nt_record_ship_start(recorder *r);
void nt_record_ship_written(recorder *r, uint64_t end);
void nt_record_ship_end(recorder *r);

/* nt_record_signals.c: SIGCHLD, SIGINT and SIGTERM, as bytes on a pipe the main loop
 * polls. */
int nt_record_signals_install(void);
int nt_record_signal_fd(void);

#endif /* NT_RECORDER_H */
