/* nt_registry_wire.c - wire I/O of the provider (nt_registry_wire.h), in the registry's
 * words over runtime/nt_sock.h: what a message that is not one is called, and a second of
 * patience for a manager whose accept queue is full. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/nt_sock.h"
#include "nt_registry_wire.h"

/* A manager whose accept queue is full (busy, or stuck) is tried again for up to this long
 * instead of blocking the program. */
#define CONNECT_PATIENCE_MS 1000

int nt_wire_connect(const char *path, char *why, size_t whylen)
{
	/* The directory rule first (SECURITY.md): a socket in a directory another user owns or
	 * may write is one that user may have put there. No directory is "no manager there". */
	int rc = nt_sock_dir_private(path, why, whylen);
	if (rc == -ENOENT)
		snprintf(why, whylen, "%s", strerror(ENOENT));
	if (rc != 0)
		return rc;
	rc = nt_sock_connect(path, CONNECT_PATIENCE_MS);
	if (rc < 0)
		snprintf(why, whylen, "%s", strerror(-rc));
	return rc;
}

int nt_wire_peer_uid_ok(int fd, uid_t *peer)
{
	return nt_sock_peer_trusted(fd, peer);
}

int nt_wire_send(int fd, const nt_wire_msg *m)
{
	return -nt_sock_send(fd, m, sizeof(*m), NULL, 0, 0);
}

int nt_wire_recv(int fd, nt_wire_msg *m, int fds[NT_WIRE_MAX_FDS], int *nfds, const char **why)
{
	*why = NULL;
	ssize_t n = nt_sock_recv(fd, m, sizeof(*m), fds, NT_WIRE_MAX_FDS, nfds, 0);
	if (n == 0)
		return 0;
	if (n == -ETOOMANYREFS)
		*why = "a message with too many descriptors";
	else if (n < 0)
		*why = strerror((int)-n);
	else if ((size_t)n > sizeof(*m))
		*why = "a message longer than a WireMessage";
	else
		*why = nt_wire_check(m, (size_t)n);
	if (*why == NULL)
		return 1;
	for (int i = 0; i < *nfds; i++)
		close(fds[i]);
	*nfds = 0;
	return -1;
}

int nt_fifo_send(int fd, uint16_t request, uint32_t data32, uint64_t data64)
{
	/* Never waits: a manager that lets its FIFO fill up is one that does not listen, and
	 * the program (its exit included) must not hang on it. */
	return -nt_sock_fifo_send(fd, request, data32, data64, 1);
}
