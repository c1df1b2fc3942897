/*
 * test_registry.c - the provider side of the trace manager, against a fake manager
 * (fake_manager.c) and real provider processes (provider_prog, $NT_PROVIDER_PROG): automatic
 * registration, INITIALIZE/START/STOP/TERMINATE, exact accounting in the manager's buffer in
 * oneshot, circular and streaming mode, a second START with each disposition, a manager that
 * goes away or breaks the protocol, fork children as providers of their own, and the
 * registration API's refusals.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/nt_cmocka.h"
#include "fake_manager.h"
#include "tests/support/seq_check.h"

#define WAIT_MS 20000

static const char *prog;

/* ---- helpers ---------------------------------------------------------------------------- */

#define CHECK(call) assert_msg((call) == 0, "%s: %s", #call, fm_error)

static void spawn(fm *m, const char *manager_path, char *const *args, char *const *env,
		  fm_child *c)
{
	char *argv[32] = { (char *)prog };
	for (int i = 0; args[i] != NULL && i < 30; i++)
		argv[i + 1] = args[i];
	if (m != NULL && manager_path == NULL)
		manager_path = m->path;
	CHECK(fm_spawn(manager_path, argv, env, c));
}

/* "made pid=P round=R events=E total=T ..." */
static void read_made(fm_child *c, int *pid, uint64_t *events, uint64_t *total)
{
	char line[256];
	if (fm_read_line(c, line, sizeof(line), WAIT_MS) != 0) {
		char err[4096];
		int status = fm_wait_child(c, 2000);
		fm_read_stderr(c, err, sizeof(err));
		fail_msg("%s (status %#x); stderr: %s", fm_error, status, err);
	}
	int round;
	assert_msg(sscanf(line, "made pid=%d round=%d events=%" SCNu64 " total=%" SCNu64, pid,
			  &round, events, total) == 4, "unexpected line '%s'", line);
}

static void expect_exit_0(fm_child *c)
{
	int status = fm_wait_child(c, WAIT_MS);
	char err[4096];
	fm_read_stderr(c, err, sizeof(err));
	assert_msg(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "provider_prog ended with status %#x; stderr: %s", status, err);
	if (c->in >= 0)
		close(c->in);
	close(c->out);
	close(c->err);
}

/* Reads the buffer as an archive and checks decoded + dropped + overwritten == made. */
static void check_accounting(fm_provider *p, uint64_t made, int trace2, const char *what)
{
	uint8_t *data;
	size_t size;
	CHECK(fm_archive(p, &data, &size));
	nt_reader_error err;
	nt_reader *r = nt_reader_open_memory(data, size, what, &err);
	assert_msg(r != NULL, "%s: the buffer does not open: %s", what, err.message);
	seq_check c;
	seq_read(r, &c, trace2);
	const nt_archive_info *info = nt_reader_info(r);
	uint64_t lost = info->events_dropped + info->events_overwritten;
	printf("%s: decoded %" PRIu64 " (foreign %" PRIu64 ") + dropped %" PRIu64
	       " + overwritten %" PRIu64 " of %" PRIu64 " made; pid %u; %" PRIu64 " saves\n",
	       what, c.decoded, c.foreign, info->events_dropped, info->events_overwritten, made,
	       info->pid, p->saves);
	assert_msg(c.failures == 0, "%s: %s", what, c.first_failure);
	assert_msg(info->pid == p->pid, "%s: the buffer's pid %u is not the provider's %u", what,
		   info->pid, p->pid);
	uint32_t processes = 0;
	for (uint32_t i = 0; i < nt_reader_process_count(r); i++)
		processes += nt_reader_process_at(r, i) != NULL;
	/* Trace2's ProcessRecord is in the manager's buffer, however late the start came. */
	assert_msg(processes == (trace2 ? 1u : 0u), "%s: %u Trace2 processes", what, processes);
	assert_msg(c.decoded - c.foreign + lost == made,
		   "%s: decoded %" PRIu64 " - foreign %" PRIu64 " + lost %" PRIu64 " != made %" PRIu64,
		   what, c.decoded, c.foreign, lost, made);
	nt_reader_close(r);
	free(data);
}

