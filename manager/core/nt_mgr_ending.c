/*
 * nt_mgr_ending.c - how a provider's process ended, when its connection closed without
 * STOPPED (exit() runs the writer's exit handler, which sends STOPPED: that is EXITED).
 *
 * The manager is seldom the provider's parent (a fork() child is its parent's to reap), so
 * it learns the end from the kernel as any process of the same user may:
 *   - at registration, a pidfd of the peer (runtime/nt_sock.h: SO_PEERPIDFD, else
 *     pidfd_open), its start time, its program (/proc/PID/exe) and where its image lies
 *     (/proc/PID/stat's startcode and startstack, which address randomization draws anew
 *     at each exec);
 *   - at the close: a process that still runs and is not exiting (PF_EXITING) ran exec
 *     (EXECED) if its program changed, or its image moved (an exec of itself); else it
 *     closed the connection itself, as far as can be seen (ENDED_UNKNOWN, saying so);
 *   - an exiting one is waited for on its pidfd (at most NT_MGR_ENDING_WAIT_MS: closing its
 *     files is among the last steps of an exit), then its wait status is read: a zombie's
 *     from /proc/PID/stat (field 52, exit_code; the start time proves the pid is still
 *     ours), a reaped one's from the pidfd (PIDFD_GET_INFO, PIDFD_INFO_EXIT: Linux 6.15).
 *     Exited with status N: EXITED_UNSTOPPED; a signal: KILLED, naming it.
 *   - anything else (no pidfd, reaped on an older kernel) is ENDED_UNKNOWN, saying why.
 * Calls nothing of manager/core; nt_mgr_provider.c calls it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nt_mgr_internal.h"
#include "runtime/nt_sock.h"
#include "runtime/nt_term_escape.h"

#define NT_MGR_ENDING_WAIT_MS 1000 /* an exiting process's last steps after closing files */
#define PF_EXITING_FLAG 0x4u       /* include/linux/sched.h: the process is in do_exit */

/* linux/pidfd.h of Linux 6.15 (C headers of older systems lack it): version 0 of the struct. */
struct nt_pidfd_info {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};
#define NT_PIDFD_GET_INFO _IOWR(0xFF, 11, struct nt_pidfd_info)
#define NT_PIDFD_INFO_EXIT (1ull << 3)

/* The fields of /proc/PID/stat the ending needs. */
typedef struct proc_stat {
	char state;             /* field 3 */
	unsigned flags;         /* field 9 */
	unsigned long long start; /* field 22, in clock ticks since boot */
	unsigned long long image_start; /* field 26, startcode: where its program was loaded */
	unsigned long long image_stack; /* field 28, startstack (both random per exec: ASLR) */
	int exit_code;          /* field 52: the wait status, once it exited (Linux 3.5) */
} proc_stat;

/* Reads /proc/PID/stat: 0, or -1 when it is gone or unreadable. */
static int read_stat(pid_t pid, proc_stat *st)
{
	char path[64], buf[2048];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* the name before it may hold anything */
	if (p == NULL)
		return -1;
	memset(st, 0, sizeof(*st));
	st->exit_code = -1;
	char *save = NULL;
	int field = 3;
	for (char *tok = strtok_r(p + 1, " \n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \n", &save), field++) {
		if (field == 3)
			st->state = tok[0];
		else if (field == 9)
			st->flags = (unsigned)strtoul(tok, NULL, 10);
		else if (field == 22)
			st->start = strtoull(tok, NULL, 10);
		else if (field == 26)
			st->image_start = strtoull(tok, NULL, 10);
		else if (field == 28)
			st->image_stack = strtoull(tok, NULL, 10);
		else if (field == 52)
			st->exit_code = (int)strtol(tok, NULL, 10);
	}
	return field > 28 ? 0 : -1;
}

/* The program a process runs: 0 with its file's identity, or -1 (gone, or a zombie). */
static int read_exe(pid_t pid, dev_t *dev, ino_t *ino)
{
	char path[64];
	struct stat sb;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &sb) != 0)
		return -1;
	*dev = sb.st_dev;
	*ino = sb.st_ino;
	return 0;
}

void nt_mgr_ending_watch(nt_mgr_provider *p, int conn_fd)
{
	proc_stat st;
	p->pidfd = nt_sock_peer_pidfd(conn_fd, p->pid);
	if (read_stat(p->pid, &st) == 0) {
		p->start_ticks = st.start;
		p->image_start = st.image_start;
		p->image_stack = st.image_stack;
	}
	p->has_exe = read_exe(p->pid, &p->exe_dev, &p->exe_ino) == 0;
}

void nt_mgr_ending_release(nt_mgr_provider *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
}

/* Whether the pidfd says the process exited, waiting up to timeout_ms. */
static int exited(const nt_mgr_provider *p, int timeout_ms)
{
	struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };
	int r;
	do
		r = poll(&pf, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	return r > 0;
}

