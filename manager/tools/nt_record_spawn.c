/* nt_record_spawn.c - the command trace-record runs, and how it ended. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nt_recorder.h"

/* The command is run by a child whose exec failure comes back on a close-on-exec pipe
 * (end of file: exec succeeded), so a command that cannot be run is told from one that
 * ran and exited 127. */
int nt_record_spawn(recorder *r)
{
	int exec_pipe[2];
	if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
		say("pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		say("fork: %s", strerror(errno));
		close(exec_pipe[0]);
		close(exec_pipe[1]);
		return -1;
	}
	if (pid == 0) {
		close(exec_pipe[0]);
		signal(SIGPIPE, SIG_DFL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setenv(NT_MANAGER_ENV, r->socket_path, 1);
		execvp(r->o.command[0], r->o.command);
		int err = errno;
		ssize_t n = write(exec_pipe[1], &err, sizeof(err));
		(void)n;
		_exit(127);
	}
	close(exec_pipe[1]);
	r->child = pid;
	int err = 0;
	ssize_t n;
	do
		n = read(exec_pipe[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(exec_pipe[0]);
	if (n == (ssize_t)sizeof(err)) {
		r->exec_failed = err;
		say("cannot run '%s': %s; nothing is recorded", r->o.command[0], strerror(err));
	}
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
