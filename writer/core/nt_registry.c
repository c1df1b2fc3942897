/*
 * nt_registry.c - the provider of fuchsia.tracing.provider across processes: registration
 * with the trace manager (NANOTRACE_MANAGER) and the provider thread that obeys it.
 *
 * A registered process has one SOCK_SEQPACKET connection to the manager. Its own thread
 * (the provider thread) receives the manager's messages (format/nt_wire.h) and runs the
 * session lifecycle for it:
 *   INITIALIZE  map the memfd it brings as the arena (nt_arena_map_fd), keep the FIFO
 *   START       nt_provider_run_start; STARTED on the FIFO (remote streaming: the stream
 *               thread sends it)
 *   STOP        nt_provider_run_stop; STOPPED on the FIFO (remote streaming: the stream thread
 *               sends it after the final SAVE_BUFFER round trip)
 *   TERMINATE   let go of the buffer and the FIFO; still registered, idle
 *   REGISTERED  the answer a synchronous registration waits for
 * Anything else, a malformed message, or descriptors where none belong closes the
 * connection: the manager then owns what the buffer holds. A manager that goes away halts
 * recording (later events are counted as dropped, in the buffer it may still hold); the
 * program runs on. Exit and the program's nt_finish() stop, answer STOPPED and close.
 *
 * Locking: R.lock guards the registry state and every lifecycle call the provider thread or
 * the exit path makes; it is taken before nt_S.intern_lock, also across fork(). The event
 * path never sees any of this: only the session tag, which the lifecycle calls set.
 *
 * Below nt_lifecycle.c, which registers (the public calls, NANOTRACE_MANAGER at load, a
 * registered parent's fork() child) and holds this lock across fork(); above the steps the
 * provider thread runs (nt_provider.c, nt_session.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "format/nt_arena_layout.h"
#include "runtime/nt_deadline.h"
#include "format/nt_fifo.h"
#include "nt_internal.h"
#include "nt_registry_wire.h"

static struct {
	pthread_mutex_t lock;
	pthread_cond_t answered_cond; /* CLOCK_MONOTONIC (nt_registry_init) */
	int conn;                     /* the connection to the manager, or -1 */
	int fifo;                     /* the FIFO while the manager's buffer is held, or -1 */
	int registered;               /* conn is open */
	int owned;                    /* registered once: the manager owns the session */
	int initialized;              /* the manager's buffer is the arena */
	int answered, started;        /* REGISTERED and its a */
	int closing;                  /* this process closes: end of stream is expected */
	int loss_reported;            /* lose_manager() said so on stderr */
	int thread_running;
	pthread_t thread;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char name[NT_WIRE_MAX_NAME + 1];
} R = { .lock = PTHREAD_MUTEX_INITIALIZER, .conn = -1, .fifo = -1 };

int nt_registry_owns_session(void)
{
	return __atomic_load_n(&R.owned, __ATOMIC_ACQUIRE);
}

/* ---- losing the manager ------------------------------------------------------------- */

/* Caller holds R.lock. The connection ends (the manager went away, or broke the protocol):
 * recording halts, so the buffer the manager may still hold counts every later event as
 * dropped; the program runs on. One line on stderr says so. */
static void lose_manager(const char *what, const char *detail)
{
	if (R.initialized && nt_S.started == SESSION_RECORDING)
		nt_store_release_32(&nt_session_tag_, NT_TAG_HALTED);
	fprintf(stderr, "nanotrace: %s%s%s; not tracing\n", what, detail ? ": " : "",
		detail ? detail : "");
	R.loss_reported = 1;
	close(R.conn);
	R.conn = -1;
	R.registered = 0;
	if (R.fifo >= 0)
		shutdown(R.fifo, SHUT_RDWR); /* a remote stream thread waiting there ends */
	R.answered = 1;
	pthread_cond_broadcast(&R.answered_cond);
}

