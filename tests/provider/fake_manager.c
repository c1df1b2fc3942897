/* fake_manager.c - the test trace manager of fake_manager.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_manager.h"
#include "format/nt_archive_header_decode.h"
#include "format/nt_archive_header_encode.h"
#include "format/nt_fifo.h"

char fm_error[512];

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fm_error, sizeof(fm_error), fmt, ap);
	va_end(ap);
	return -1;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* poll() one fd for input until `deadline` (ms): 1 ready, 0 timeout. */
static int readable(int fd, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left < 0)
			left = 0;
		struct pollfd p = { fd, POLLIN, 0 };
		int n = poll(&p, 1, (int)left);
		if (n > 0)
			return 1;
		if (n == 0 || (n < 0 && errno != EINTR))
			return 0;
	}
}

int fm_listen(fm *m)
{
	snprintf(m->dir, sizeof(m->dir), "/tmp/nt-fake-manager-XXXXXX");
	if (mkdtemp(m->dir) == NULL)
		return fail("mkdtemp: %s", strerror(errno));
	snprintf(m->path, sizeof(m->path), "%s/manager.sock", m->dir);
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	memcpy(addr.sun_path, m->path, strlen(m->path) + 1); /* /tmp/...: well under 108 */
	m->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (m->listen_fd < 0 || bind(m->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(m->listen_fd, 16) != 0)
		return fail("listen on %s: %s", m->path, strerror(errno));
	return 0;
}

void fm_close(fm *m)
{
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	m->listen_fd = -1;
	unlink(m->path);
	rmdir(m->dir);
}

static int recv_msg(int fd, nt_wire_msg *msg, int timeout_ms)
{
	if (!readable(fd, now_ms() + timeout_ms))
		return fail("no message within %d ms", timeout_ms);
	ssize_t n = recv(fd, msg, sizeof(*msg), 0);
	if (n == 0)
		return fail("the provider closed the connection");
	const char *why = n < 0 ? strerror(errno) : nt_wire_check(msg, (size_t)n);
	return why ? fail("bad message: %s", why) : 0;
}

static int send_msg(int fd, const nt_wire_msg *msg, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 2)];
		struct cmsghdr align;
	} control;
	struct iovec iov = { (void *)msg, sizeof(*msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds > 0) {
		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(*msg))
		return fail("sendmsg: %s", strerror(errno));
	return 0;
}

int fm_accept_register(fm *m, fm_provider *p, int timeout_ms)
{
	memset(p, 0, sizeof(*p));
	p->conn = p->fifo = p->memfd = -1;
	if (!readable(m->listen_fd, now_ms() + timeout_ms))
		return fail("no provider connected within %d ms", timeout_ms);
	p->conn = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (p->conn < 0)
		return fail("accept: %s", strerror(errno));
	nt_wire_msg msg;
	if (recv_msg(p->conn, &msg, timeout_ms) != 0)
		return -1;
	if (msg.type != NT_WIRE_REGISTER)
		return fail("first message %s, not REGISTER", nt_wire_type_name(msg.type));
	p->pid = msg.pid;
	p->flags = msg.a;
	nt_wire_str(msg.name, msg.name_len, p->name);
	return 0;
}

int fm_send_msg(fm_provider *p, const nt_wire_msg *msg, const int *fds, int nfds)
{
	return send_msg(p->conn, msg, fds, nfds);
}

int fm_send_simple(fm_provider *p, uint16_t type, uint64_t a, const char *text)
{
	nt_wire_msg msg;
	nt_wire_init(&msg, type);
	msg.a = a;
	nt_wire_set_text(&msg, text);
	return send_msg(p->conn, &msg, NULL, 0);
}

