/*
 * nt_registry_wire.h - the provider's side of the trace manager's sockets: connecting,
 * and one format/nt_wire.h message (with its SCM_RIGHTS descriptors) or one FIFO packet in
 * or out. No state: nt_registry.c owns the connection. Not installed.
 */
#ifndef NT_REGISTRY_WIRE_H
#define NT_REGISTRY_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/nt_wire.h"

#define NT_WIRE_MAX_FDS 2 /* INITIALIZE's memfd and FIFO */

/* Connects a SOCK_SEQPACKET socket (close-on-exec) to the manager at `path`, once its
 * directory passed the rule SECURITY.md states (runtime/nt_sock.h: nt_sock_dir_private).
 * Returns the fd, or -errno with the reason in why (-ENAMETOOLONG for a path longer than
 * sun_path). */
int nt_wire_connect(const char *path, char *why, size_t whylen);

/* SO_PEERCRED of the connected manager: nonzero when it runs as this process's euid or as
 * root (a socket another user planted must not receive the registration and hand out the
 * buffer); its uid in *peer (left alone when it cannot be read). */
int nt_wire_peer_uid_ok(int fd, uid_t *peer);

/* Sends `m` whole; returns 0 or an errno. Never raises SIGPIPE. */
int nt_wire_send(int fd, const nt_wire_msg *m);

/* Receives one message into *m with the descriptors attached to it (close-on-exec, at most
 * NT_WIRE_MAX_FDS, in fds[], their count in *nfds: the caller owns them). Returns 1 for a
 * message that nt_wire_check() accepts, 0 at end of stream, -1 for an error or a malformed
 * message (*why says which; descriptors that came with it are closed). */
int nt_wire_recv(int fd, nt_wire_msg *m, int fds[NT_WIRE_MAX_FDS], int *nfds, const char **why);

/* One format/nt_fifo.h packet, without waiting (a full FIFO is EAGAIN); returns 0 or an
 * errno. */
int nt_fifo_send(int fd, uint16_t request, uint32_t data32, uint64_t data64);

#endif /* NT_REGISTRY_WIRE_H */
