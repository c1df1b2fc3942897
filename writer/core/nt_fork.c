/* nt_fork.c - a fork() child's own archive, started at the child's first event.
 *
 * The child of a process that was recording inherits no session (nt_lifecycle.c's atfork
 * handlers let the parent's go before fork() returns) but a pending one: the parent's
 * configuration with a path derived from the parent's archive. Nothing is done until the
 * child's first event reaches the cold path (tag NT_TAG_FORKED, which no call site's state
 * matches: nt_callsite_resolve), so fork()+exec()
 * and fork()+_exit() without events cost no file and no work. The start runs once, under a
 * lock the child's atfork handler made anew (fork-safe: no thread of the parent holds it).
 * A child that cannot start its archive says so on stderr and counts every event it did not
 * record, and says how many at exit.
 *
 * Low in writer/core: the cold path (nt_intern.c) and the lifecycle above call it; it starts
 * the child's session through nt_fork_child_start, which nt_lifecycle.c defines as
 * nt_start, without calling up by name. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_core.h"
#include "nt_internal.h"
#include "runtime/nt_fork_path.h"

enum { FORK_NONE, FORK_PENDING, FORK_STARTING, FORK_STARTED, FORK_FAILED };

static nt_config parent_cfg;      /* the last nt_start()'s config; strings are ours */
static char *parent_categories;
static char *parent_process_name;
static char child_path[4096];     /* the pending child's archive, or "" (anonymous arena) */
static int state;                 /* FORK_*; written under start_lock once pending */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t unrecorded;       /* events of a child whose archive could not start */
static char failure[640];         /* why, for the exit line */
static int path_too_long;         /* the path beside the parent's does not fit */

static char *dup_or_null(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

nt_result nt_fork_remember_config(const nt_config *cfg)
{
	char *cats = dup_or_null(cfg->categories), *name = dup_or_null(cfg->process_name);
	if ((cfg->categories != NULL && cats == NULL) ||
	    (cfg->process_name != NULL && name == NULL)) {
		free(cats);
		free(name);
		nt_set_error("nt_start: out of memory copying the config for fork() children");
		return NT_ERR_NO_MEMORY;
	}
	free(parent_categories);
	free(parent_process_name);
	parent_cfg = *cfg;
	parent_cfg.path = NULL;
	parent_cfg.categories = parent_categories = cats;
	parent_cfg.process_name = parent_process_name = name;
	return NT_OK;
}

int nt_fork_child_path(char *out, size_t cap, const char *base, int pid)
{
	char text[16];
	snprintf(text, sizeof(text), "%d", pid);
	return nt_fork_child_name(out, cap, base, text);
}

void nt_fork_parent_counted(void)
{
	if (nt_S.started == SESSION_RECORDING && !nt_S.manager_buffer && nt_S.map != NULL)
		nt_add_64(nt_header_u64(NT_HDR_CHILDREN_FORKED), 1);
}

/* In the child's only thread, before fork() returns there. `base` is the parent's archive
 * path (NULL: an anonymous arena). A pending child that forks again passes its pending path
 * on: the grandchild's file is derived from it. */
void nt_fork_child_prepare(int parent_pid, int parent_recording, const char *base)
{
	pthread_mutex_init(&start_lock, NULL);
	unrecorded = 0;
	if (!parent_recording && state != FORK_PENDING) {
		if (state != FORK_FAILED) /* a failed child's children count what they lose too */
			state = FORK_NONE;
		return;
	}
	char from[sizeof(child_path)];
	snprintf(from, sizeof(from), "%s", parent_recording ? (base ? base : "") : child_path);
	child_path[0] = '\0';
	path_too_long = from[0] != '\0' &&
			!nt_fork_child_path(child_path, sizeof(child_path), from, getpid());
	if (path_too_long) /* never the parent's path: the start fails and says so */
		snprintf(child_path, sizeof(child_path), "%.200s...", from);
	nt_S.forked_from = parent_pid;
	state = FORK_PENDING;
	nt_store_release_32(&nt_session_tag_, NT_TAG_FORKED);
}

/* An explicit nt_start() in a pending child replaces the lazy start. */
void nt_fork_child_cancel(void)
{
	if (state == FORK_PENDING) {
		state = FORK_NONE;
		nt_store_release_32(&nt_session_tag_, 0);
	}
}

static void say_unrecorded(void)
{
	if (state == FORK_FAILED)
		nt_env_warn("fork() child %d: %llu events not recorded (%s)", (int)getpid(),
			    (unsigned long long)__atomic_load_n(&unrecorded, __ATOMIC_RELAXED),
			    failure);
}

static void start_child_session(void)
{
	void (*name_hook)(char *, size_t) =
		__atomic_load_n(&nt_hooks.fork_child_path, __ATOMIC_ACQUIRE);
	if (name_hook != NULL)
		name_hook(child_path, sizeof(child_path));
	if (nt_S.private_owner != 0 && nt_S.private_owner != (int)getpid() && !path_too_long) {
		/* The parent's arena was private (NANOTRACE_EVENT alone): the child's is private
		 * too, in a directory of its own that it removes at its exit. */
		const char *slash = strrchr(child_path, '/');
		char name[sizeof(child_path)];
		memcpy(name, slash ? slash + 1 : child_path, strlen(slash ? slash + 1 : child_path) + 1);
		path_too_long = nt_private_arena_path(child_path, sizeof(child_path), name) != 0;
	}
	nt_config cfg = parent_cfg;
	cfg.struct_size = sizeof(cfg);
	cfg.path = child_path[0] != '\0' ? child_path : NULL;
	state = FORK_STARTING;
	nt_result rc = NT_ERR_INVALID_ARGUMENT;
	if (path_too_long)
		nt_set_error("the path beside the parent's archive is longer than %zu bytes",
			     sizeof(child_path) - 1);
	else
		rc = nt_fork_child_start(&cfg);
	if (rc == NT_OK) {
		state = FORK_STARTED;
		void (*started)(void) =
			__atomic_load_n(&nt_hooks.on_fork_child_started, __ATOMIC_ACQUIRE);
		if (started != NULL)
			started();
		return;
	}
	state = FORK_FAILED;
	snprintf(failure, sizeof(failure), "its archive '%s' could not be started: %s",
		 cfg.path ? cfg.path : "(anonymous)", nt_last_error());
	nt_env_warn("fork() child %d of %d: %s; its events are counted, not recorded",
		    (int)getpid(), nt_S.forked_from, failure);
	atexit(say_unrecorded);
}

int nt_fork_child_first_event(void)
{
	pthread_mutex_lock(&start_lock);
	if (state == FORK_PENDING)
		start_child_session();
	int s = state;
	pthread_mutex_unlock(&start_lock);
	if (s == FORK_FAILED) {
		__atomic_add_fetch(&unrecorded, 1, __ATOMIC_RELAXED);
		return -1;
	}
	return s == FORK_STARTED ? 1 : 0;
}

const char *nt_fork_finish_path(const char *path, char *buf, size_t cap)
{
	if (path == NULL || state != FORK_STARTED || nt_S.forked_from == 0)
		return path;
	return nt_fork_child_path(buf, cap, path, getpid()) ? buf : path;
}