int fm_initialize(fm_provider *p, int mode, uint64_t buffer_size, uint64_t chunk_size,
		  const char *categories)
{
	if (nt_arena_layout_compute(buffer_size, chunk_size, &p->layout) != NT_LAYOUT_OK)
		return fail("layout refuses %llu/%llu", (unsigned long long)buffer_size,
			    (unsigned long long)chunk_size);
	p->mode = mode;
	int sv[2];
	p->memfd = memfd_create("nt-fake-buffer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (p->memfd < 0 || ftruncate(p->memfd, (off_t)p->layout.map_size) != 0 ||
	    fcntl(p->memfd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0)
		return fail("memfd: %s", strerror(errno));
	p->map = mmap(NULL, p->layout.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, p->memfd, 0);
	if (p->map == MAP_FAILED || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return fail("map or socketpair: %s", strerror(errno));
	p->fifo = sv[0];
	p->saver = nt_arena_saver_new(p->map, &p->layout, p->layout.map_size);
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_INITIALIZE);
	msg.a = (uint64_t)mode;
	msg.b = buffer_size;
	msg.c = chunk_size;
	msg.d = p->layout.map_size;
	nt_wire_set_text(&msg, categories);
	int fds[2] = { p->memfd, sv[1] };
	int rc = send_msg(p->conn, &msg, fds, 2);
	close(sv[1]);
	return rc;
}

static int append_stream(void *ctx, const void *data, size_t len)
{
	fm_provider *p = ctx;
	if (p->stream_len + len > p->stream_cap) {
		size_t cap = p->stream_cap ? p->stream_cap : 65536;
		while (cap < p->stream_len + len)
			cap *= 2;
		uint8_t *s = realloc(p->stream, cap);
		if (s == NULL)
			return ENOMEM;
		p->stream = s;
		p->stream_cap = cap;
	}
	memcpy(p->stream + p->stream_len, data, len);
	p->stream_len += len;
	return 0;
}

static void commit_stream(void *ctx, uint64_t end)
{
	(void)ctx;
	(void)end;
}

/* Serves the FIFO until a packet of type `want` arrives: 0, or -1. */
static int fifo_until(fm_provider *p, uint16_t want, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	for (;;) {
		nt_fifo_packet pk;
		if (!readable(p->fifo, deadline))
			return fail("no FIFO packet 0x%x within %d ms", want, timeout_ms);
		ssize_t n = recv(p->fifo, &pk, sizeof(pk), 0);
		if (n != (ssize_t)sizeof(pk))
			return fail("FIFO closed or short packet (%zd) waiting for 0x%x", n, want);
		if (pk.request == NT_FIFO_SAVE_BUFFER) {
			nt_saver_output out = { append_stream, commit_stream, p };
			if (nt_arena_saver_save(p->saver, &out, NULL) != 0)
				return fail("the saver failed");
			p->saves++;
			nt_fifo_packet ans = { NT_FIFO_BUFFER_SAVED, 0, pk.data32, pk.data64 };
			if (send(p->fifo, &ans, sizeof(ans), MSG_NOSIGNAL) != (ssize_t)sizeof(ans))
				return fail("cannot answer BUFFER_SAVED");
		}
		if (pk.request == NT_FIFO_STOPPED)
			p->stopped_seen++;
		if (pk.request == NT_FIFO_STARTED && pk.data32 != NT_FIFO_PROTOCOL_VERSION)
			return fail("STARTED with protocol version %u", pk.data32);
		if (pk.request == want)
			return 0;
	}
}

int fm_start(fm_provider *p, int disposition, const char *extra)
{
	if (fm_send_simple(p, NT_WIRE_START, (uint64_t)disposition, extra) != 0)
		return -1;
	return fifo_until(p, NT_FIFO_STARTED, 5000);
}

int fm_stop(fm_provider *p)
{
	if (fm_send_simple(p, NT_WIRE_STOP, 0, NULL) != 0)
		return -1;
	return fifo_until(p, NT_FIFO_STOPPED, 5000);
}

int fm_wait_stopped(fm_provider *p, int timeout_ms)
{
	return fifo_until(p, NT_FIFO_STOPPED, timeout_ms);
}

int fm_wait_eof(fm_provider *p, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	for (;;) {
		nt_wire_msg msg;
		if (!readable(p->conn, deadline))
			return fail("the provider did not close within %d ms", timeout_ms);
		ssize_t n = recv(p->conn, &msg, sizeof(msg), 0);
		if (n <= 0)
			return 0;
	}
}

int fm_archive(fm_provider *p, uint8_t **data, size_t *size)
{
	size_t arena = p->layout.map_size;
	*size = arena + p->stream_len;
	*data = malloc(*size);
	if (*data == NULL)
		return fail("out of memory");
	memcpy(*data, p->map, arena);
	if (p->stream_len)
		memcpy(*data + arena, p->stream, p->stream_len);
	if (p->mode != NT_MODE_STREAMING)
		return 0;
	/* The provider's header says where the stream starts; the manager knows its end. */
	nt_archive_info info;
	char why[200];
	uint64_t where;
	if (nt_header_decode(*data, NT_ARENA_HEADER_BYTES, &info, why, sizeof(why), &where) == 0)
		return fail("the provider's header does not decode: %s", why);
	info.stream_offset = arena;
	info.stream_end = arena + p->stream_len;
	uint32_t fields[NT_HDR_FIELD_COUNT];
	memset(*data, 0, NT_ARENA_HEADER_BYTES);
	if (nt_header_encode(&info, *data, NT_ARENA_HEADER_BYTES, fields) == 0)
		return fail("cannot re-encode the header");
	return 0;
}

void fm_release_buffer(fm_provider *p)
{
	if (p->fifo >= 0)
		close(p->fifo);
	if (p->memfd >= 0)
		close(p->memfd);
	if (p->map != NULL && p->map != MAP_FAILED)
		munmap(p->map, p->layout.map_size);
	nt_arena_saver_free(p->saver);
	free(p->stream);
	p->fifo = p->memfd = -1;
	p->map = NULL;
	p->saver = NULL;
	p->stream = NULL;
	p->stream_len = p->stream_cap = 0;
	p->saves = 0;
	p->stopped_seen = 0;
}

void fm_provider_free(fm_provider *p)
{
	fm_release_buffer(p);
	if (p->conn >= 0)
		close(p->conn);
	memset(p, 0, sizeof(*p));
	p->conn = p->fifo = p->memfd = -1;
}

/* ---- the provider process ------------------------------------------------------------- */

extern char **environ;

int fm_spawn(const char *manager_path, char *const argv[], char *const env[], fm_child *c)
{
	int in[2], out[2], err[2];
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
		return fail("pipe: %s", strerror(errno));
	c->pid = fork();
	if (c->pid < 0)
		return fail("fork: %s", strerror(errno));
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (manager_path != NULL)
			setenv(NT_MANAGER_ENV, manager_path, 1);
		else
			unsetenv(NT_MANAGER_ENV);
		for (int i = 0; env != NULL && env[i] != NULL; i++)
			putenv(env[i]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	c->in = in[1];
	c->out = out[0];
	c->err = err[0];
	fcntl(c->err, F_SETFL, O_NONBLOCK);
	return 0;
}

int fm_read_line(fm_child *c, char *buf, size_t cap, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	size_t n = 0;
	while (n + 1 < cap) {
		if (!readable(c->out, deadline))
			return fail("no line from the provider within %d ms", timeout_ms);
		ssize_t r = read(c->out, buf + n, 1);
		if (r <= 0)
			return fail("the provider's stdout ended");
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

void fm_read_stderr(fm_child *c, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;
	while (n + 1 < cap && (r = read(c->err, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
}

int fm_wait_child(fm_child *c, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	int status;
	while (now_ms() < deadline) {
		pid_t r = waitpid(c->pid, &status, WNOHANG);
		if (r == c->pid)
			return status;
		struct timespec ts = { 0, 5000000 };
		nanosleep(&ts, NULL);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
	fail("the provider did not exit within %d ms", timeout_ms);
	return -1;
}