/* Registration as the design says: INITIALIZE, START (STARTED seen), REGISTERED(1). */
static void take_provider(fm *m, fm_provider *p, int mode, uint64_t buffer, const char *cats)
{
	CHECK(fm_accept_register(m, p, WAIT_MS));
	assert_string_equal(p->name, "provider_prog");
	CHECK(fm_initialize(p, mode, buffer, 4096, cats));
	CHECK(fm_start(p, NT_BUFFER_CLEAR_ENTIRE, NULL));
	if (p->flags & NT_WIRE_SYNC)
		CHECK(fm_send_simple(p, NT_WIRE_REGISTERED, 1, NULL));
}

/* ---- one process, each mode ------------------------------------------------------------ */

/* The program ends its recording itself (it exits, or calls nt_finish() in manager mode):
 * STOPPED (the manager serving streaming's saves meanwhile), then the close; it exits 0, and
 * its buffer accounts for every event it made (`trace2`: as check_accounting). Frees p and m. */
static void ends_by_itself(fm *m, fm_provider *p, fm_child *c, int trace2, const char *what)
{
	CHECK(fm_wait_stopped(p, WAIT_MS));
	CHECK(fm_wait_eof(p, WAIT_MS));
	int pid;
	uint64_t events, total;
	read_made(c, &pid, &events, &total);
	expect_exit_0(c);
	check_accounting(p, total, trace2, what);
	fm_provider_free(p);
	fm_close(m);
}

/* The program makes its events and exits: the exit path stops, answers STOPPED, closes. */
static void run_to_exit(int mode, uint64_t buffer, int trace2, const char *what)
{
	fm m;
	fm_provider p;
	fm_child c;
	CHECK(fm_listen(&m));
	char *args[] = { "--sync", "--threads", "3", "--events", "20000", trace2 ? "--trace2" : NULL,
			 NULL };
	spawn(&m, NULL, args, NULL, &c);
	take_provider(&m, &p, mode, buffer, "");
	assert_true(p.flags & NT_WIRE_SYNC);
	assert_int_equal(p.pid, (uint32_t)c.pid);
	ends_by_itself(&m, &p, &c, trace2, what);
}

static void oneshot_exact_accounting(void **state)
{
	(void)state;
	run_to_exit(NT_MODE_ONESHOT, 65536, 0, "oneshot 64 KiB");
	run_to_exit(NT_MODE_ONESHOT, 4u << 20, 1, "oneshot 4 MiB trace2");
}

static void circular_exact_accounting(void **state)
{
	(void)state;
	run_to_exit(NT_MODE_CIRCULAR, 65536, 1, "circular 64 KiB trace2");
}

static void streaming_exact_accounting(void **state)
{
	(void)state;
	run_to_exit(NT_MODE_STREAMING, 65536, 0, "streaming 64 KiB");
	run_to_exit(NT_MODE_STREAMING, 65536, 1, "streaming 64 KiB trace2");
}

/* The event path of a registered provider makes no system call (the filter kills the
 * process otherwise), across chunk claims and drops (oneshot) or wraps (circular). */
