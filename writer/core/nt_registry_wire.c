/* nt_registry_wire.c - wire I/O of the provider (nt_registry_wire.h): connect, one message
 * with SCM_RIGHTS in or out, one FIFO packet out. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nt_fifo.h"
#include "nt_registry_wire.h"

int nt_wire_connect(const char *path)
{
	struct sockaddr_un addr;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	memcpy(addr.sun_path, path, len);
	/* Non-blocking while connecting: a manager whose accept queue is full (busy, or stuck)
	 * answers EAGAIN, tried again for up to a second, instead of blocking the program. */
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int rc;
	for (int tries = 0;; tries++) {
		rc = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
		if (rc == 0 || (errno != EINTR && (errno != EAGAIN || tries >= 100)))
			break;
		if (errno == EAGAIN) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	int flags = rc == 0 ? fcntl(fd, F_GETFL) : -1;
	if (rc != 0 || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

int nt_wire_peer_uid_ok(int fd, uid_t *peer)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof(cred))
		return 0;
	*peer = cred.uid;
	return cred.uid == geteuid() || cred.uid == 0;
}

int nt_wire_send(int fd, const nt_wire_msg *m)
{
	ssize_t n;
	do
		n = send(fd, m, sizeof(*m), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(*m))
		return 0;
	return n < 0 ? errno : EIO;
}

/* Takes the descriptors of every SCM_RIGHTS header; returns how many there were in all
 * (more than NT_WIRE_MAX_FDS: the extra ones are closed at once). */
static int take_fds(struct msghdr *mh, int fds[NT_WIRE_MAX_FDS])
{
	int total = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (total < NT_WIRE_MAX_FDS)
				fds[total] = fd;
			else
				close(fd);
			total++;
		}
	}
	return total;
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

int nt_wire_recv(int fd, nt_wire_msg *m, int fds[NT_WIRE_MAX_FDS], int *nfds, const char **why)
{
	/* Room for one more descriptor than allowed, so that too many is seen, not cut. */
	union {
		char buf[CMSG_SPACE(sizeof(int) * (NT_WIRE_MAX_FDS + 1))];
		struct cmsghdr align;
	} control;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf) };
	ssize_t n;
	*nfds = 0;
	*why = NULL;
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 0;
	if (n < 0) {
		*why = strerror(errno);
		return -1;
	}
	int total = take_fds(&mh, fds);
	int kept = total < NT_WIRE_MAX_FDS ? total : NT_WIRE_MAX_FDS;
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		*why = mh.msg_flags & MSG_TRUNC ? "a message longer than a WireMessage"
						  : "a message with too many descriptors";
	else if (total > NT_WIRE_MAX_FDS)
		*why = "a message with too many descriptors";
	else
		*why = nt_wire_check(m, (size_t)n);
	if (*why != NULL) {
		close_fds(fds, kept);
		return -1;
	}
	*nfds = kept;
	return 1;
}

int nt_fifo_send(int fd, uint16_t request, uint32_t data32, uint64_t data64)
{
	nt_fifo_packet pk = { request, 0, data32, data64 };
	ssize_t n;
	/* Never waits: a manager that lets its FIFO fill up is one that does not listen, and
	 * the program (its exit included) must not hang on it. */
	do
		n = send(fd, &pk, sizeof(pk), MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(pk))
		return 0;
	return n < 0 ? errno : EIO;
}