/* ---- the manager's messages --------------------------------------------------------- */

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* A counted string of a checked message, NUL-terminated; "" is NULL. */
static const char *text_or_null(const nt_wire_msg *m, char *buf)
{
	return m->text_len == 0 ? NULL : nt_wire_str(m->text, m->text_len, buf);
}

/* INITIALIZE's numbers against format/nt_arena_layout.h and its descriptors; NULL or what
 * is wrong. */
static const char *check_initialize(const nt_wire_msg *m, int nfds, const int *fds,
				    nt_arena_layout *layout)
{
	struct stat st;
	if (R.initialized)
		return "INITIALIZE while it holds a buffer";
	if (nfds != 2)
		return "INITIALIZE without exactly two descriptors (memfd, FIFO)";
	if (m->a > NT_MODE_STREAMING)
		return "INITIALIZE with an unknown buffering mode";
	if (nt_arena_layout_compute(m->b, m->c, layout) != NT_LAYOUT_OK)
		return "INITIALIZE with buffer or chunk sizes the arena layout refuses";
	if (m->d != layout->map_size)
		return "INITIALIZE whose map size disagrees with the arena layout";
	if (fstat(fds[0], &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->d)
		return "INITIALIZE whose buffer is not a file of the map size";
	/* A buffer that could shrink under the mapping would kill this process (SIGBUS). */
	int seals = fcntl(fds[0], F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return "INITIALIZE whose buffer is not sealed against shrinking (F_SEAL_SHRINK)";
	if (fstat(fds[1], &st) != 0 || !S_ISSOCK(st.st_mode))
		return "INITIALIZE whose FIFO is not a socket";
	return NULL;
}

static int on_initialize(const nt_wire_msg *m, int *fds, int nfds, char *why, size_t cap)
{
	nt_arena_layout layout;
	char cats[NT_WIRE_MAX_TEXT + 1];
	const char *bad = check_initialize(m, nfds, fds, &layout);
	const char *categories = text_or_null(m, cats);
	if (bad == NULL && nt_category_patterns_check("INITIALIZE", categories) != NT_OK)
		bad = nt_last_error();
	if (bad != NULL) {
		snprintf(why, cap, "%s", bad);
		close_fds(fds, nfds);
		return 0;
	}
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.mode = (int)m->a;
	cfg.buffer_size = (size_t)m->b;
	cfg.chunk_size = layout.chunk_size;
	cfg.categories = categories; /* the wire's "" is every category: NULL */
	cfg.process_name = R.name;
	cfg.handle_signals = 1; /* a fatal signal is recorded in the buffer (nt_crash.c) */
	nt_result rc = nt_provider_setup(&cfg, fds[0], fds[1]);
	if (rc != NT_OK) {
		snprintf(why, cap, "cannot take the buffer: %s", nt_last_error());
		if (nt_S.fd != fds[0]) /* nt_arena_map_fd refused it: still ours */
			close(fds[0]);
		close(fds[1]);
		return 0;
	}
	R.fifo = fds[1];
	R.initialized = 1;
	return 1;
}

static int on_start(const nt_wire_msg *m, char *why, size_t cap)
{
	char cats[NT_WIRE_MAX_TEXT + 1];
	const char *extra = text_or_null(m, cats);
	if (!R.initialized) {
		snprintf(why, cap, "START before INITIALIZE");
		return 0;
	}
	if (m->a > NT_BUFFER_RETAIN) {
		snprintf(why, cap, "START with an unknown buffer disposition %llu",
			 (unsigned long long)m->a);
		return 0;
	}
	int was_recording = nt_S.started == SESSION_RECORDING;
	nt_result rc = nt_provider_run_start((nt_buffer_disposition)m->a, extra);
	if (rc != NT_OK) {
		snprintf(why, cap, "START refused: %s", nt_last_error());
		return 0;
	}
	/* A remote stream thread that just began says STARTED itself, in its FIFO order. */
	if ((was_recording || !nt_provider_remote_streaming()) &&
	    nt_fifo_send(R.fifo, NT_FIFO_STARTED, NT_FIFO_PROTOCOL_VERSION, 0) != 0) {
		snprintf(why, cap, "cannot answer STARTED: %s", strerror(errno));
		return 0;
	}
	return 1;
}

/* Stops recording, with `ended_by` in the header; STOPPED goes on the FIFO (from the stream
 * thread after its final save, when it ran), also when it was stopped already if `always`.
 * Caller holds R.lock. Returns 0 or an errno. */
static int stop_and_answer(uint8_t ended_by, int always)
{
	int was_recording = nt_S.started == SESSION_RECORDING;
	int streamed = was_recording && nt_provider_remote_streaming();
	if (was_recording) {
		nt_provider_run_stop();
		*nt_header_u8(NT_HDR_ENDED_BY) = ended_by;
	}
	if (streamed || (!was_recording && !always))
		return 0;
	return nt_fifo_send(R.fifo, NT_FIFO_STOPPED, 0, 0);
}

static int on_stop(char *why, size_t cap)
{
	if (!R.initialized) {
		snprintf(why, cap, "STOP before INITIALIZE");
		return 0;
	}
	int err = stop_and_answer(NT_END_FINISHED, 1); /* STOP is always answered */
	if (err != 0) {
		snprintf(why, cap, "cannot answer STOPPED: %s", strerror(err));
		return 0;
	}
	return 1;
}

/* Caller holds R.lock: the buffer and the FIFO are let go; the process stays registered. */
static void release_buffer(void)
{
	if (!R.initialized)
		return;
	if (nt_S.started == SESSION_RECORDING)
		nt_provider_run_stop();
	nt_session_release_fd();
	close(R.fifo);
	R.fifo = -1;
	R.initialized = 0;
}

/* One checked message; returns 0 (with *why) when the connection must close. */
static int handle(const nt_wire_msg *m, int *fds, int nfds, char *why, size_t cap)
{
	if (m->type != NT_WIRE_INITIALIZE && nfds > 0) {
		close_fds(fds, nfds);
		snprintf(why, cap, "%s with descriptors attached", nt_wire_type_name(m->type));
		return 0;
	}
	switch (m->type) {
	case NT_WIRE_REGISTERED:
		R.answered = 1;
		R.started = m->a != 0;
		pthread_cond_broadcast(&R.answered_cond);
		return 1;
	case NT_WIRE_INITIALIZE:
		return on_initialize(m, fds, nfds, why, cap);
	case NT_WIRE_START:
		return on_start(m, why, cap);
	case NT_WIRE_STOP:
		return on_stop(why, cap);
	case NT_WIRE_TERMINATE:
		release_buffer();
		return 1;
	}
	snprintf(why, cap, "%s, which a provider does not take", nt_wire_type_name(m->type));
	return 0;
}

/* ---- the provider thread ------------------------------------------------------------ */

static void *provider_main(void *arg)
{
	int conn = (int)(intptr_t)arg;
	for (;;) {
		nt_wire_msg m;
		int fds[NT_WIRE_MAX_FDS], nfds;
		const char *bad;
		char why[NT_WIRE_MAX_TEXT + 200];
		int rc = nt_wire_recv(conn, &m, fds, &nfds, &bad);
		pthread_mutex_lock(&R.lock);
		if (R.closing || R.conn != conn) { /* the exit path closes it: expected */
			close_fds(fds, nfds);
			pthread_mutex_unlock(&R.lock);
			break;
		}
		int ok = rc > 0 && handle(&m, fds, nfds, why, sizeof(why));
		if (!ok) {
			char what[sizeof(R.path) + 64];
			snprintf(what, sizeof(what), "the trace manager at %s %s", R.path,
				 rc == 0 ? "went away" : "broke the protocol");
			lose_manager(what, rc == 0 ? NULL : rc < 0 ? bad : why);
			R.thread_running = 0;
			pthread_detach(pthread_self()); /* nobody joins a thread that ended itself */
		}
		pthread_mutex_unlock(&R.lock);
		if (!ok)
			break;
	}
	return NULL;
}

/* The provider thread takes no signal: they stay the program's. */
static int start_thread(int conn)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&R.thread, NULL, provider_main, (void *)(intptr_t)conn);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	R.thread_running = rc == 0;
	return rc;
}