static void hot_path_without_system_calls(void **state)
{
	(void)state;
#if !defined(__x86_64__) || defined(__SANITIZE_THREAD__)
	/* The filter is x86-64's; ThreadSanitizer's runtime makes system calls of its own
	 * inside instrumented code. */
	printf("hot_path_without_system_calls: not run here\n");
	skip();
#endif
	for (int mode = NT_MODE_ONESHOT; mode <= NT_MODE_CIRCULAR; mode++) {
		fm m;
		fm_provider p;
		fm_child c;
		CHECK(fm_listen(&m));
		char *args[] = { "--sync", "--seccomp", "--events", "200000", NULL };
		spawn(&m, NULL, args, NULL, &c);
		take_provider(&m, &p, mode, 65536, "");
		CHECK(fm_wait_eof(&p, WAIT_MS)); /* gone without STOPPED: exit_group at once */
		expect_exit_0(&c);
		check_accounting(&p, 200000, 0, mode ? "seccomp circular" : "seccomp oneshot");
		fm_provider_free(&p);
		fm_close(&m);
	}
}

/* ---- two runs in one buffer --------------------------------------------------------------- */

/* A program making two rounds of events (2 threads, 3000 each), registered synchronously and
 * holding stdin open (--hold-stdin: it stays for a second STOP and the TERMINATE), taken as a
 * provider in `mode` with a 1 MiB buffer; its first round made (*first events) and stopped. */
static void two_rounds_first_stopped(fm *m, fm_provider *p, fm_child *c, int mode,
				     uint64_t *first)
{
	CHECK(fm_listen(m));
	char *args[] = { "--sync", "--rounds", "2", "--threads", "2", "--events", "3000",
			 "--hold-stdin", NULL };
	spawn(m, NULL, args, NULL, c);
	take_provider(m, p, mode, 1u << 20, "");
	int pid;
	uint64_t total;
	read_made(c, &pid, first, &total);
	CHECK(fm_stop(p));
}

static void two_runs(int mode, int disposition)
{
	fm m;
	fm_provider p;
	fm_child c;
	int pid;
	uint64_t first, second, total;
	two_rounds_first_stopped(&m, &p, &c, mode, &first);
	check_accounting(&p, first, 0, "first run");
	CHECK(fm_start(&p, disposition, NULL));
	assert_int_equal(write(c.in, "next\n", 5), 5);
	read_made(&c, &pid, &second, &total);
	if (fm_stop(&p) != 0) {
		char err[4096];
		fm_read_stderr(&c, err, sizeof(err));
		fail_msg("fm_stop: %s; stderr: %s", fm_error, err);
	}
	char what[64];
	snprintf(what, sizeof(what), "second run, disposition %d", disposition);
	check_accounting(&p, disposition == NT_BUFFER_RETAIN ? first + second : second, 0, what);
	CHECK(fm_send_simple(&p, NT_WIRE_TERMINATE, 0, NULL));
	close(c.in); /* the program may exit now */
	c.in = -1;
	CHECK(fm_wait_eof(&p, WAIT_MS)); /* exits idle: no STOPPED, just the close */
	assert_int_equal(p.stopped_seen, 2);
	expect_exit_0(&c);
	fm_provider_free(&p);
	fm_close(&m);
}

static void start_twice_each_disposition(void **state)
{
	(void)state;
	two_runs(NT_MODE_ONESHOT, NT_BUFFER_CLEAR_ENTIRE);
	two_runs(NT_MODE_ONESHOT, NT_BUFFER_CLEAR_NONDURABLE);
	two_runs(NT_MODE_ONESHOT, NT_BUFFER_RETAIN);
	two_runs(NT_MODE_CIRCULAR, NT_BUFFER_CLEAR_NONDURABLE);
	two_runs(NT_MODE_CIRCULAR, NT_BUFFER_RETAIN);
	two_runs(NT_MODE_STREAMING, NT_BUFFER_RETAIN); /* the only later start streaming takes */
}

/* TERMINATE leaves the process registered and idle; a second trace brings a new buffer,
 * which holds only that trace's events (the first buffer is not written again). */
