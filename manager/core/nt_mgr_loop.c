/*
 * nt_mgr_loop.c - the manager's poll() loop: accepting (SO_PEERCRED: same uid or root),
 * reading every connection's messages (checked with nt_wire_check before anything else),
 * the first message deciding whether a connection is a provider or a controller, timers,
 * and closing connections at the end of a turn (so pointers stay valid within one).
 *
 * Fairness: at most NT_MGR_MSGS_PER_TURN messages are read from one connection per turn, and
 * every socket is non-blocking, so a flooding or stalled peer cannot starve the others. No
 * process holds more than NT_MGR_MAX_PER_PID connections, and providers never take the last
 * NT_MGR_CTL_RESERVE, so no one process and no crowd of providers locks controllers out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "nt_mgr_internal.h"
#include "runtime/nt_sock.h"

static void accept_one(nt_manager *m, int fd)
{
	struct {
		pid_t pid;
		uid_t uid;
	} cred;
	int err = nt_sock_peer(fd, &cred.pid, &cred.uid);
	if (err != 0) {
		nt_mgr_log(m, "refused a connection: SO_PEERCRED: %s", strerror(-err));
		close(fd);
		return;
	}
	if (!nt_sock_uid_trusted(cred.uid)) {
		nt_mgr_log(m, "refused connection from pid %d uid %u: not uid %u", (int)cred.pid,
			   (unsigned)cred.uid, (unsigned)geteuid());
		close(fd);
		return;
	}
	if (m->nconns == NT_MGR_MAX_CONNS) {
		nt_mgr_log(m, "refused connection from pid %d: %d connections already", (int)cred.pid,
			   NT_MGR_MAX_CONNS);
		close(fd);
		return;
	}
	int same = 0;
	for (int i = 0; i < m->nconns; i++)
		same += m->conns[i].pid == cred.pid && !m->conns[i].closing;
	if (same >= NT_MGR_MAX_PER_PID) {
		nt_mgr_log(m, "refused connection from pid %d: it has %d already", (int)cred.pid,
			   NT_MGR_MAX_PER_PID);
		close(fd);
		return;
	}
	nt_mgr_conn *c = &m->conns[m->nconns++];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->kind = NT_CONN_NEW;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->since_ms = nt_mgr_now_ms();
}

static void accept_all(nt_manager *m)
{
	for (int i = 0; i < 16; i++) {
		int fd = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				return;
			/* Out of descriptors: the listening socket stays readable, so wait a little
			 * instead of spinning on it. */
			nt_mgr_log(m, "accept: %s (new connections wait %d ms)", strerror(errno),
				   NT_MGR_ACCEPT_PAUSE_MS);
			m->accept_paused_until_ms = nt_mgr_now_ms() + NT_MGR_ACCEPT_PAUSE_MS;
			return;
		}
		accept_one(m, fd);
	}
}

static void close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* Room for one more provider: they may hold every connection but the last
 * NT_MGR_CTL_RESERVE, so that a controller (trace-record --list, a stop) always gets in. */
static int provider_slot(const nt_manager *m)
{
	int providers = 0;
	for (int i = 0; i < m->nconns; i++)
		providers += m->conns[i].kind == NT_CONN_PROVIDER && !m->conns[i].closing;
	return providers < NT_MGR_MAX_CONNS - NT_MGR_CTL_RESERVE;
}

