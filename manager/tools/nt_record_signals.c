/* nt_record_signals.c - SIGCHLD, SIGINT and SIGTERM become bytes on a pipe, read by the
 * main loop's poll(): a handler does nothing else. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "nt_recorder.h"

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;
	ssize_t n = write(sig_pipe[1], &c, 1);
	(void)n;
	errno = saved;
}

int nt_record_signals_install(void)
{
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return 0;
}

int nt_record_signal_fd(void)
{
	return sig_pipe[0];
}