static void second_trace_after_terminate(void **state)
{
	(void)state;
	fm m;
	fm_provider p;
	fm_child c;
	int pid;
	uint64_t first, second, total;
	two_rounds_first_stopped(&m, &p, &c, NT_MODE_ONESHOT, &first);
	CHECK(fm_send_simple(&p, NT_WIRE_TERMINATE, 0, NULL));
	size_t old_size = p.layout.map_size;
	uint8_t *old_map = malloc(old_size);
	assert_non_null(old_map);
	memcpy(old_map, p.map, old_size);
	int old_memfd = dup(p.memfd);
	fm_release_buffer(&p);
	CHECK(fm_initialize(&p, NT_MODE_CIRCULAR, 65536, 4096, ""));
	CHECK(fm_start(&p, NT_BUFFER_CLEAR_ENTIRE, NULL));
	assert_int_equal(write(c.in, "next\n", 5), 5);
	read_made(&c, &pid, &second, &total);
	CHECK(fm_stop(&p));
	check_accounting(&p, second, 0, "second trace");
	/* The first buffer is exactly as the first trace left it. */
	uint8_t *again = mmap(NULL, old_size, PROT_READ, MAP_SHARED, old_memfd, 0);
	assert_true(again != MAP_FAILED);
	assert_msg(memcmp(again, old_map, old_size) == 0,
		   "the first trace's buffer changed after TERMINATE");
	munmap(again, old_size);
	close(old_memfd);
	free(old_map);
	CHECK(fm_send_simple(&p, NT_WIRE_TERMINATE, 0, NULL));
	close(c.in);
	c.in = -1;
	CHECK(fm_wait_eof(&p, WAIT_MS));
	expect_exit_0(&c);
	fm_provider_free(&p);
	fm_close(&m);
}

/* ---- the manager misbehaves ---------------------------------------------------------------- */

/* The manager goes away between two rounds: the program runs on, says so once, and the
 * second round's events are counted as dropped in the buffer the manager may still hold. */
static void manager_gone_mid_run(void **state)
{
	(void)state;
	fm m;
	fm_provider p;
	fm_child c;
	CHECK(fm_listen(&m));
	char *args[] = { "--sync", "--rounds", "2", "--threads", "2", "--events", "5000", NULL };
	spawn(&m, NULL, args, NULL, &c);
	take_provider(&m, &p, NT_MODE_ONESHOT, 1u << 20, "");
	int pid;
	uint64_t first, second, total;
	read_made(&c, &pid, &first, &total);
	close(p.conn); /* gone: connection and FIFO; the buffer stays mapped here */
	close(p.fifo);
	p.conn = p.fifo = -1;
	fm_close(&m);
	/* The provider thread notices (its one line), and only then the second round runs. */
	char err[4096] = "";
	size_t have = 0;
	for (int i = 0; i < WAIT_MS / 10 && strstr(err, " went away") == NULL; i++) {
		usleep(10000);
		fm_read_stderr(&c, err + have, sizeof(err) - have);
		have = strlen(err);
	}
	assert_msg(strstr(err, "nanotrace: the trace manager at ") && strstr(err, " went away"),
		   "stderr: %s", err);
	assert_int_equal(write(c.in, "next\n", 5), 5);
	read_made(&c, &pid, &second, &total);
	int status = fm_wait_child(&c, WAIT_MS);
	fm_read_stderr(&c, err + have, sizeof(err) - have);
	assert_msg(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "status %#x; stderr: %s", status, err);
	check_accounting(&p, first + second, 0, "manager gone");
	fm_provider_free(&p);
}

/* A message the provider must refuse closes its connection; the program runs on. */
static void refused_message(const char *what, void (*send_bad)(fm_provider *p))
{
	fm m;
	fm_provider p;
	fm_child c;
	CHECK(fm_listen(&m));
	char *args[] = { "--threads", "1", "--events", "100", NULL };
	spawn(&m, NULL, args, NULL, &c);
	CHECK(fm_accept_register(&m, &p, WAIT_MS));
	send_bad(&p);
	CHECK(fm_wait_eof(&p, WAIT_MS));
	int pid;
	uint64_t events, total;
	read_made(&c, &pid, &events, &total);
	int status = fm_wait_child(&c, WAIT_MS);
	char err[4096];
	fm_read_stderr(&c, err, sizeof(err));
	assert_msg(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "%s: status %#x; stderr: %s", what, status, err);
	assert_msg(strstr(err, "broke the protocol") != NULL, "%s: stderr: %s", what, err);
	printf("%s: %s", what, err);
	fm_provider_free(&p);
	fm_close(&m);
}