static void dispatch(nt_manager *m, nt_mgr_conn *c, const nt_wire_msg *msg, int fd)
{
	if (c->kind == NT_CONN_NEW && msg->type == NT_WIRE_REGISTER && !provider_slot(m)) {
		nt_mgr_log(m, "refused REGISTER from pid %d: %d providers already (the last %d "
			   "connections are kept for controllers)", (int)c->pid,
			   NT_MGR_MAX_CONNS - NT_MGR_CTL_RESERVE, NT_MGR_CTL_RESERVE);
		if (fd >= 0)
			close(fd);
		nt_mgr_conn_close(m, c);
		return;
	}
	if (c->kind == NT_CONN_NEW)
		c->kind = msg->type == NT_WIRE_REGISTER ? NT_CONN_PROVIDER
			: msg->type >= NT_WIRE_CTL_LIST && msg->type <= NT_WIRE_CTL_STOP
				? NT_CONN_CONTROLLER
				: NT_CONN_NEW;
	if (c->kind == NT_CONN_CONTROLLER) {
		nt_mgr_control_message(m, c, msg, fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	if (c->kind == NT_CONN_PROVIDER) {
		nt_mgr_provider_message(m, c, msg);
		return;
	}
	nt_mgr_log(m, "closed connection from pid %d: it began with %s, neither REGISTER nor a "
		   "controller's request", (int)c->pid, nt_wire_type_name(msg->type));
	nt_mgr_conn_close(m, c);
}

static void bad_message(nt_manager *m, nt_mgr_conn *c, const char *what)
{
	if (c->kind == NT_CONN_PROVIDER) {
		nt_mgr_provider_damaged(m, c, what);
		return;
	}
	nt_mgr_log(m, "closed connection from pid %d: %s", (int)c->pid, what);
	if (c->kind == NT_CONN_CONTROLLER)
		nt_mgr_control_gone(m, c);
	nt_mgr_conn_close(m, c);
}

static void read_conn(nt_manager *m, nt_mgr_conn *c)
{
	/* A controller owing answers is not read: its requests wait in its socket until it
	 * takes what it was sent (back-pressure, so what it is owed stays bounded). */
	for (int i = 0; i < NT_MGR_MSGS_PER_TURN && !c->closing && !nt_mgr_control_busy(c); i++) {
		nt_wire_msg msg;
		int fds[4], nfds;
		ssize_t n = nt_sock_recv(c->fd, &msg, sizeof(msg), fds, 4, &nfds, 1);
		if (n == -EAGAIN)
			return;
		/* More than four descriptors or more bytes than a WireMessage: refused as of the wrong
		 * size. */
		int truncated = n == -ETOOMANYREFS || n > (ssize_t)sizeof(msg);
		if (n <= 0 && !truncated) {
			if (c->kind == NT_CONN_PROVIDER)
				nt_mgr_provider_gone(m, c);
			else if (c->kind == NT_CONN_CONTROLLER)
				nt_mgr_control_gone(m, c);
			nt_mgr_conn_close(m, c);
			return;
		}
		const char *bad = truncated ? "message of the wrong size" : nt_wire_check(&msg, (size_t)n);
		if (bad != NULL || (nfds > 0 && msg.type != NT_WIRE_CTL_START) || nfds > 1) {
			close_fds(fds, nfds);
			char what[160];
			snprintf(what, sizeof(what), "sent a %s", bad ? bad : "message with descriptors attached");
			bad_message(m, c, what);
			return;
		}
		dispatch(m, c, &msg, nfds == 1 ? fds[0] : -1);
	}
}

static void compact(nt_manager *m)
{
	int j = 0;
	for (int i = 0; i < m->nconns; i++) {
		nt_mgr_conn *c = &m->conns[i];
		if (!c->closing) {
			m->conns[j++] = *c;
			continue;
		}
		if (c->prov != NULL) {
			nt_mgr_buffer_release(c->prov);
			nt_mgr_ending_release(c->prov);
			free(c->prov);
		}
		nt_mgr_control_free(c);
		close(c->fd);
	}
	m->nconns = j;
}

static void timers(nt_manager *m)
{
	int64_t now = nt_mgr_now_ms();
	for (int i = 0; i < m->nconns; i++) {
		nt_mgr_conn *c = &m->conns[i];
		if (c->closing)
			continue;
		if (c->kind == NT_CONN_NEW && now - c->since_ms > NT_MGR_HELLO_TIMEOUT_MS) {
			nt_mgr_log(m, "closed connection from pid %d: it said nothing for %d ms",
				   (int)c->pid, NT_MGR_HELLO_TIMEOUT_MS);
			nt_mgr_conn_close(m, c);
		} else if (c->kind == NT_CONN_PROVIDER) {
			nt_mgr_provider_timers(m, c, now);
		}
	}
	nt_mgr_trace_tick(m, now);
}

/* Runs one turn: poll, read, timers. Returns 1 to go on, 0 when asked to stop, -1. */
static int turn(nt_manager *m)
{
	struct pollfd pfd[2 + 2 * NT_MGR_MAX_CONNS];
	int who[2 + 2 * NT_MGR_MAX_CONNS]; /* conn index * 2 + (1 = its FIFO) */
	int n = 0;
	pfd[n++] = (struct pollfd){ .fd = m->stop_fd, .events = POLLIN };
	int paused = nt_mgr_now_ms() < m->accept_paused_until_ms;
	pfd[n++] = (struct pollfd){ .fd = paused ? -1 : m->listen_fd, .events = POLLIN };
	for (int i = 0; i < m->nconns; i++) {
		who[n] = 2 * i;
		short ev = nt_mgr_control_busy(&m->conns[i]) ? POLLOUT : POLLIN;
		pfd[n++] = (struct pollfd){ .fd = m->conns[i].fd, .events = ev };
		nt_mgr_provider *p = m->conns[i].prov;
		if (p != NULL && p->fifo >= 0) {
			who[n] = 2 * i + 1;
			pfd[n++] = (struct pollfd){ .fd = p->fifo, .events = POLLIN };
		}
	}
	int timeout = m->nconns > 0 || m->trace.active ? 50 : 1000;
	if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR) {
		nt_mgr_log(m, "poll: %s", strerror(errno));
		return -1;
	}
	if (pfd[0].revents != 0)
		return 0;
	int nconns = m->nconns; /* connections accepted this turn are read next turn */
	for (int k = 2; k < n; k++) {
		if (pfd[k].revents == 0)
			continue;
		nt_mgr_conn *c = &m->conns[who[k] / 2];
		if (who[k] / 2 >= nconns || c->closing)
			continue;
		if (who[k] % 2 == 0 && nt_mgr_control_busy(c))
			nt_mgr_control_flush(m, c);
		else if (who[k] % 2 == 0)
			read_conn(m, c);
		else if (c->prov != NULL && c->prov->fifo >= 0)
			nt_mgr_provider_fifo(m, c);
	}
	if (pfd[1].revents != 0)
		accept_all(m);
	timers(m);
	compact(m);
	return 1;
}

/* A manager with no socket yet: its settings and its stop eventfd (tests/fuzz/fuzz_wire.c
 * drives one of these over socketpairs). NULL with *why on failure. */
static nt_manager *manager_alloc(const nt_manager_config *cfg, char *why, size_t whylen)
{
	nt_manager *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	m->cfg = *cfg;
	if (m->cfg.stop_timeout_ms == 0)
		m->cfg.stop_timeout_ms = 2000;
	m->listen_fd = -1;
	m->trace.out_fd = -1;
	m->trace.ctl_fd = -1;
	m->pending_select_fd = -1;
	m->next_id = 1;
	m->tell_controller = nt_mgr_control_tell;
	m->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->stop_fd < 0) {
		snprintf(why, whylen, "eventfd: %s", strerror(errno));
		free(m);
		return NULL;
	}
	return m;
}

