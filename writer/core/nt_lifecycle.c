/*
 * nt_lifecycle.c - the top of writer/core: what the program calls to start, stop and finish
 * its session (nt_start, nt_finish, nt_provider_*: refused or deferred while a trace manager
 * owns the session), registration with a trace manager (nt_provider_register*, and
 * NANOTRACE_MANAGER before main()), and the fork() handlers, which order every mechanism's
 * part across fork().
 *
 * It calls down into the provider lifecycle (nt_provider.c), the registry, the session,
 * fork() children's archives (nt_fork.c), the stream and the arena; nothing below calls it.
 * nt_fork.c starts a child's session through nt_fork_child_start, a constant pointer to
 * nt_start defined here: the call stays downward in the source, and a static link that
 * records events still holds this file and its constructor, as it did when the call was
 * by name. Only nt_env.c (NANOTRACE, which starts a session) is above it.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/un.h>
#include <unistd.h>

#include "format/nt_wire.h"
#include "nt_internal.h"

#define DEFAULT_REGISTER_TIMEOUT_MS 3000
#define MAX_REGISTER_TIMEOUT_MS 60000 /* a start-up wait longer than a minute is a mistake */
#define TIMEOUT_ENV "NANOTRACE_REGISTER_TIMEOUT"

nt_result (*const nt_fork_child_start)(const nt_config *cfg) = nt_start;

static void register_by_env(const char *path, const char *name);

/* ---- fork() ----------------------------------------------------------------------------
 * The child gets a copy of the session's state, not the session: the archive stays the
 * parent's alone. Holding intern_lock across fork() means the child never inherits a
 * half-made intern table or durable record, nor a lock whose owner was not copied. */
static int forking_pid;

/* The registry's lock first: the provider thread takes intern_lock while holding it. */
static void before_fork(void)
{
	nt_registry_before_fork();
	pthread_mutex_lock(&nt_S.intern_lock);
	forking_pid = (int)getpid();
}

static void after_fork_in_parent(void)
{
	nt_fork_parent_counted();
	pthread_mutex_unlock(&nt_S.intern_lock);
	nt_registry_after_fork_in_parent();
}

/* Runs in the child's only thread before fork() returns there, so nothing of the child has
 * touched the session yet. NT_TAG_FORKED sends its first event to the cold path, which starts the
 * child's own session (nt_fork.c); the exit and signal handlers find no session of the
 * parent's to end; the arena, fd and path are let go. The registry goes last: a registered
 * parent's child registers anew, which may start a session of the child's own. */
static void after_fork_in_child(void)
{
	pthread_mutex_unlock(&nt_S.intern_lock);
	int recording = nt_S.started == SESSION_RECORDING && !nt_S.manager_buffer;
	if (nt_S.started != SESSION_IDLE) {
		nt_store_release_32(&nt_session_tag_, 0);
		nt_S.forked_from = forking_pid;
		/* Before nt_arena_forget frees the path the child's is derived from; it may
		 * store NT_TAG_FORKED. */
		nt_fork_child_prepare(forking_pid, recording, nt_S.path);
		nt_stream_forget();
		nt_arena_forget(); /* also the manager's buffer: it stays the parent's alone */
		nt_S.started = SESSION_IDLE;
	} else {
		nt_fork_child_prepare(forking_pid, 0, NULL); /* a pending child passes it on */
	}
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)], name[NT_WIRE_MAX_NAME + 1];
	if (!nt_registry_after_fork_in_child(path, sizeof(path), name, sizeof(name)))
		return;
	nt_S.map_lazily = 1; /* fork() returns before the buffer is faulted in (nt_arena.c) */
	register_by_env(path, name);
}