static void send_garbage(fm_provider *p)
{
	nt_wire_msg msg;
	memset(&msg, 0x5A, sizeof(msg));
	assert_int_equal(send(p->conn, &msg, sizeof(msg), 0), (ssize_t)sizeof(msg));
}

static void send_short(fm_provider *p)
{
	assert_int_equal(send(p->conn, "NTWM", 4, 0), 4);
}

static void send_start_first(fm_provider *p)
{
	CHECK(fm_send_simple(p, NT_WIRE_START, 0, NULL));
}

static void send_controller_message(fm_provider *p)
{
	CHECK(fm_send_simple(p, NT_WIRE_CTL_STOPPED, 0, NULL));
}

/* INITIALIZE with a memfd of `extra` bytes more than the layout's map size, saying so in d;
 * not sealed. */
static void send_initialize_of(fm_provider *p, uint64_t extra)
{
	nt_arena_layout L;
	assert_int_equal(nt_arena_layout_compute(65536, 4096, &L), NT_LAYOUT_OK);
	int sv[2], memfd = memfd_create("wrong", MFD_CLOEXEC);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(ftruncate(memfd, (off_t)(L.map_size + extra)), 0);
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_INITIALIZE);
	msg.b = 65536;
	msg.c = 4096;
	msg.d = L.map_size + extra;
	int fds[2] = { memfd, sv[1] };
	CHECK(fm_send_msg(p, &msg, fds, 2));
	close(memfd);
	close(sv[0]);
	close(sv[1]);
}

static void send_wrong_map_size(fm_provider *p)
{
	send_initialize_of(p, 4096);
}

/* The right size, but the manager could shrink it under the provider's mapping. */
static void send_unsealed_buffer(fm_provider *p)
{
	send_initialize_of(p, 0);
}

/* A START with a descriptor attached. */
static void send_fd_with_start(fm_provider *p)
{
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_START);
	int fd = 0;
	CHECK(fm_send_msg(p, &msg, &fd, 1));
}

/* A manager that never reads its FIFO while asking for STARTED and STOPPED again and again:
 * once the FIFO is full the provider closes (it never waits on a manager), and runs on. */
static void send_until_fifo_full(fm_provider *p)
{
	CHECK(fm_initialize(p, NT_MODE_ONESHOT, 65536, 4096, ""));
	for (int i = 0; i < 100000; i++)
		if (fm_send_simple(p, i % 2 ? NT_WIRE_STOP : NT_WIRE_START, NT_BUFFER_RETAIN,
				   NULL) != 0)
			return; /* the provider closed */
	fail_msg("the provider still takes messages with a full FIFO");
}

static void bad_messages_close_the_connection(void **state)
{
	(void)state;
	refused_message("garbage", send_garbage);
	refused_message("a short message", send_short);
	refused_message("START before INITIALIZE", send_start_first);
	refused_message("a controller's message", send_controller_message);
	refused_message("INITIALIZE of the wrong map size", send_wrong_map_size);
	refused_message("INITIALIZE of an unsealed buffer", send_unsealed_buffer);
	refused_message("START with a descriptor", send_fd_with_start);
	refused_message("a FIFO nobody reads", send_until_fifo_full);
}

/* ---- fork -------------------------------------------------------------------------------- */