nt_manager *nt_manager_new(const nt_manager_config *cfg, char *why, size_t whylen)
{
	if (cfg == NULL || cfg->socket_path == NULL) {
		snprintf(why, whylen, "no socket path given");
		return NULL;
	}
	nt_manager *m = manager_alloc(cfg, why, whylen);
	if (m == NULL)
		return NULL;
	if (nt_mgr_listen(m, why, whylen) != 0) {
		close(m->stop_fd);
		free(m);
		return NULL;
	}
	m->cfg.socket_path = m->path;
	return m;
}

int nt_manager_run(nt_manager *m)
{
	nt_mgr_log(m, "listening on %s", m->path);
	int rc;
	while ((rc = turn(m)) > 0)
		;
	if (rc == 0 && m->trace.active) {
		/* Stop the trace as CTL_STOP would; every provider answers or times out. */
		nt_mgr_log(m, "stopping: finishing the trace first");
		uint64_t drain;
		ssize_t r = read(m->stop_fd, &drain, sizeof(drain));
		(void)r;
		nt_mgr_trace_stop_gracefully(m);
		while (m->trace.active && (rc = turn(m)) > 0)
			;
		if (rc == 0 && m->trace.active) { /* asked again: end now, as things are */
			r = read(m->stop_fd, &drain, sizeof(drain));
			nt_mgr_log(m, "stopping again: the trace ends without waiting for answers");
		}
	}
	if (m->trace.active)
		nt_mgr_trace_abort(m, "the manager is stopping");
	return rc < 0 ? -1 : 0;
}

void nt_manager_stop(nt_manager *m)
{
	uint64_t one = 1;
	ssize_t r = write(m->stop_fd, &one, sizeof(one));
	(void)r;
}

void nt_manager_free(nt_manager *m)
{
	if (m == NULL)
		return;
	if (m->trace.active)
		nt_mgr_trace_abort(m, "the manager is stopping");
	for (int i = 0; i < m->nconns; i++)
		m->conns[i].closing = 1;
	compact(m);
	if (m->listen_fd >= 0) {
		close(m->listen_fd);
		unlink(m->path);
	}
	close(m->stop_fd);
	free(m);
}
