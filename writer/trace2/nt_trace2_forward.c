/*
 * nt_trace2_forward.c - NANOTRACE_EVENT=af_unix:[stream:|dgram:]<absolute path>, Git's
 * GIT_TRACE2_EVENT socket target (git/git trace2/tr2_dst.c): the program's Trace2 messages
 * go to the socket as Git's EVENT lines, while its archive (NANOTRACE) records as ever; with
 * NANOTRACE_EVENT alone the session's arena is private (nt_env_start_private).
 *
 * The lines are not formatted here: the reader library's forwarder (reader/trace2/
 * nt_trace2_forward.c) follows the session's arena file in a thread of its own and sends
 * what `trace-dump --format event` renders, so the event path costs what it always costs.
 * libnanotrace does not link the reader: it dlopen()s it by its soname, first beside
 * libnanotrace itself (dladdr), and dlsym()s the two entries runtime/nt_trace2_forward.h
 * declares. Every problem is one warning; tracing and the exit status are untouched.
 *
 * fork(): a child that records starts its own forwarder for its own arena (the core's
 * on_fork_child_started hook); the parent's (a thread the child does not have) is
 * forgotten in the child, its socket closed there. An exec'd child reads NANOTRACE_EVENT
 * from its environment, as git's children do.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/nt_sock.h"
#include "runtime/nt_trace2_forward.h"
#include "nt_trace2_internal.h"

#define VAR "NANOTRACE_EVENT"
/* The last poll at exit may wait this long for the listener (Git waits on no socket). */
#define STOP_TIMEOUT_MS 1000

static char *target;           /* NANOTRACE_EVENT, when it is a target that can be used */
static nt_trace2_forward_start_fn *fw_start;
static nt_trace2_forward_stop_fn *fw_stop;
static nt_trace2_forwarder *fw; /* this process's forwarder, or NULL */
static nt_trace2_forwarder *inherited; /* a fork() child's copy of its parent's, kept */

static void *open_reader_library(void)
{
	/* Beside libnanotrace first: an installed pair, or a build tree's copy. */
	Dl_info info;
	if (dladdr((void *)open_reader_library, &info) != 0 && info.dli_fname != NULL) {
		const char *slash = strrchr(info.dli_fname, '/');
		char path[4096];
		if (slash != NULL &&
		    (size_t)snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - info.dli_fname),
				     info.dli_fname, NT_TRACE2_FORWARD_LIBRARY) < sizeof(path) &&
		    access(path, R_OK) == 0) {
			void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
			if (h != NULL)
				return h;
		}
	}
	return dlopen(NT_TRACE2_FORWARD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
}

int nt_t2_forward_wanted(void)
{
	const char *v = secure_getenv(VAR);
	if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0)
		return 0;
	int type;
	const char *path, *why;
	char shown[NT_ENV_SHOWN_MAX];
	if (nt_sock_target_parse(v, &type, &path, &why) != 0) {
		nt_env_warn("%s='%s': %s; expected af_unix:[stream:|dgram:]<absolute path>; "
			    "no Trace2 lines are sent", VAR, nt_env_shown(v, shown), why);
		return 0;
	}
	if (fw_start == NULL) {
		void *h = open_reader_library();
		if (h != NULL) {
			fw_start = (nt_trace2_forward_start_fn *)dlsym(h, NT_TRACE2_FORWARD_START_NAME);
			fw_stop = (nt_trace2_forward_stop_fn *)dlsym(h, NT_TRACE2_FORWARD_STOP_NAME);
		}
		if (fw_start == NULL || fw_stop == NULL) {
			const char *err = dlerror();
			fw_start = NULL;
			nt_env_warn("%s='%s': cannot load %s (%s); no Trace2 lines are sent", VAR,
				    nt_env_shown(v, shown), NT_TRACE2_FORWARD_LIBRARY,
				    err ? err : "its entries are missing");
			return 0;
		}
	}
	free(target);
	target = strdup(v);
	return target != NULL;
}

/* In a fork() child: the parent's forwarder is not this process's. */
static void forget_in_child(void)
{
	if (fw != NULL)
		fw_stop(fw, -1);
	inherited = fw; /* its memory is the parent's copy: never freed here */
	fw = NULL;
}

static void register_fork(void)
{
	pthread_atfork(NULL, NULL, forget_in_child);
}

int nt_t2_forward_begin(void)
{
	if (target == NULL)
		return 0;
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, register_fork);
	const char *arena = nt_core_arena_path();
	if (arena == NULL) {
		char shown[NT_ENV_SHOWN_MAX];
		nt_env_warn("%s='%s': this session has no arena file to follow (an anonymous "
			    "arena, or a trace manager's buffer); no Trace2 lines are sent", VAR,
			    nt_env_shown(target, shown));
		return 0;
	}
	fw = fw_start(arena, target, "nanotrace: " VAR, NT_TRACE2_FORWARD_INTERVAL_MS);
	/* Only the follower reads a private arena: nothing of it stays on disk. */
	nt_core_private_arena_unlink();
	return fw != NULL;
}

void nt_t2_forward_end(void)
{
	if (fw != NULL)
		fw_stop(fw, STOP_TIMEOUT_MS);
	fw = NULL;
}