static void fork_child_is_its_own_provider(void **state)
{
	(void)state;
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer cannot follow a fork child of a threaded process that starts threads
	 * (it kills it, or with die_after_fork=0 fails on reused thread ids). */
	printf("fork_child_is_its_own_provider: not run under ThreadSanitizer\n");
	skip();
#endif
	fm m;
	fm_provider parent, child;
	fm_child c;
	CHECK(fm_listen(&m));
	char *args[] = { "--sync", "--fork", "--threads", "2", "--events", "5000", NULL };
	/* The fork child exit()s while the parent has threads: LeakSanitizer's exit-time check
	 * can hang on an allocator lock held at fork() (see tests/writer/meson.build). */
	char *env[] = { "ASAN_OPTIONS=abort_on_error=1:detect_leaks=0", NULL };
	spawn(&m, NULL, args, env, &c);
	take_provider(&m, &parent, NT_MODE_ONESHOT, 1u << 20, "");
	take_provider(&m, &child, NT_MODE_ONESHOT, 1u << 20, "");
	assert_int_equal(parent.pid, (uint32_t)c.pid);
	assert_int_not_equal(child.pid, parent.pid);
	assert_true(child.flags & NT_WIRE_SYNC); /* registered before fork() returned */
	uint64_t made_parent = 0, made_child = 0;
	for (int i = 0; i < 2; i++) {
		int pid;
		uint64_t events, total;
		read_made(&c, &pid, &events, &total);
		if ((uint32_t)pid == parent.pid)
			made_parent = total;
		else if ((uint32_t)pid == child.pid)
			made_child = total;
		else
			fail_msg("a line from pid %d, neither provider", pid);
	}
	CHECK(fm_wait_stopped(&child, WAIT_MS));
	CHECK(fm_wait_eof(&child, WAIT_MS));
	CHECK(fm_wait_stopped(&parent, WAIT_MS));
	CHECK(fm_wait_eof(&parent, WAIT_MS));
	expect_exit_0(&c);
	/* Each buffer holds exactly its own process's events: the child never wrote into the
	 * parent's (nor the parent into the child's). */
	check_accounting(&parent, made_parent, 0, "fork parent");
	check_accounting(&child, made_child, 0, "fork child");
	fm_provider_free(&parent);
	fm_provider_free(&child);
	fm_close(&m);
}

/* ---- registration ----------------------------------------------------------------------- */

static void asynchronous_registration(void **state)
{
	(void)state;
	fm m;
	fm_provider p;
	fm_child c;
	CHECK(fm_listen(&m));
	char *args[] = { "--sync", "--threads", "2", "--events", "2000", "--own-calls", "--finish",
			 NULL };
	char *env[] = { "NANOTRACE_REGISTER_TIMEOUT=0", NULL };
	spawn(&m, NULL, args, env, &c);
	take_provider(&m, &p, NT_MODE_ONESHOT, 1u << 20, "acct");
	assert_false(p.flags & NT_WIRE_SYNC);
	ends_by_itself(&m, &p, &c, 0, "asynchronous"); /* nt_finish() in manager mode */
}

/* Trace2 initialized before the manager's START (an asynchronous registration and a late
 * manager): the start writes Trace2's ProcessRecord into the fresh buffer. */
static void trace2_initialized_before_start(void **state)
{
	(void)state;
	fm m;
	fm_provider p;
	fm_child c;
	CHECK(fm_listen(&m));
	char *args[] = { "--trace2", "--sync", "--say-ready", "--threads", "2", "--events", "2000",
			 NULL };
	char *env[] = { "NANOTRACE_REGISTER_TIMEOUT=0", NULL };
	spawn(&m, NULL, args, env, &c);
	CHECK(fm_accept_register(&m, &p, WAIT_MS));
	/* main() has run NT_T2_INITIALIZE, not recording, when it says so: a fixed pause could
	 * end first on a loaded machine, and the start would then precede Trace2's. */
	char line[64];
	CHECK(fm_read_line(&c, line, sizeof(line), WAIT_MS));
	assert_string_equal(line, "ready");
	CHECK(fm_initialize(&p, NT_MODE_ONESHOT, 1u << 20, 4096, ""));
	CHECK(fm_start(&p, NT_BUFFER_CLEAR_ENTIRE, NULL));
	ends_by_itself(&m, &p, &c, 1, "trace2 before start");
}