/* ---- exit ----------------------------------------------------------------------------- */

void nt_registry_exit(void)
{
	pthread_mutex_lock(&R.lock);
	if (!R.registered) {
		pthread_mutex_unlock(&R.lock);
		return;
	}
	R.closing = 1;
	if (R.initialized) {
		if (nt_S.final_state == NT_FINAL_RECORDING) {
			nt_S.final_state = NT_FINAL_FINISHED;
			*nt_header_u8(NT_HDR_FINAL_STATE) = NT_FINAL_FINISHED;
		}
		/* STOPPED only when this ends a recording: a manager that stopped it has its
		 * answer. A manager gone by now changes nothing. */
		stop_and_answer(NT_END_EXIT, 0);
	}
	shutdown(R.conn, SHUT_RDWR); /* the provider thread wakes up and ends */
	int join = R.thread_running && !pthread_equal(R.thread, pthread_self());
	pthread_t thread = R.thread;
	pthread_mutex_unlock(&R.lock);
	if (join)
		pthread_join(thread, NULL);
	pthread_mutex_lock(&R.lock);
	close(R.conn);
	R.conn = -1;
	R.registered = 0;
	R.thread_running = 0;
	R.closing = 0;
	pthread_mutex_unlock(&R.lock);
}

static void exit_handler(void)
{
	nt_registry_exit();
}

