/* nt_sock.c - the socket/FIFO I/O unit (nt_sock.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nt_sock.h"

#define MAX_FDS 4 /* the most any message of nt_wire.h carries, with room to spare */

/* `path` as a Unix socket address; -1 when empty or longer than sun_path holds. */
static int unix_address(const char *path, struct sockaddr_un *addr)
{
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof(addr->sun_path))
		return -1;
	memcpy(addr->sun_path, path, len);
	return 0;
}

int nt_sock_connect(const char *path, int timeout_ms)
{
	struct sockaddr_un addr;
	if (unix_address(path, &addr) != 0)
		return -ENAMETOOLONG;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int rc;
	for (int waited = 0;; waited += 10) {
		rc = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
		if (rc == 0 || (errno != EINTR && (errno != EAGAIN || waited >= timeout_ms)))
			break;
		if (errno == EAGAIN)
			nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	int flags = rc == 0 ? fcntl(fd, F_GETFL) : -1;
	if (rc != 0 || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

int nt_sock_target_parse(const char *value, int *type, const char **path, const char **why)
{
	static const char prefix[] = "af_unix:";
	*type = 0;
	*why = "";
	if (value == NULL || strncmp(value, prefix, sizeof(prefix) - 1) != 0) {
		*why = "not af_unix:[stream:|dgram:]<absolute path>";
		return -EINVAL;
	}
	const char *p = value + sizeof(prefix) - 1;
	if (strncmp(p, "stream:", 7) == 0)
		*type = SOCK_STREAM, p += 7;
	else if (strncmp(p, "dgram:", 6) == 0)
		*type = SOCK_DGRAM, p += 6;
	if (p[0] != '/') {
		/* "seqpacket:/p": a word and a colon before any '/' names a type */
		size_t word = strcspn(p, ":/");
		*why = p[word] == ':' ? "unknown socket type (stream or dgram)"
				      : "the socket path is not absolute";
		return -EINVAL;
	}
	if (strlen(p) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		*why = "the socket path is longer than a Unix socket address holds";
		return -ENAMETOOLONG;
	}
	*path = p;
	return 0;
}

static int connect_one(const struct sockaddr_un *addr, int type, int send_timeout_ms)
{
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct timeval tv = { send_timeout_ms / 1000, (send_timeout_ms % 1000) * 1000 };
	int rc;
	do
		rc = connect(fd, (const struct sockaddr *)addr, sizeof(*addr));
	while (rc != 0 && errno == EINTR);
	if (rc != 0 || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
		int err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

int nt_sock_connect_target(const char *path, int type, int send_timeout_ms, int *used)
{
	struct sockaddr_un addr;
	if (unix_address(path, &addr) != 0)
		return -ENAMETOOLONG;
	/* git's tr2_dst: no type given tries a stream socket, then a datagram one (a stream
	 * connect to a dgram listener fails with EPROTOTYPE). */
	int first = type != 0 ? type : SOCK_STREAM;
	int fd = connect_one(&addr, first, send_timeout_ms);
	*used = first;
	if (fd < 0 && type == 0) {
		int second = connect_one(&addr, SOCK_DGRAM, send_timeout_ms);
		if (second >= 0 || fd == -EPROTOTYPE) {
			fd = second;
			*used = SOCK_DGRAM;
		}
	}
	return fd;
}

int nt_sock_dir_of(const char *path, char *dir, size_t cap)
{
	const char *slash = strrchr(path, '/');
	if (slash == NULL)
		return snprintf(dir, cap, ".") < 0 ? -ENAMETOOLONG : 0;
	size_t n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = '\0';
	return 0;
}

int nt_sock_dir_private(const char *socket_path, char *why, size_t whylen)
{
	char dir[PATH_MAX];
	if (nt_sock_dir_of(socket_path, dir, sizeof(dir)) != 0) {
		snprintf(why, whylen, "socket path '%s' is too long", socket_path);
		return -ENAMETOOLONG;
	}
	struct stat st;
	if (lstat(dir, &st) != 0) {
		int err = errno;
		snprintf(why, whylen, "socket directory '%s': %s", dir, strerror(err));
		return -err;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(why, whylen, "socket directory '%s' is a symbolic link: refused", dir);
		return -ELOOP;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "socket directory '%s' is not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, whylen, "socket directory '%s' is owned by uid %u, not by uid %u: refused",
			 dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if ((st.st_mode & 0777) != 0700) {
		snprintf(why, whylen, "socket directory '%s' has mode %03o, not 0700: refused", dir,
			 (unsigned)(st.st_mode & 0777));
		return -EACCES;
	}
	return 0;
}

int nt_sock_peer(int fd, pid_t *pid, uid_t *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -errno;
	if (len != sizeof(cred))
		return -EPROTO;
	if (pid != NULL)
		*pid = cred.pid;
	if (uid != NULL)
		*uid = cred.uid;
	return 0;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; older C headers lack it */
#endif

int nt_sock_peer_pidfd(int fd, pid_t pid)
{
	int pidfd = -1;
	socklen_t len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) != 0 || len != sizeof(pidfd))
		pidfd = -1;
#ifdef SYS_pidfd_open
	if (pidfd < 0)
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
#endif
	if (pidfd < 0)
		return -errno;
	fcntl(pidfd, F_SETFD, FD_CLOEXEC); /* both calls make it so; never leaked to a child */
	return pidfd;
}

int nt_sock_uid_trusted(uid_t uid)
{
	return uid == geteuid() || uid == 0;
}

int nt_sock_peer_trusted(int fd, uid_t *peer)
{
	uid_t uid;
	if (nt_sock_peer(fd, NULL, &uid) != 0)
		return 0;
	*peer = uid;
	return nt_sock_uid_trusted(uid);
}

int nt_sock_send(int fd, const void *buf, size_t len, const int *fds, int nfds, int nonblock)
{
	if (nfds < 0 || nfds > MAX_FDS)
		return -EINVAL;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds > 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t n;
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL | (nonblock ? MSG_DONTWAIT : 0));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EIO;
}

/* Takes the descriptors of every SCM_RIGHTS header into fds[] (up to max; the rest are
 * closed at once); returns how many came in all. */
static int take_fds(struct msghdr *mh, int *fds, int max)
{
	int total = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (total < max)
				fds[total] = fd;
			else
				close(fd);
			total++;
		}
	}
	return total;
}

static void close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

ssize_t nt_sock_recv(int fd, void *buf, size_t len, int *fds, int maxfds, int *nfds,
		     int nonblock)
{
	*nfds = 0;
	int ignore_fds = maxfds == NT_SOCK_DROP_FDS;
	if (ignore_fds)
		maxfds = 0;
	if (maxfds < 0 || maxfds > MAX_FDS)
		return -EINVAL;
	/* Room for one more descriptor than allowed, so that too many is seen, not cut. */
	union {
		char buf[CMSG_SPACE(sizeof(int) * (MAX_FDS + 1))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)(maxfds + 1)) };
	int flags = MSG_CMSG_CLOEXEC | MSG_TRUNC | (nonblock ? MSG_DONTWAIT : 0);
	ssize_t n;
	do
		n = recvmsg(fd, &mh, flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	int got[MAX_FDS];
	int total = take_fds(&mh, got, maxfds);
	int kept = total < maxfds ? total : maxfds;
	if ((mh.msg_flags & MSG_TRUNC) || (size_t)n > len) {
		close_fds(got, kept);
		return n > (ssize_t)len ? n : (ssize_t)len + 1;
	}
	if (!ignore_fds && ((mh.msg_flags & MSG_CTRUNC) || total > maxfds)) {
		close_fds(got, kept);
		return -ETOOMANYREFS;
	}
	if (kept > 0)
		memcpy(fds, got, sizeof(int) * (size_t)kept);
	*nfds = kept;
	return n;
}

int nt_sock_fifo_send(int fd, uint16_t request, uint32_t data32, uint64_t data64, int nonblock)
{
	nt_fifo_packet pk = { request, 0, data32, data64 };
	return nt_sock_send(fd, &pk, sizeof(pk), NULL, 0, nonblock);
}

ssize_t nt_sock_fifo_recv(int fd, nt_fifo_packet *pk, int nonblock)
{
	int nfds;
	return nt_sock_recv(fd, pk, sizeof(*pk), NULL, NT_SOCK_DROP_FDS, &nfds, nonblock);
}