static void unreachable_manager(void **state)
{
	(void)state;
	fm m;
	fm_child c;
	CHECK(fm_listen(&m));
	char path[200];
	snprintf(path, sizeof(path), "%s/nobody.sock", m.dir);
	char *args[] = { "--threads", "1", "--events", "10", NULL };
	char *env[] = { "NANOTRACE_REGISTER_TIMEOUT=soon", NULL };
	spawn(NULL, path, args, env, &c);
	int pid;
	uint64_t events, total;
	read_made(&c, &pid, &events, &total);
	int status = fm_wait_child(&c, WAIT_MS);
	char err[4096], want[400];
	fm_read_stderr(&c, err, sizeof(err));
	assert_msg(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x",
		   status);
	snprintf(want, sizeof(want), "nanotrace: cannot reach the trace manager at %s: %s; "
		 "not tracing (NANOTRACE_MANAGER)\n", path, strerror(ENOENT));
	assert_msg(strstr(err, want) != NULL, "stderr '%s' lacks '%s'", err, want);
	assert_msg(strstr(err, "NANOTRACE_REGISTER_TIMEOUT='soon' is not a number of "
			       "milliseconds from 0 to 60000; using 3000\n") != NULL, "stderr: %s", err);
	fm_close(&m);
}

/* A manager that never accepts, its accept queue full: the program does not block in
 * connect(); it says it cannot reach the manager and runs on. */
static void manager_not_accepting(void **state)
{
	(void)state;
	fm m;
	fm_child c;
	CHECK(fm_listen(&m));
	assert_int_equal(listen(m.listen_fd, 0), 0);
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	memcpy(addr.sun_path, m.path, strlen(m.path) + 1);
	int filler[8], n = 0;
	for (; n < 8; n++) {
		filler[n] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (connect(filler[n], (struct sockaddr *)&addr, sizeof(addr)) != 0) {
			assert_int_equal(errno, EAGAIN);
			close(filler[n]);
			break;
		}
	}
	assert_true(n < 8);
	char *args[] = { "--threads", "1", "--events", "10", NULL };
	spawn(&m, NULL, args, NULL, &c);
	int pid;
	uint64_t events, total;
	read_made(&c, &pid, &events, &total);
	int status = fm_wait_child(&c, WAIT_MS);
	char err[4096], want[400];
	fm_read_stderr(&c, err, sizeof(err));
	assert_msg(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x",
		   status);
	snprintf(want, sizeof(want), "nanotrace: cannot reach the trace manager at %s: %s; "
		 "not tracing (NANOTRACE_MANAGER)\n", m.path, strerror(EAGAIN));
	assert_msg(strstr(err, want) != NULL, "stderr '%s' lacks '%s'", err, want);
	for (int i = 0; i < n; i++)
		close(filler[i]);
	fm_close(&m);
}

static void api_refusals(void **state)
{
	(void)state;
	char name[120];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	unsetenv(NT_MANAGER_ENV);
	assert_int_equal(nt_provider_register("/nonexistent/x.sock", name), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "more than 100"));
	assert_int_equal(nt_provider_register(NULL, NULL), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), NT_MANAGER_ENV));
	int started = 7;
	assert_int_equal(nt_provider_register_sync("/nonexistent/x.sock", NULL, 10, &started),
			 NT_ERR_IO);
	assert_int_equal(started, 0);
	assert_non_null(strstr(nt_last_error(),
			       "cannot reach the trace manager at /nonexistent/x.sock: "));
	assert_int_equal(nt_provider_register_sync("/x.sock", NULL, -1, NULL),
			 NT_ERR_INVALID_ARGUMENT);
	assert_false(nt_provider_is_registered());
	/* A session of the program's own: registering is refused. */
	nt_config cfg;
	nt_config_init(&cfg);
	assert_int_equal(nt_start(&cfg), NT_OK);
	fm m;
	CHECK(fm_listen(&m));
	assert_int_equal(nt_provider_register(m.path, NULL), NT_ERR_STATE);
	assert_non_null(strstr(nt_last_error(), "own"));
	char out[256];
	snprintf(out, sizeof(out), "%s/own.ntrace", m.dir);
	assert_int_equal(nt_finish(out), NT_OK);
	unlink(out);
	fm_close(&m);
}