/* ---- registration --------------------------------------------------------------------- */

static void init_answered_cond(void)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&R.answered_cond, &attr);
	pthread_condattr_destroy(&attr);
}

void nt_registry_init(void)
{
	init_answered_cond();
	atexit(exit_handler);
}

/* Caller holds R.lock: waits up to timeout_ms for REGISTERED; *started is its answer. */
static void wait_answer(int timeout_ms, int *started)
{
	struct timespec until = nt_deadline_after_ms(timeout_ms);
	while (!R.answered &&
	       pthread_cond_timedwait(&R.answered_cond, &R.lock, &until) != ETIMEDOUT)
		;
	*started = R.answered && R.started && nt_is_recording();
}

nt_result nt_registry_check(const char *who, const char **path, const char **name, int sync,
			    int timeout_ms)
{
	if (*path == NULL)
		*path = secure_getenv(NT_MANAGER_ENV); /* as nt_lifecycle.c's constructor does */
	if (*path == NULL || (*path)[0] == '\0') {
		nt_set_error("%s: no socket path given and " NT_MANAGER_ENV " is not set", who);
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (strlen(*path) >= sizeof(R.path)) {
		nt_set_error("%s: the socket path '%s' is longer than %zu bytes", who, *path,
			     sizeof(R.path) - 1);
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (*name == NULL)
		*name = program_invocation_short_name ? program_invocation_short_name : "";
	if (strlen(*name) > NT_WIRE_MAX_NAME) {
		nt_set_error("%s: the name '%.40s...' is %zu bytes, more than %u", who, *name,
			     strlen(*name), NT_WIRE_MAX_NAME);
		return NT_ERR_INVALID_ARGUMENT;
	}
	if (sync && timeout_ms < 0) {
		nt_set_error("%s: timeout_ms %d is negative", who, timeout_ms);
		return NT_ERR_INVALID_ARGUMENT;
	}
	return NT_OK;
}

/* Caller holds R.lock: connects and sends REGISTER. */
static nt_result connect_and_register(const char *who, const char *path, const char *name,
				      int sync)
{
	if (R.registered) {
		nt_set_error("%s: already registered with the trace manager at %s", who, R.path);
		return NT_ERR_STATE;
	}
	if (!R.owned && (nt_S.started == SESSION_READY || nt_S.started == SESSION_RECORDING)) {
		nt_set_error("%s: a session of the program's own is running; nt_finish() it first",
			     who);
		return NT_ERR_STATE;
	}
	char why[320];
	int fd = nt_wire_connect(path, why, sizeof(why));
	if (fd < 0) {
		nt_set_error("cannot reach the trace manager at %s: %s", path, why);
		return NT_ERR_IO;
	}
	uid_t peer = (uid_t)-1;
	if (!nt_wire_peer_uid_ok(fd, &peer)) {
		close(fd);
		nt_set_error("the trace manager at %s runs as uid %d, not %u", path, (int)peer,
			     (unsigned)geteuid());
		return NT_ERR_IO;
	}
	nt_wire_msg m;
	nt_wire_init(&m, NT_WIRE_REGISTER);
	m.pid = (uint32_t)getpid();
	m.a = sync ? NT_WIRE_SYNC : 0;
	nt_wire_set_name(&m, name);
	int err = nt_wire_send(fd, &m);
	if (err != 0) {
		close(fd);
		nt_set_error("cannot reach the trace manager at %s: %s", path, strerror(err));
		return NT_ERR_IO;
	}
	if (start_thread(fd) != 0) {
		close(fd);
		nt_set_error("%s: cannot start the provider thread", who);
		return NT_ERR_NO_MEMORY;
	}
	snprintf(R.path, sizeof(R.path), "%s", path);
	if (name != R.name)
		snprintf(R.name, sizeof(R.name), "%s", name);
	R.conn = fd;
	R.registered = 1;
	R.loss_reported = 0;
	R.answered = 0;
	R.started = 0;
	__atomic_store_n(&R.owned, 1, __ATOMIC_RELEASE);
	return NT_OK;
}

nt_result nt_registry_connect(const char *who, const char *path, const char *name, int sync,
			      int timeout_ms, int *started)
{
	nt_session_prepare_manager_clock();
	pthread_mutex_lock(&R.lock);
	nt_result rc = connect_and_register(who, path, name, sync);
	if (rc == NT_OK && sync) {
		int on = 0;
		wait_answer(timeout_ms, &on);
		if (started != NULL)
			*started = on;
		if (!R.registered) {
			nt_set_error("%s: the trace manager at %s closed the connection", who, path);
			rc = NT_ERR_IO;
		}
	}
	pthread_mutex_unlock(&R.lock);
	return rc;
}

int nt_provider_is_registered(void)
{
	pthread_mutex_lock(&R.lock);
	int on = R.registered;
	pthread_mutex_unlock(&R.lock);
	return on;
}

int nt_registry_loss_reported(void)
{
	return R.loss_reported;
}

/* ---- fork() ---------------------------------------------------------------------------- */

void nt_registry_before_fork(void)
{
	pthread_mutex_lock(&R.lock);
}

void nt_registry_after_fork_in_parent(void)
{
	pthread_mutex_unlock(&R.lock);
}

/* The child has the parent's descriptors but not its provider thread: it closes its copies
 * (the parent's connection and FIFO stay the parent's; the atfork handler already let go of
 * the buffer); if the parent was registered, the caller registers anew as a provider of its
 * own, at the path and with the name copied out. */
int nt_registry_after_fork_in_child(char *path, size_t path_cap, char *name, size_t name_cap)
{
	int was_registered = R.registered;
	if (R.conn >= 0)
		close(R.conn);
	if (R.fifo >= 0)
		close(R.fifo);
	R.conn = R.fifo = -1;
	R.registered = R.initialized = R.thread_running = R.closing = 0;
	R.answered = R.started = 0;
	init_answered_cond(); /* a waiter of the parent's is not in this process */
	pthread_mutex_unlock(&R.lock);
	snprintf(path, path_cap, "%s", R.path);
	snprintf(name, name_cap, "%s", R.name);
	return was_registered;
}
