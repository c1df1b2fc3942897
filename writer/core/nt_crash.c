/*
 * nt_crash.c - a file-backed session (or one in a trace manager's buffer) ends cleanly
 * however the process ends.
 *
 *   exit()            an atexit handler finishes the archive (compacts it in place) and
 *                     records that the process exited while recording.
 *   SIGTERM, SIGINT,  the handler stops recording and records the signal and the end time
 *   SIGSEGV, SIGBUS,  in the mapped header, with stores only (async-signal-safe: no lock, no
 *   SIGABRT, SIGPIPE  allocation), then restores the previous disposition and re-raises, so
 *                     the process ends exactly as it would have. The file stays a valid
 *                     Arena-layout archive; the kernel writes the shared mapping back.
 *   SIGKILL           nothing runs, and nothing needs to: the header's counters are kept
 *                     current in place and every published record is already in the file.
 *
 * A signal whose previous disposition was SIG_IGN is left alone. An anonymous arena vanishes
 * with the process: its exit handler only says that it was never finished.
 *
 * Below the lifecycle (nt_provider.c installs these for each session it initializes), above
 * the session (the handlers end it: nt_session.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nt_internal.h"

static const int fatal_signals[] = { SIGTERM, SIGINT, SIGSEGV, SIGBUS, SIGABRT, SIGPIPE };

/* Atomic stores: a trace manager's provider thread may start a session (and call
 * on_durable_cleared) while a layer sets its hooks on another thread. */
void nt_core_set_hooks(const nt_core_hooks *hooks)
{
	nt_core_hooks h = hooks ? *hooks : (nt_core_hooks){ 0 };
	__atomic_store_n(&nt_hooks.on_fatal_signal, h.on_fatal_signal, __ATOMIC_RELEASE);
	__atomic_store_n(&nt_hooks.on_durable_cleared, h.on_durable_cleared, __ATOMIC_RELEASE);
	__atomic_store_n(&nt_hooks.fork_child_path, h.fork_child_path, __ATOMIC_RELEASE);
	__atomic_store_n(&nt_hooks.on_fork_child_started, h.on_fork_child_started,
			 __ATOMIC_RELEASE);
}
#define NSIG_HANDLED (sizeof(fatal_signals) / sizeof(fatal_signals[0]))
static struct sigaction previous[NSIG_HANDLED];
static int installed;

static void on_fatal_signal(int sig)
{
	int saved_errno = errno;
	if (nt_hooks.on_fatal_signal != NULL)
		nt_hooks.on_fatal_signal(sig);
	nt_session_record_end(NT_END_SIGNAL, sig);
	nt_private_arena_remove(1); /* NANOTRACE_EVENT's private arena leaves nothing */
	for (size_t i = 0; i < NSIG_HANDLED; i++)
		if (fatal_signals[i] == sig)
			sigaction(sig, &previous[i], NULL);
	raise(sig); /* delivered when this handler returns: the original disposition runs */
	errno = saved_errno;
}

static void on_exit_finish(void)
{
	/* A manager's buffer is the manager's to finish (the registry's exit handler stops it).
	 * A failure (a full disk) is said on stderr, once: the program's exit status is its own.
	 * The file is still a readable archive that records why saving stopped: the arena as
	 * recorded, or (streaming) the stream saved before; nt_last_error() says which.
	 * NANOTRACE_EVENT's private arena is removed, never finished: its follower (the Trace2
	 * layer's forwarder) took its last lines before this handler runs. */
	if (nt_S.private_owner != 0) {
		if (nt_S.private_owner == (int)getpid() && nt_S.started == SESSION_RECORDING)
			nt_session_record_end(NT_END_EXIT, 0);
		nt_private_arena_remove(1);
		return;
	}
	if (!nt_is_recording() || !nt_S.file_backed || nt_S.manager_buffer ||
	    nt_S.started != SESSION_RECORDING)
		return; /* nt_is_recording() is also true of a fork() child's pending session */
	char path[512];
	snprintf(path, sizeof(path), "%s", nt_S.path ? nt_S.path : "(the arena file)");
	if (nt_session_finish(NULL, NT_END_EXIT) != NT_OK)
		nt_env_warn("could not finish '%s' at exit (%s)", path, nt_last_error());
}

static void crash_handlers_install(void)
{
	if (installed)
		return;
	installed = 1;
	atexit(on_exit_finish);
	for (size_t i = 0; i < NSIG_HANDLED; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_fatal_signal;
		sigemptyset(&sa.sa_mask);
		if (sigaction(fatal_signals[i], NULL, &previous[i]) != 0 ||
		    previous[i].sa_handler == SIG_IGN)
			continue;
		sigaction(fatal_signals[i], &sa, NULL);
	}
}

/* An anonymous arena vanishes with the process: a program that forgot nt_finish() would
 * otherwise lose its trace without a word. A file-backed arena needs no warning: its own
 * exit handler (on_exit_finish) finishes it. A fork() child has no session (IDLE), so it is
 * silent. */
static void warn_unfinished_at_exit(void)
{
	if (nt_S.file_backed ||
	    (nt_S.started != SESSION_READY && nt_S.started != SESSION_RECORDING))
		return;
	time_t t = (time_t)(nt_S.start_pair.realtime_ns / 1000000000);
	struct tm tm;
	char when[32] = "?";
	if (gmtime_r(&t, &tm) != NULL)
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(stderr, "nanotrace: session started at %s was never finished: %llu events not "
		"written; call nt_finish()\n", when, (unsigned long long)nt_arena_event_count());
}

static void install_exit_warning(void)
{
	atexit(warn_unfinished_at_exit);
}

void nt_exit_handlers_install(int handle_signals)
{
	/* A manager's buffer outlives the process like a file: a fatal signal is recorded in
	 * its header (and by layers: Trace2's "signal" event) as in a file-backed arena; its
	 * exit is the registry's exit handler's to handle, and nothing is lost to warn about. */
	if (nt_S.file_backed && handle_signals)
		crash_handlers_install();
	static pthread_once_t exit_warning_once = PTHREAD_ONCE_INIT;
	if (!nt_S.file_backed)
		pthread_once(&exit_warning_once, install_exit_warning);
}