/* The API itself, in this process: an explicit registration under a name of its own, a
 * second one refused, manager mode for the program's own calls, nt_finish() closing. Last:
 * the process belongs to the manager from here on. */
static void explicit_registration(void **state)
{
	(void)state;
	fm m;
	fm_provider p;
	CHECK(fm_listen(&m));
	assert_int_equal(nt_provider_register(m.path, "explicit-name"), NT_OK);
	CHECK(fm_accept_register(&m, &p, WAIT_MS));
	assert_string_equal(p.name, "explicit-name");
	assert_int_equal(p.pid, (uint32_t)getpid());
	assert_false(p.flags & NT_WIRE_SYNC);
	assert_true(nt_provider_is_registered());
	assert_int_equal(nt_provider_register(m.path, NULL), NT_ERR_STATE);
	assert_non_null(strstr(nt_last_error(), "already registered"));
	CHECK(fm_initialize(&p, NT_MODE_ONESHOT, 1u << 20, 0, ""));
	CHECK(fm_start(&p, NT_BUFFER_CLEAR_ENTIRE, NULL));
	assert_true(nt_is_recording());
	nt_config cfg;
	nt_config_init(&cfg);
	assert_int_equal(nt_start(&cfg), NT_OK); /* the manager's session stays */
	assert_int_equal(nt_provider_stop(), NT_ERR_STATE);
	assert_non_null(strstr(nt_last_error(), "belongs to the trace manager"));
	for (int i = 0; i < 100; i++)
		NT_INSTANT("acct", "ev", NT_U32("t", 0), NT_U64("seq", (uint64_t)i));
	assert_int_equal(nt_finish("/nonexistent/ignored.ntrace"), NT_OK);
	assert_false(nt_is_recording());
	assert_false(nt_provider_is_registered());
	CHECK(fm_wait_stopped(&p, WAIT_MS));
	CHECK(fm_wait_eof(&p, WAIT_MS));
	p.pid = (uint32_t)getpid();
	check_accounting(&p, 100, 0, "explicit");
	assert_int_equal(nt_finish(NULL), NT_OK); /* still the manager's: nothing to do */
	fm_provider_free(&p);
	fm_close(&m);
}

int main(void)
{
	prog = getenv("NT_PROVIDER_PROG");
	if (prog == NULL) {
		fprintf(stderr, "NT_PROVIDER_PROG is not set: run through meson test\n");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(api_refusals),
		cmocka_unit_test(unreachable_manager),
		cmocka_unit_test(manager_not_accepting),
		cmocka_unit_test(oneshot_exact_accounting),
		cmocka_unit_test(circular_exact_accounting),
		cmocka_unit_test(streaming_exact_accounting),
		cmocka_unit_test(hot_path_without_system_calls),
		cmocka_unit_test(start_twice_each_disposition),
		cmocka_unit_test(second_trace_after_terminate),
		cmocka_unit_test(asynchronous_registration),
		cmocka_unit_test(trace2_initialized_before_start),
		cmocka_unit_test(fork_child_is_its_own_provider),
		cmocka_unit_test(manager_gone_mid_run),
		cmocka_unit_test(bad_messages_close_the_connection),
		cmocka_unit_test(explicit_registration), /* last: the process is a provider */
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
