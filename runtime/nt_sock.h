/*
 * nt_sock.h - the one socket/FIFO I/O unit of nanotrace: the provider (libnanotrace), the
 * trace manager (manager/core) and trace-record all speak to each other through it, so
 * connecting, the peer check and descriptor passing are written once. No state. Not
 * installed, and exported by no shared library (a static library linked into each).
 *
 * Error convention: every function returns a value >= 0 on success and -errno on failure
 * (-EIO for a message sent short); none needs errno read afterwards. The two answers that
 * are not errors are named where they occur: nt_sock_recv's message longer than the buffer
 * and nt_sock_peer_trusted's yes/no.
 *
 * Every socket of the manager's protocol is AF_UNIX SOCK_SEQPACKET (one message = one
 * nt_wire_msg or one nt_fifo_packet); Git's af_unix Trace2 targets are SOCK_STREAM or
 * SOCK_DGRAM (nt_sock_target_parse, nt_sock_connect_target). Nothing here raises SIGPIPE,
 * and EINTR is always tried again.
 */
#ifndef NT_SOCK_H
#define NT_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/nt_fifo.h"

/* Connects a close-on-exec SEQPACKET socket to `path` without ever blocking: a Unix socket
 * connects at once or answers EAGAIN while the listener's accept queue is full (a busy or
 * stuck manager), which is tried again every 10 ms until timeout_ms have passed. Returns a
 * blocking fd, or -errno (-ENAMETOOLONG for an empty path or one longer than sun_path). */
int nt_sock_connect(const char *path, int timeout_ms);

/* Git's af_unix Trace2 target (git/git Documentation/technical/api-trace2.adoc):
 * "af_unix:[stream:|dgram:]<absolute-pathname>". Sets *type to SOCK_STREAM, SOCK_DGRAM, or 0
 * when none is given (then stream is tried first, then dgram, as git does) and *path to the
 * pathname inside `value`. Returns 0, or -EINVAL with why (a short phrase) for a value that is
 * not af_unix:, names another type, or whose path is not absolute, and -ENAMETOOLONG for a
 * path longer than sun_path. Cost: a few compares; no system call. */
int nt_sock_target_parse(const char *value, int *type, const char **path, const char **why);

/* Connects a close-on-exec socket of `type` (SOCK_STREAM or SOCK_DGRAM; 0: stream, then
 * dgram when the listener is not a stream socket) to the listener at `path`, blocking, with
 * SO_SNDTIMEO of send_timeout_ms so that a send to a listener that stopped reading fails
 * with -EAGAIN after that long instead of hanging. Sets *used to the type connected. Returns
 * the fd, or -errno of the last try (-ENOENT: no such socket, -ECONNREFUSED: nobody listens).
 * Cost: one or two socket() and connect() calls. */
int nt_sock_connect_target(const char *path, int type, int send_timeout_ms, int *used);

/* The directory of a socket path: up to its last '/' ("/" for one in the root, "." for a
 * bare name). 0, or -ENAMETOOLONG when it does not fit dir[cap]. */
int nt_sock_dir_of(const char *socket_path, char *dir, size_t cap);

/* The rule for a socket's directory (SECURITY.md), the one protection a socket path has
 * against other users (connect() needs write permission on the socket file, and the
 * directory decides who may replace it): a real directory, not a link, owned by this
 * process's euid, of mode 0700 (nt_sock_dir_of names it). Returns 0, or -errno with the
 * reason in why: -ELOOP a symbolic link, -ENOTDIR not a directory, -EPERM another owner,
 * -EACCES another mode, -ENAMETOOLONG, or lstat's error (-ENOENT: no such directory). */
int nt_sock_dir_private(const char *socket_path, char *why, size_t whylen);

/* SO_PEERCRED of a connected socket: its process and user (either pointer may be NULL).
 * Returns 0 or -errno. */
int nt_sock_peer(int fd, pid_t *pid, uid_t *uid);

/* A pidfd of a connected socket's peer process (close-on-exec): SO_PEERPIDFD, which names
 * the very process that connected (Linux 6.5), else pidfd_open(`pid`) of SO_PEERCRED's pid
 * (Linux 5.3; a pid reused since the peer died would name another process). Returns the
 * fd, or -errno (-ENOSYS: this kernel has no pidfds). Cost: one or two system calls. */
int nt_sock_peer_pidfd(int fd, pid_t pid);

/* Whether `uid` may be spoken to: this process's euid, or root (a socket another user
 * planted must not receive a registration, an output file or a buffer). */
int nt_sock_uid_trusted(uid_t uid);

/* nt_sock_peer + nt_sock_uid_trusted: 1 when the peer is trusted, 0 when it is not or its
 * credentials cannot be read; its uid in *peer (left alone when it cannot be read). */
int nt_sock_peer_trusted(int fd, uid_t *peer);

/* Sends one message of `len` bytes with `nfds` descriptors (SCM_RIGHTS, at most 4; 0 for
 * none). `nonblock`: MSG_DONTWAIT, a full socket is -EAGAIN. Returns 0 or -errno. */
int nt_sock_send(int fd, const void *buf, size_t len, const int *fds, int nfds, int nonblock);

/* maxfds for a message that should carry none: any that come with it are closed and the
 * message is kept, as recv() does. */
#define NT_SOCK_DROP_FDS (-1)

/* Receives one message into buf[len] with up to `maxfds` descriptors (at most 4), taken
 * close-on-exec into fds[], their count in *nfds: the caller owns them. Returns the
 * message's whole length: 0 at end of stream, more than `len` for a message that was cut
 * (nothing of it is kept: its descriptors are closed). -ETOOMANYREFS for a message that
 * carried more than `maxfds` descriptors, -EAGAIN when `nonblock` and nothing waits, other
 * -errno: on every error each descriptor received is closed and *nfds is 0. */
ssize_t nt_sock_recv(int fd, void *buf, size_t len, int *fds, int maxfds, int *nfds,
		     int nonblock);

/* One format/nt_fifo.h packet out (nt_sock_send without descriptors). */
int nt_sock_fifo_send(int fd, uint16_t request, uint32_t data32, uint64_t data64,
		      int nonblock);

/* One packet in (NT_SOCK_DROP_FDS: a FIFO carries no descriptors): its whole length
 * (sizeof(*pk) when whole, 0 at end of stream) or -errno, as nt_sock_recv. */
ssize_t nt_sock_fifo_recv(int fd, nt_fifo_packet *pk, int nonblock);

#endif /* NT_SOCK_H */
