/*
 * nt_trace2_env.c - NANOTRACE=<path> turns recording on, as GIT_TRACE2=<path> does for Git
 * (git/git trace2/tr2_dst.c, tr2_sid.c): the core parses the variables and picks the file
 * (writer/core/nt_env.c); this layer names it after the SID passed to child processes.
 *
 * Tracing must never break the traced program: every problem is one line on stderr and
 * tracing stays off.
 */
#define _GNU_SOURCE
#include <sha1.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "nt_trace2_internal.h"

void nt_t2_make_sid(char *out, size_t cap)
{
	struct timeval tv;
	struct tm tm;
	char host[256], hex[16];
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	/* Git's host part: the first 8 hex digits of SHA-1 of the host name. */
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = '\0';
		SHA1_CTX ctx;
		uint8_t digest[SHA1_DIGEST_LENGTH];
		SHA1Init(&ctx);
		SHA1Update(&ctx, (const uint8_t *)host, strlen(host));
		SHA1Final(digest, &ctx);
		snprintf(hex, sizeof(hex), "H%02x%02x%02x%02x", digest[0], digest[1], digest[2],
			 digest[3]);
	} else {
		snprintf(hex, sizeof(hex), "%s", "Localhost"); /* Git: no H */
	}
	char own[96];
	snprintf(own, sizeof(own), "%04d%02d%02dT%02d%02d%02d.%06ldZ-%s-P%08x",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (long)tv.tv_usec, hex, (unsigned)getpid());
	const char *parent = secure_getenv("NANOTRACE_PARENT_SID");
	size_t room = cap - strlen(own) - 2; /* the parent's part, its '/' and the NUL */
	if (parent != NULL && strlen(parent) > room) {
		/* Cut, the chain would lose this process's own part (its file name): a fresh one. */
		char shown[NT_ENV_SHOWN_MAX];
		nt_env_warn("NANOTRACE_PARENT_SID='%s' is longer than %zu bytes; "
			    "this process starts a new SID", nt_env_shown(parent, shown), room);
		parent = NULL;
	}
	if (parent != NULL && parent[0] != '\0')
		snprintf(out, cap, "%s/%s", parent, own);
	else
		snprintf(out, cap, "%s", own);
}

int nt_t2_env_start(int *too_many_files)
{
	/* The core's parser (nt_start_from_env's), with Git's file names: the last SID
	 * component. NANOTRACE_EVENT alone records into a private arena that only its
	 * forwarder reads (nt_trace2_forward.c). */
	const char *last = strrchr(nt_T2.sid, '/');
	int forward = nt_t2_forward_wanted();
	nt_result rc = nt_env_start(last ? last + 1 : nt_T2.sid, too_many_files);
	if (rc == NT_DISABLED && forward)
		rc = nt_env_start_private(last ? last + 1 : nt_T2.sid);
	const char *msg = nt_last_error(), *who = "nt_start_from_env: ";
	if (strncmp(msg, who, strlen(who)) == 0)
		msg += strlen(who); /* a Trace2 program never called it: the variable says enough */
	if (rc < 0)
		nt_env_warn("%s; tracing is off", msg);
	return rc == NT_OK;
}

/* A fork() child's first event (the core's fork_child_path hook): the child gets a new SID,
 * "<parent SID>/<own>", as Git gives its child processes, passed on to its own children.
 * Where the parent's file is named by its SID (a directory target) the child's is named by
 * its own, in the same directory; otherwise it keeps the core's name beside the parent's. */
void nt_t2_fork_child_path(char *path, size_t cap)
{
	char parent[sizeof(nt_T2.sid)];
	snprintf(parent, sizeof(parent), "%s", nt_T2.sid);
	setenv("NANOTRACE_PARENT_SID", parent, 1);
	nt_t2_make_sid(nt_T2.sid, sizeof(nt_T2.sid));
	setenv("NANOTRACE_PARENT_SID", nt_T2.sid, 1);
	const char *plast = strrchr(parent, '/'), *own = strrchr(nt_T2.sid, '/');
	plast = plast ? plast + 1 : parent;
	own = own ? own + 1 : nt_T2.sid;
	char *base = strrchr(path, '/');
	size_t dir = base ? (size_t)(base - path) + 1 : 0, plen = strlen(plast);
	/* The core's name for a parent file "<dir>/<parent's last component>": "<that>.<pid>" */
	if (path[0] == '\0' || strncmp(path + dir, plast, plen) != 0 || path[dir + plen] != '.' ||
	    dir + strlen(own) + 1 > cap)
		return;
	snprintf(path + dir, cap - dir, "%s", own);
}