static void install_fork_handlers_once(void)
{
	pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

/* Installed once, before the first session or registration: the registry needs them before
 * any session exists. */
static void install_fork_handlers(void)
{
	static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;
	pthread_once(&fork_handlers_once, install_fork_handlers_once);
}

/* ---- the program's session -------------------------------------------------------------- */

/* The program's own lifecycle calls while the trace manager owns the session. */
static nt_result owned_by_manager(const char *who)
{
	nt_set_error("%s: the session belongs to the trace manager this process is registered "
		     "with (NANOTRACE_MANAGER)", who);
	return NT_ERR_STATE;
}

nt_result nt_provider_initialize(const nt_config *cfg)
{
	if (nt_registry_owns_session())
		return owned_by_manager("nt_provider_initialize");
	nt_fork_child_cancel(); /* a fork() child's own choice, before its lazy session */
	install_fork_handlers();
	return nt_provider_setup(cfg, -1, -1);
}

nt_result nt_provider_start(nt_buffer_disposition disposition, const char *additional_categories)
{
	if (nt_registry_owns_session())
		return owned_by_manager("nt_provider_start");
	return nt_provider_run_start(disposition, additional_categories);
}

nt_result nt_provider_stop(void)
{
	if (nt_registry_owns_session())
		return owned_by_manager("nt_provider_stop");
	return nt_provider_run_stop();
}

nt_result nt_provider_terminate(const char *path)
{
	if (nt_registry_owns_session())
		return owned_by_manager("nt_provider_terminate");
	return nt_session_finish(path, NT_END_FINISHED);
}

/* Registered with a trace manager: the manager starts and stops the session, so the
 * program's own start is done already (NT_OK, nothing started). */
nt_result nt_start(const nt_config *cfg)
{
	if (nt_registry_owns_session())
		return NT_OK;
	nt_result rc = nt_provider_initialize(cfg);
	return rc != NT_OK ? rc : nt_provider_run_start(NT_BUFFER_CLEAR_ENTIRE, NULL);
}

/* Registered: the process's part ends as at exit (stop, final save, STOPPED, close). */
nt_result nt_finish(const char *path)
{
	if (nt_registry_owns_session()) {
		nt_registry_exit();
		return NT_OK;
	}
	char beside[4096]; /* a lazily started fork() child's archive goes beside `path` */
	return nt_session_finish(nt_fork_finish_path(path, beside, sizeof(beside)),
				 NT_END_FINISHED);
}

/* ---- registration with a trace manager ---------------------------------------------------- */

static void registry_first_use(void)
{
	install_fork_handlers();
	nt_registry_init();
}

static nt_result do_register(const char *who, const char *path, const char *name, int sync,
			     int timeout_ms, int *started)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	if (started != NULL)
		*started = 0;
	nt_result rc = nt_registry_check(who, &path, &name, sync, timeout_ms);
	if (rc != NT_OK)
		return rc;
	pthread_once(&once, registry_first_use);
	return nt_registry_connect(who, path, name, sync, timeout_ms, started);
}

nt_result nt_provider_register(const char *socket_path, const char *name)
{
	return do_register("nt_provider_register", socket_path, name, 0, 0, NULL);
}

nt_result nt_provider_register_sync(const char *socket_path, const char *name, int timeout_ms,
				    int *started)
{
	return do_register("nt_provider_register_sync", socket_path, name, 1, timeout_ms, started);
}

/* NANOTRACE_REGISTER_TIMEOUT in milliseconds (0: do not wait); a malformed value gets one
 * line on stderr and the default. */
static int register_timeout(void)
{
	const char *v = secure_getenv(TIMEOUT_ENV);
	if (v == NULL || v[0] == '\0')
		return DEFAULT_REGISTER_TIMEOUT_MS;
	char *end;
	errno = 0;
	long ms = strtol(v, &end, 10);
	if (!isdigit((unsigned char)v[0]) || errno != 0 || *end != '\0' ||
	    ms > MAX_REGISTER_TIMEOUT_MS) {
		char shown[NT_ENV_SHOWN_MAX];
		nt_env_warn(TIMEOUT_ENV "='%s' is not a number of milliseconds from 0 to %d; "
			    "using %d", nt_env_shown(v, shown), MAX_REGISTER_TIMEOUT_MS,
			    DEFAULT_REGISTER_TIMEOUT_MS);
		return DEFAULT_REGISTER_TIMEOUT_MS;
	}
	return (int)ms;
}

/* Registers as `name` with the manager at `path`, by NANOTRACE_REGISTER_TIMEOUT's rule; a
 * manager out of reach gets one line on stderr and the program runs on, untraced. */
static void register_by_env(const char *path, const char *name)
{
	int timeout = register_timeout(), started;
	nt_result rc = timeout == 0 ? nt_provider_register(path, name)
				    : nt_provider_register_sync(path, name, timeout, &started);
	/* One line: a lost manager said so already. */
	if (rc != NT_OK && !nt_registry_loss_reported())
		nt_env_warn("%s; not tracing (" NT_MANAGER_ENV ")", nt_last_error());
}

/* Every process linking libnanotrace started with NANOTRACE_MANAGER set registers before
 * main(), so it records from its first event once the manager starts it. */
__attribute__((constructor)) static void register_from_environment(void)
{
	/* secure_getenv: a set-user-ID program must not let its caller pick the manager. */
	const char *path = secure_getenv(NT_MANAGER_ENV);
	if (path != NULL && path[0] != '\0')
		register_by_env(path, NULL);
}
