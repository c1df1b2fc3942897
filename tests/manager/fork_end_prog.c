/*
 * fork_end_prog.c - a recording process whose fork() child ends in a chosen way, for the
 * trace manager's tests of how a provider's end is reported (test_provider_endings.py).
 *
 *   fork_end_prog HOW EVENTS [reap-now]    HOW: exit, _exit, exec, exec-self or kill
 *   fork_end_prog hold                     what exec-self runs: read stdin to its end
 *
 * Started with NANOTRACE_MANAGER set (trace-record, or a daemon's trace), it registers
 * before main(). It waits (up to 10 s) until the manager records it, then fork()s. The child,
 * a provider of its own, waits the same way, makes EVENTS instant events, prints
 *
 *   child pid=PID made=EVENTS how=HOW
 *
 * (flushed) and ends by HOW: exit(0) (its exit handlers run), _exit(3) (none run), execv of
 * /bin/cat (the new program, which records nothing, copies stdin to /dev/null until its end),
 * execv of itself as `fork_end_prog hold` (it registers anew, a provider of its own that
 * records nothing and exits at stdin's end), or SIGKILL sent to itself. The parent then reads its stdin to its end before it reaps the
 * child, so the child stays a zombie (or, for exec, a running cat) until the test lets it
 * go: the test closes stdin once the manager has written the child's section, and no
 * outcome depends on how fast the manager looked. With reap-now the parent reaps the child
 * at once instead (as most parents do: the manager then learns its status only from a
 * kernel that keeps it for a pidfd), then reads stdin to its end. The parent prints
 *
 *   parent pid=PID child=PID status=WAIT_STATUS
 *
 * and exits 0 (2 on a usage or system error, 3 when recording never started).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>

static void wait_for_recording(void)
{
	struct timespec ms = { 0, 1000000 };
	for (int i = 0; i < 10000 && !nt_is_recording(); i++)
		nanosleep(&ms, NULL);
	if (!nt_is_recording()) {
		fprintf(stderr, "fork_end_prog %d: recording never started\n", (int)getpid());
		exit(3);
	}
}

static void child(const char *how, long events)
{
	wait_for_recording();
	for (long i = 0; i < events; i++)
		NT_INSTANT("test", "child_event", NT_I64("i", i));
	printf("child pid=%d made=%ld how=%s\n", (int)getpid(), events, how);
	fflush(stdout);
	if (strcmp(how, "exit") == 0)
		exit(0);
	if (strcmp(how, "_exit") == 0)
		_exit(3);
	if (strcmp(how, "exec") == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
			_exit(2);
		char *argv[] = { "cat", NULL };
		execv("/bin/cat", argv);
		_exit(2);
	}
	if (strcmp(how, "exec-self") == 0) {
		char *argv[] = { "fork_end_prog", "hold", NULL };
		execv("/proc/self/exe", argv);
		_exit(2);
	}
	raise(SIGKILL);
	_exit(2);
}

static int hold(void)
{
	char buf[256];
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0 || errno == EINTR)
		errno = 0;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "hold") == 0)
		return hold();
	const char *how = argc == 3 || argc == 4 ? argv[1] : "";
	int reap_now = argc == 4 && strcmp(argv[3], "reap-now") == 0;
	if ((strcmp(how, "exit") != 0 && strcmp(how, "_exit") != 0 && strcmp(how, "exec") != 0 &&
	     strcmp(how, "exec-self") != 0 && strcmp(how, "kill") != 0) || (argc == 4 && !reap_now)) {
		fprintf(stderr, "usage: fork_end_prog exit|_exit|exec|exec-self|kill EVENTS "
			"[reap-now]\n");
		return 2;
	}
	long events = atol(argv[2]);
	wait_for_recording();
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork_end_prog: fork");
		return 2;
	}
	if (pid == 0)
		child(how, events);
	int status;
	if (reap_now && waitpid(pid, &status, 0) != pid) {
		perror("fork_end_prog: waitpid");
		return 2;
	}
	hold();
	if (!reap_now && waitpid(pid, &status, 0) != pid) {
		perror("fork_end_prog: waitpid");
		return 2;
	}
	printf("parent pid=%d child=%d status=%d\n", (int)getpid(), (int)pid, status);
	return 0;
}
