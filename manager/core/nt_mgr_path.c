/*
 * nt_mgr_path.c - where the manager's socket lives, the rules for its directory, and
 * listening on it.
 *
 * The directory is the only protection a socket path has against other users (connect()
 * needs write permission on the socket file, and the directory decides who may replace it),
 * so it must be a real directory (not a link), owned by us, and closed to others (0700).
 * A socket file already there is either a live manager's (connect succeeds: refuse) or a
 * dead one's (ECONNREFUSED: unlink and take its place).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "nt_mgr_internal.h"
#include "runtime/nt_sock.h"

int nt_manager_socket_path(char *buf, size_t cap, char *why, size_t whylen)
{
	const char *env = getenv(NT_MANAGER_ENV);
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n, shared = 0;
	if (env != NULL && env[0] != '\0')
		n = snprintf(buf, cap, "%s", env);
	else if (xdg != NULL && xdg[0] == '/')
		n = snprintf(buf, cap, "%s/nanotrace/%s", xdg, NT_MANAGER_SOCKET_NAME);
	else {
		n = snprintf(buf, cap, "/tmp/nanotrace-%u/%s", (unsigned)getuid(),
			     NT_MANAGER_SOCKET_NAME);
		shared = NT_MANAGER_PATH_SHARED;
	}
	if (n < 0 || (size_t)n >= cap || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(why, whylen, "the manager's socket path is longer than %zu bytes",
			 sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		return -1;
	}
	return shared;
}

int nt_manager_check_dir(const char *socket_path, int create, char *why, size_t whylen)
{
	char dir[PATH_MAX];
	if (nt_sock_dir_of(socket_path, dir, sizeof(dir)) != 0) {
		snprintf(why, whylen, "socket path '%s' is too long", socket_path);
		return -1;
	}
	if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(why, whylen, "cannot create the socket directory '%s': %s", dir,
			 strerror(errno));
		return -1;
	}
	int err = nt_sock_dir_private(socket_path, why, whylen);
	errno = -err; /* kept for the caller: ENOENT is "no manager there" to a client */
	return err == 0 ? 0 : -1;
}

static void fill_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, strlen(path) + 1); /* length checked by the caller */
}

/* A socket file at `path`: is a manager answering there? A full accept queue (EAGAIN) is
 * a listener too, and is not waited for: a stuck manager must not hang its successor. */
static int someone_listens(const char *path)
{
	int fd = nt_sock_connect(path, 0);
	if (fd >= 0)
		close(fd);
	return fd >= 0 || fd == -EAGAIN;
}

int nt_manager_connect(const char *socket_path, int timeout_ms, char *why, size_t whylen)
{
	errno = 0; /* only check_dir's own ENOENT means "no manager there", never a stale one */
	if (nt_manager_check_dir(socket_path, 0, why, whylen) != 0)
		return errno == ENOENT ? -1 : -2;
	if (strlen(socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(why, whylen, "socket path '%s' is too long", socket_path);
		return -2;
	}
	int fd = nt_sock_connect(socket_path, timeout_ms);
	if (fd < 0) {
		snprintf(why, whylen, "no manager answers at '%s': %s", socket_path, strerror(-fd));
		return -1;
	}
	uid_t peer = (uid_t)-1;
	if (!nt_sock_peer_trusted(fd, &peer)) {
		close(fd);
		snprintf(why, whylen, "the manager at '%s' runs as uid %d, not uid %u (or root): "
			 "refused", socket_path, (int)peer, (unsigned)geteuid());
		return -2;
	}
	return fd;
}

static int bind_listen(int fd, const char *path)
{
	struct sockaddr_un sa;
	fill_addr(&sa, path);
	/* The directory is 0700, so the socket's own mode does not widen access; keep it
	 * private anyway. */
	mode_t old = umask(0177);
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc != 0)
		return -1;
	return listen(fd, 64);
}

int nt_mgr_listen(nt_manager *m, char *why, size_t whylen)
{
	const char *path = m->cfg.socket_path;
	if (strlen(path) >= sizeof(m->path)) {
		snprintf(why, whylen, "socket path '%s' is longer than %zu bytes", path,
			 sizeof(m->path) - 1);
		return -1;
	}
	if (nt_manager_check_dir(path, m->cfg.create_dir, why, whylen) != 0) {
		if (errno == ENOENT && !m->cfg.create_dir) {
			char dir[PATH_MAX];
			nt_sock_dir_of(path, dir, sizeof(dir));
			snprintf(why, whylen, "socket directory '%s' does not exist (only the default "
				 "socket's directory is created): make it, mode 0700", dir);
		}
		return -1;
	}
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(why, whylen, "socket: %s", strerror(errno));
		return -1;
	}
	int rc = bind_listen(fd, path);
	if (rc != 0 && errno == EADDRINUSE) {
		struct stat st;
		if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
			snprintf(why, whylen, "'%s' exists and is not a socket: refused", path);
			close(fd);
			return -1;
		}
		if (someone_listens(path)) {
			snprintf(why, whylen, "a manager already runs at '%s'", path);
			close(fd);
			return -1;
		}
		/* A dead manager's socket: take its place. */
		unlink(path);
		rc = bind_listen(fd, path);
	}
	if (rc != 0) {
		snprintf(why, whylen, "cannot listen on '%s': %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	memcpy(m->path, path, strlen(path) + 1);
	m->listen_fd = fd;
	return 0;
}
