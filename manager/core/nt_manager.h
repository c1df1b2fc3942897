/*
 * nt_manager.h - the trace manager as a library: what nanotrace-manager (a daemon) and
 * trace-record (its embedded default) both run.
 *
 * One nt_manager owns one listening socket and serves, on one thread, every connection made
 * to it: providers (the registry protocol of format/nt_wire.h, their FIFOs of
 * format/nt_fifo.h) and controllers (trace-record). It holds each traced provider's buffer
 * (a sealed memfd it created) so that a provider killed at any moment still contributes what
 * it published, and writes one bundle (format/nt_bundle.h) per trace into the file a
 * controller passes with CTL_START. Nothing a provider sends or writes is trusted: a
 * provider that lies loses its own section (logged, and marked in the bundle), never the
 * manager or the other providers.
 *
 * No global state: two managers in one process (tests) share nothing.
 */
#ifndef NT_MANAGER_H
#define NT_MANAGER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/nt_saved_range.h"

typedef struct nt_manager nt_manager;

/* Where log lines go: one line, no newline, NUL-terminated. */
typedef void (*nt_manager_log_fn)(void *ctx, const char *line);

typedef struct nt_manager_config {
	const char *socket_path;  /* required: nt_manager_socket_path() gives the default */
	nt_manager_log_fn log;    /* NULL: lines go to stderr */
	void *log_ctx;
	unsigned stop_timeout_ms; /* how long a provider may take to answer STOP; 0 = 2000 */
	int verbose;              /* nonzero: log every provider's state change */
	int create_dir;           /* nonzero: a missing socket directory is made (0700); only
				   * the default socket's is, never one a user named */
	/* Called on the manager's thread once a section's archive is whole in a bundle:
	 * `len` bytes at `offset` of the bundle file `fd` (the manager's descriptor, closed
	 * when the trace ends: dup it to keep it), provider `name`. It must neither write the
	 * file nor wait (nanotrace-manager's --otlp-endpoint queues it for its shipper).
	 * NULL: none. */
	void (*on_section)(void *ctx, int fd, uint64_t offset, uint64_t len, const char *name);
	void *section_ctx;
	/* Called on the manager's thread when a provider has started recording into a buffer
	 * the manager made (its STARTED: the header is there; `memfd`, the manager's descriptor of it: open until the matching call
	 * with memfd -1 at least; dup it to keep it) and, with memfd -1, once that recording
	 * is final (its section written, or the provider gone without one). It must not wait
	 * (nanotrace-manager's --trace2-event queues it). NULL: none. */
	void (*on_recording)(void *ctx, uint32_t provider_id, int memfd, const char *name);
	void *recording_ctx;
	/* A streaming provider's section as its buffers are saved (runtime/nt_saved_range.h):
	 * called on its saver thread after each save that committed records (and once more on
	 * the manager's thread for the last save when it ends), then on the manager's thread
	 * once with `ended` set, instead of on_section, when its section is whole in the
	 * bundle. It must neither write the files nor wait: fd stays open until that ended
	 * call returns (dup it to read later; its committed bytes never change). NULL: none,
	 * and a streaming section goes to on_section like any other. */
	void (*on_stream)(void *ctx, const nt_saved_range *st);
	void *stream_ctx;
} nt_manager_config;

/* The socket path a manager listens on and clients connect to: $NANOTRACE_MANAGER if set and
 * non-empty, else $XDG_RUNTIME_DIR/nanotrace/manager.sock, else /tmp/nanotrace-$UID/
 * manager.sock, written into buf (of cap bytes). Returns 0 for the first two (the user's
 * choice, or a directory only the user can make), NT_MANAGER_PATH_SHARED for the last (in
 * /tmp, where any user may make the directory first), or -1 with a message in why
 * (whylen bytes) when the path does not fit. Cost: a few getenv calls. */
#define NT_MANAGER_PATH_SHARED 1
int nt_manager_socket_path(char *buf, size_t cap, char *why, size_t whylen);

/* Creates the socket's directory when it is missing (mode 0700) and checks it: a directory
 * (not a symlink), owned by the caller, mode 0700. Returns 0, or -1 with the reason (which
 * names the path) in why. With create == 0 it only checks. Cost: a few system calls. */
int nt_manager_check_dir(const char *socket_path, int create, char *why, size_t whylen);

/* The client's side of the same rules: checks the socket's directory as above (create == 0),
 * connects without blocking for longer than timeout_ms (a full accept queue is retried
 * that long), and checks that the server (SO_PEERCRED) runs as the caller's euid or root,
 * so that a socket another user planted cannot impersonate the manager. Returns the
 * connected fd (blocking, close-on-exec); -1 when no manager is there (the directory or
 * socket is missing, nobody listens: the caller may run its own); -2 when the socket is
 * refused (wrong owner, mode, a link, another uid serving). why names path and owner. */
int nt_manager_connect(const char *socket_path, int timeout_ms, char *why, size_t whylen);

/* A manager listening on cfg->socket_path (its directory checked as above, made when
 * missing only with cfg->create_dir). A socket file
 * left by a dead manager is replaced; one that answers means another manager runs, and
 * NULL is returned. NULL with the reason in why on every failure. */
nt_manager *nt_manager_new(const nt_manager_config *cfg, char *why, size_t whylen);

/* Serves connections until nt_manager_stop(); a trace in progress is stopped and written
 * first. Returns 0, or -1 when the event loop itself failed (logged). Cost: runs. */
int nt_manager_run(nt_manager *m);

/* Asks nt_manager_run() to return. Async-signal-safe (one write to an eventfd); may be
 * called from any thread. */
void nt_manager_stop(nt_manager *m);

/* Closes every connection, unlinks the socket, frees everything. NULL is ignored. */
void nt_manager_free(nt_manager *m);

#endif /* NT_MANAGER_H */