/* The wait status of an exited process: 0, or -1 while none can be read yet. */
static int wait_status(const nt_mgr_provider *p, int *status)
{
	proc_stat st;
	if (read_stat(p->pid, &st) == 0 && st.start == p->start_ticks &&
	    (st.state == 'Z' || st.state == 'X') && st.exit_code >= 0) {
		*status = st.exit_code; /* a zombie still ours: its parent has not reaped it */
		return 0;
	}
	struct nt_pidfd_info info;
	memset(&info, 0, sizeof(info));
	info.mask = NT_PIDFD_INFO_EXIT;
	if (ioctl(p->pidfd, NT_PIDFD_GET_INFO, &info) == 0 && (info.mask & NT_PIDFD_INFO_EXIT) &&
	    !(read_stat(p->pid, &st) == 0 && st.start == p->start_ticks)) {
		*status = info.exit_code; /* reaped: the kernel kept its status (Linux 6.15) */
		return 0;
	}
	return -1;
}

/* An exited process's status. The pidfd said it exited, so it is a zombie or reaped; a few
 * tries cover the moments of its reaping, between the two sources. */
static int status_after_exit(const nt_mgr_provider *p, int *status)
{
	struct timespec pause = { 0, 1000000 };
	for (int i = 0; i < 20; i++) {
		if (wait_status(p, status) == 0)
			return 0;
		nanosleep(&pause, NULL);
	}
	return -1;
}

static int from_status(int status, char *msg, size_t cap)
{
	if (WIFSIGNALED(status)) {
		const char *abbrev = sigabbrev_np(WTERMSIG(status));
		snprintf(msg, cap, "by signal %d (SIG%s)%s", WTERMSIG(status),
			 abbrev ? abbrev : "?", WCOREDUMP(status) ? ", core dumped" : "");
		return NT_SECTION_KILLED;
	}
	snprintf(msg, cap, "exit status %d; no exit handler ran (_exit(), or the exit of a program "
		 "it exec'd), so nothing stopped its recording; every event it published is kept",
		 WEXITSTATUS(status));
	return NT_SECTION_EXITED_UNSTOPPED;
}

/* A process still running, not exiting, that closed its connection. */
static int still_running(const nt_mgr_provider *p, char *msg, size_t cap)
{
	dev_t dev = 0;
	ino_t ino = 0;
	char path[64], exe[512], shown[512];
	int have_exe = p->has_exe && read_exe(p->pid, &dev, &ino) == 0;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)p->pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	nt_term_escape(shown, sizeof(shown), exe, strlen(exe));
	if (have_exe && (dev != p->exe_dev || ino != p->exe_ino)) {
		snprintf(msg, cap, "it ran exec (now %s): the new program does not record into "
			 "this buffer; every event published before is kept", shown);
		return NT_SECTION_EXECED;
	}
	/* /proc/PID/exe readable: so are the addresses (the same access rule); one read as 0 is
	 * a new image still being loaded (the connection closes early in an exec). */
	proc_stat st;
	int have_image = have_exe && p->image_start != 0 && read_stat(p->pid, &st) == 0;
	if (have_image && (st.image_start != p->image_start || st.image_stack != p->image_stack)) {
		snprintf(msg, cap, "it ran exec (of the same program, %s): the new image does not "
			 "record into this buffer; every event published before is kept",
			 have_exe ? shown : "?");
		return NT_SECTION_EXECED;
	}
	if (!have_exe || !have_image) {
		snprintf(msg, cap, "its connection closed while it still runs; /proc/%d cannot be "
			 "read (a program of another user, or no /proc), so an exec cannot be told",
			 (int)p->pid);
		return NT_SECTION_ENDED_UNKNOWN;
	}
	snprintf(msg, cap, "its connection closed while it still runs, with no sign of an exec "
		 "(the same program at the same addresses): it closed the connection itself");
	return NT_SECTION_ENDED_UNKNOWN;
}

int nt_mgr_ending_of(const nt_mgr_provider *p, char *msg, size_t cap)
{
	if (p->pidfd < 0) {
		snprintf(msg, cap, "its connection closed while it recorded; the manager holds no "
			 "pidfd of it (%s), so how it ended is unknown", strerror(-p->pidfd));
		return NT_SECTION_ENDED_UNKNOWN;
	}
	proc_stat st;
	if (!exited(p, 0)) {
		int ours = read_stat(p->pid, &st) == 0 && st.start == p->start_ticks;
		if (ours && !(st.flags & PF_EXITING_FLAG) && st.state != 'Z' && st.state != 'X')
			return still_running(p, msg, cap);
		if (!ours && !exited(p, 0)) {
			snprintf(msg, cap, "its connection closed while it still runs; its /proc/%d/stat "
				 "cannot be read, so how is unknown", (int)p->pid);
			return NT_SECTION_ENDED_UNKNOWN;
		}
	}
	int status;
	if (!exited(p, NT_MGR_ENDING_WAIT_MS)) {
		snprintf(msg, cap, "its connection closed and it was still exiting after %d ms",
			 NT_MGR_ENDING_WAIT_MS);
		return NT_SECTION_ENDED_UNKNOWN;
	}
	if (status_after_exit(p, &status) != 0) {
		snprintf(msg, cap, "its connection closed and it exited, but its parent reaped it "
			 "before its status could be read (a kernel before Linux 6.15 keeps none)");
		return NT_SECTION_ENDED_UNKNOWN;
	}
	return from_status(status, msg, cap);
}
