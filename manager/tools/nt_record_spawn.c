/* nt_record_spawn.c - the command trace-record runs, and how it ended. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nt_record.h"

int nt_record_spawn(recorder *r)
{
	pid_t pid = fork();
	if (pid < 0) {
		say("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setenv(NT_MANAGER_ENV, r->socket_path, 1);
		execvp(r->o.command[0], r->o.command);
		fprintf(stderr, "trace-record: cannot run '%s': %s\n", r->o.command[0], strerror(errno));
		_exit(127);
	}
	r->child = pid;
	return 0;
}

void nt_record_reap(recorder *r, int block)
{
	int status;
	if (r->child <= 0 || r->child_done)
		return;
	pid_t p = waitpid(r->child, &status, block ? 0 : WNOHANG);
	if (p != r->child)
		return;
	r->child_done = 1;
	r->child_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (r->o.verbose)
		say("[+%.3f ms] '%s' ended with status %d", (double)(nt_record_now_ns() - r->t0_ns) / 1e6,
		    r->o.command[0], r->child_status);
}
