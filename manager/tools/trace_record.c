/*
 * trace-record - the trace client: records every registered provider (or the COMMAND it
 * runs and every descendant linking libnanotrace) into one bundle archive.
 *
 * It speaks the controller protocol (format/nt_wire.h) to the manager on the default socket,
 * once nt_manager_connect() has checked that the socket's directory and the server are the
 * user's (else the output file and the providers would go to whoever planted the socket);
 * when none answers there it runs the manager core itself, on a thread, on a private socket
 * in a fresh 0700 directory (the embedded default), so it works with nothing else started.
 * The bundle is created beside -o FILE under a random name (format/nt_private_file.h:
 * mkostemp, 0600), written by the manager through the descriptor passed with CTL_START, and
 * renamed onto FILE at the end; a symbolic link at FILE is refused, before recording and
 * again at the rename, never followed or replaced.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../format/nt_arena_layout.h"
#include "../../format/nt_bundle.h"
#include "../../format/nt_private_file.h"
#include "../../format/nt_wire.h"
#include "../core/nt_manager.h"
#include "runtime/nt_sock.h"
#include "nt_record_bundle.h"
#include "nt_record_options.h"

enum { EXIT_USAGE = 1, EXIT_FAILED = 2, EXIT_MANAGER_LOST = 3 };
#define CONNECT_TIMEOUT_MS 2000 /* a manager whose accept queue stays full this long is stuck */
#define say nt_record_say
#define EMBEDDED_JOIN_S 10 /* an embedded manager asked to stop ends within its stop budget */

typedef struct recorder {
	options o;
	char socket_path[PATH_MAX];
	int ctl;                 /* controller connection */
	nt_manager *embedded;    /* the manager on our own thread, or NULL */
	pthread_t embedded_thread;
	char embedded_dir[PATH_MAX];
	char tmp_path[PATH_MAX]; /* the bundle until it is renamed onto o.output */
	int out_fd;
	pid_t child;
	int child_status;        /* exit code for the command, once it ended */
	int child_done;
	int stop_sent;
	int embedded_stuck;      /* its thread did not end when asked: it owns the file still */
	int64_t heard_ns;        /* the manager's last message, or CTL_STOP if later */
	int tty;
	int64_t t0_ns;
} recorder;

static int sig_pipe[2] = { -1, -1 };

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;
	ssize_t n = write(sig_pipe[1], &c, 1);
	(void)n;
	errno = saved;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- the connection ---------------------------------------------------------------- */

static int send_msg(int sock, const nt_wire_msg *msg, int fd)
{
	return nt_sock_send(sock, msg, sizeof(*msg), &fd, fd >= 0 ? 1 : 0, 0) == 0 ? 0 : -1;
}

/* One message from the manager within timeout_ms: 1, 0 on timeout, -1 when the manager
 * closed or sent something malformed (why says which). */
static int recv_msg(int sock, nt_wire_msg *msg, int timeout_ms, const char **why)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);
	if (r == 0 || (r < 0 && errno == EINTR))
		return 0;
	int nfds;
	ssize_t n = nt_sock_recv(sock, msg, sizeof(*msg), NULL, NT_SOCK_DROP_FDS, &nfds, 1);
	if (n == -EAGAIN)
		return 0;
	if (n <= 0) {
		*why = "the manager closed its connection";
		return -1;
	}
	if ((*why = nt_wire_check(msg, (size_t)n)) != NULL)
		return -1;
	return 1;
}

static void embedded_log(void *ctx, const char *line)
{
	recorder *r = ctx;
	if (r->o.verbose)
		fprintf(stderr, "trace-record: [+%.3f ms] %s\n", (double)(mono_ns() - r->t0_ns) / 1e6,
			line);
}

static void *embedded_main(void *arg)
{
	nt_manager_run(arg);
	return NULL;
}

/* Connects to the manager on the default path, or starts the embedded one. -1 when none
 * answers (and none may be embedded), -2 when the one there is refused (said here): the
 * socket's directory or the server belongs to someone else, who would get the output file
 * and every provider's registration. */
static int connect_manager(recorder *r, int may_embed)
{
	char why[512];
	if (nt_manager_socket_path(r->socket_path, sizeof(r->socket_path), why, sizeof(why)) != 0) {
		say("%s", why);
		return -1;
	}
	r->ctl = nt_manager_connect(r->socket_path, CONNECT_TIMEOUT_MS, why, sizeof(why));
	if (r->ctl == -2) {
		say("not using the manager at %s: %s", r->socket_path, why);
		return -2;
	}
	if (r->ctl >= 0) {
		if (r->o.verbose)
			say("[+%.3f ms] using the manager at %s", (double)(mono_ns() - r->t0_ns) / 1e6,
			    r->socket_path);
		return 0;
	}
	if (!may_embed)
		return -1;
	const char *tmp = getenv("TMPDIR");
	snprintf(r->embedded_dir, sizeof(r->embedded_dir), "%s/nanotrace-record-XXXXXX",
		 tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (mkdtemp(r->embedded_dir) == NULL) {
		say("cannot create a private directory for the embedded manager: %s", strerror(errno));
		r->embedded_dir[0] = '\0';
		return -1;
	}
	snprintf(r->socket_path, sizeof(r->socket_path), "%.4000s/%s", r->embedded_dir,
		 NT_MANAGER_SOCKET_NAME);
	nt_manager_config cfg = { .socket_path = r->socket_path, .log = embedded_log, .log_ctx = r,
				  .verbose = r->o.verbose };
	r->embedded = nt_manager_new(&cfg, why, sizeof(why));
	if (r->embedded == NULL) {
		say("cannot run the embedded manager: %s", why);
		return -1;
	}
	int rc = pthread_create(&r->embedded_thread, NULL, embedded_main, r->embedded);
	if (rc != 0) {
		say("cannot start the embedded manager: %s", strerror(rc));
		nt_manager_free(r->embedded);
		r->embedded = NULL;
		return -1;
	}
	if (r->o.verbose)
		say("[+%.3f ms] no manager at the default socket: running one at %s",
		    (double)(mono_ns() - r->t0_ns) / 1e6, r->socket_path);
	r->ctl = nt_manager_connect(r->socket_path, CONNECT_TIMEOUT_MS, why, sizeof(why));
	if (r->ctl < 0) {
		say("cannot connect to the embedded manager: %s", why);
		return -1;
	}
	return 0;
}

/* Stops the embedded manager and joins it (it finishes the trace first, as on SIGTERM).
 * 0 once it is gone (or there was none); -1 when its thread did not end within
 * EMBEDDED_JOIN_S: it is stuck, may still write the bundle, and is left alone. */
static int stop_embedded(recorder *r)
{
	if (r->embedded != NULL) {
		nt_manager_stop(r->embedded);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += EMBEDDED_JOIN_S;
		if (pthread_timedjoin_np(r->embedded_thread, NULL, &until) != 0) {
			say("the embedded manager did not stop within %d s", EMBEDDED_JOIN_S);
			r->embedded = NULL; /* never freed under its running thread */
			r->embedded_stuck = 1;
			return -1;
		}
		nt_manager_free(r->embedded);
		r->embedded = NULL;
	}
	if (r->embedded_dir[0] != '\0') {
		rmdir(r->embedded_dir);
		r->embedded_dir[0] = '\0';
	}
	return r->embedded_stuck ? -1 : 0;
}

static int do_list(recorder *r)
{
	int rc = connect_manager(r, 0);
	if (rc == -2)
		return EXIT_FAILED;
	if (rc != 0) {
		say("no manager answers at %s: no providers are registered", r->socket_path);
		return 0;
	}
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_CTL_LIST);
	if (send_msg(r->ctl, &msg, -1) != 0) {
		say("cannot ask the manager: %s", strerror(errno));
		return EXIT_FAILED;
	}
	printf("%8s  %-12s  %s\n", "PID", "STATE", "NAME");
	for (;;) {
		const char *why = "no answer within 5 s";
		if (recv_msg(r->ctl, &msg, 5000, &why) != 1) {
			say("listing providers: %s", why);
			return EXIT_FAILED;
		}
		if (msg.type == NT_WIRE_CTL_END)
			return 0;
		if (msg.type != NT_WIRE_CTL_PROVIDER) {
			say("listing providers: the manager sent %s", nt_wire_type_name(msg.type));
			return EXIT_FAILED;
		}
		char name[NT_WIRE_MAX_NAME + 1];
		printf("%8u  %-12s  %s\n", msg.pid, nt_provider_state_name(msg.a),
		       nt_wire_str(msg.name, msg.name_len, name));
	}
}


/* ---- recording ----------------------------------------------------------------------- */

static int make_output(recorder *r)
{
	const char *slash = strrchr(r->o.output, '/');
	int dirlen = slash ? (int)(slash - r->o.output) : 1;
	const char *dir = slash ? r->o.output : ".";
	const char *base = slash ? slash + 1 : r->o.output;
	if (base[0] == '\0') {
		say("-o '%s' names a directory, not a file", r->o.output);
		return -1;
	}
	if (slash == r->o.output)
		dirlen = 0; /* "/file": the root */
	int n = snprintf(r->tmp_path, sizeof(r->tmp_path), "%.*s/.%s.XXXXXX", dirlen, dir, base);
	if (n < 0 || (size_t)n >= sizeof(r->tmp_path)) {
		say("-o '%s': path too long", r->o.output);
		return -1;
	}
	if (nt_private_target_ok(r->o.output) != 0) {
		say("-o '%s': %s", r->o.output, nt_private_strerror(errno));
		r->tmp_path[0] = '\0';
		return -1;
	}
	/* 0600, O_EXCL, a random name: never an existing file (format/nt_private_file.h) */
	r->out_fd = nt_private_create(r->tmp_path, NT_PRIVATE_FILE_MODE);
	if (r->out_fd < 0) {
		say("cannot create the archive beside '%s': %s", r->o.output, strerror(errno));
		r->tmp_path[0] = '\0';
		return -1;
	}
	return 0;
}

static void drop_output(recorder *r)
{
	if (r->tmp_path[0] != '\0')
		unlink(r->tmp_path);
	r->tmp_path[0] = '\0';
}

static int start_trace(recorder *r)
{
	nt_wire_msg msg;
	for (int i = 0; i < r->o.nproviders; i++) {
		nt_wire_init(&msg, NT_WIRE_CTL_SELECT);
		nt_wire_set_name(&msg, r->o.providers[i]);
		if (send_msg(r->ctl, &msg, -1) != 0)
			goto lost;
	}
	nt_wire_init(&msg, NT_WIRE_CTL_START);
	msg.a = (uint64_t)r->o.mode;
	msg.b = r->o.buffer_size;
	msg.d = nt_wire_start_d((uint32_t)r->o.disposition, r->o.compression);
	nt_wire_set_text(&msg, r->o.categories);
	if (send_msg(r->ctl, &msg, r->out_fd) != 0)
		goto lost;
	for (;;) {
		const char *why = "no answer to CTL_START within 10 s";
		if (recv_msg(r->ctl, &msg, 10000, &why) != 1) {
			say("starting the trace: %s", why);
			return -1;
		}
		if (msg.type == NT_WIRE_CTL_STARTED)
			break;
		if (msg.type == NT_WIRE_CTL_END) {
			char text[NT_WIRE_MAX_TEXT + 1];
			say("the manager refused to start: %s", nt_wire_str(msg.text, msg.text_len, text));
			return -1;
		}
	}
	if (r->o.verbose)
		say("[+%.3f ms] trace started: %llu providers", (double)(mono_ns() - r->t0_ns) / 1e6,
		    (unsigned long long)msg.a);
	return 0;
lost:
	say("cannot talk to the manager: %s", strerror(errno));
	return -1;
}

static int spawn(recorder *r)
{
	pid_t pid = fork();
	if (pid < 0) {
		say("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setenv(NT_MANAGER_ENV, r->socket_path, 1);
		execvp(r->o.command[0], r->o.command);
		fprintf(stderr, "trace-record: cannot run '%s': %s\n", r->o.command[0], strerror(errno));
		_exit(127);
	}
	r->child = pid;
	return 0;
}

static void reap(recorder *r, int block)
{
	int status;
	if (r->child <= 0 || r->child_done)
		return;
	pid_t p = waitpid(r->child, &status, block ? 0 : WNOHANG);
	if (p != r->child)
		return;
	r->child_done = 1;
	r->child_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (r->o.verbose)
		say("[+%.3f ms] '%s' ended with status %d", (double)(mono_ns() - r->t0_ns) / 1e6,
		    r->o.command[0], r->child_status);
}

static void progress(recorder *r, const nt_wire_msg *m)
{
	if (!r->tty)
		return;
	fprintf(stderr, "\rtrace-record: %llu providers, %llu events, %llu bytes, %llu dropped   ",
		(unsigned long long)m->a, (unsigned long long)m->b, (unsigned long long)m->c,
		(unsigned long long)m->d);
	fflush(stderr);
}

static void end_progress(recorder *r)
{
	if (r->tty)
		fputc('\n', stderr);
}

/* Syncs and renames the bundle onto -o FILE. On failure the recording is kept under its
 * temporary name (said here): a finished trace cannot be made again, so it is never
 * deleted because its final name was taken. */
static int put_in_place(recorder *r)
{
	const char *what = "syncing the archive for";
	int ok = fsync(r->out_fd) == 0 || errno == EINVAL;
	if (ok) {
		what = "renaming the archive to";
		ok = nt_private_publish(r->tmp_path, r->o.output) == 0; /* a link: refused */
	}
	if (ok) {
		r->tmp_path[0] = '\0';
		return 0;
	}
	say("%s '%s': %s; the recording is kept in '%s'", what, r->o.output,
	    nt_private_strerror(errno), r->tmp_path);
	r->tmp_path[0] = '\0'; /* not dropped */
	return -1;
}

static int finished(recorder *r, const nt_wire_msg *m)
{
	char text[NT_WIRE_MAX_TEXT + 1];
	nt_wire_str(m->text, m->text_len, text);
	end_progress(r);
	if (m->type == NT_WIRE_CTL_END) {
		say("the manager could not write the archive: %s", text);
		return EXIT_FAILED;
	}
	if (put_in_place(r) != 0)
		return EXIT_FAILED;
	say("wrote %s: %llu processes, %llu events, %llu bytes, %llu dropped", r->o.output,
	    (unsigned long long)m->a, (unsigned long long)m->b, (unsigned long long)m->c,
	    (unsigned long long)m->d);
	for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n"))
		say("%s", line);
	return r->child > 0 ? r->child_status : 0;
}

/* The recording as it is, unfinished: what still holds the file may write to it, so it is
 * neither salvaged nor renamed. */
static int keep_unfinished(recorder *r, const char *why)
{
	say("error: %s; the unfinished recording is kept in '%s'", why, r->tmp_path);
	r->tmp_path[0] = '\0';
	return EXIT_MANAGER_LOST;
}

/* The manager's connection closed (or failed): it is gone, so the sections it wrote are
 * kept and the bundle ended with MANAGER_LOST. The embedded manager is stopped and joined
 * first, so that nothing writes the file while it is salvaged. */
static int manager_lost(recorder *r, const char *why)
{
	end_progress(r);
	char msg[256], err[256];
	snprintf(msg, sizeof(msg), "the manager went away while recording: %s", why);
	if (stop_embedded(r) != 0)
		return keep_unfinished(r, msg);
	uint32_t sections = 0;
	if (nt_record_bundle_salvage(r->out_fd, NT_SECTION_MANAGER_LOST, msg, &sections, err,
				     sizeof(err)) != 0) {
		say("%s; the archive could not be kept: %s", msg, err);
		return EXIT_MANAGER_LOST;
	}
	if (put_in_place(r) != 0) {
		say("%s", msg);
		return EXIT_MANAGER_LOST;
	}
	say("error: %s; %s keeps the %u process sections written before", msg, r->o.output,
	    sections);
	if (r->child > 0 && !r->child_done) {
		say("waiting for '%s' to end", r->o.command[0]);
		reap(r, 1);
	}
	return EXIT_MANAGER_LOST;
}

/* The manager's connection is open but it has said nothing for --manager-timeout while
 * stopping (it sends progress 4 times a second): stuck. A manager still holding the file
 * is never raced; the embedded one is ours to stop, and once joined the file is ours. */
static int manager_silent(recorder *r)
{
	char why[160];
	snprintf(why, sizeof(why), "it sent nothing for %g s while stopping", r->o.manager_timeout);
	end_progress(r);
	if (r->embedded != NULL)
		return manager_lost(r, why);
	char msg[PATH_MAX + 256];
	snprintf(msg, sizeof(msg), "the manager at %s %s", r->socket_path, why);
	return keep_unfinished(r, msg);
}

static void send_stop(recorder *r)
{
	if (r->stop_sent)
		return;
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_CTL_STOP);
	r->stop_sent = 1;
	r->heard_ns = mono_ns(); /* the manager's silence counts from here at the earliest */
	if (send_msg(r->ctl, &msg, -1) != 0 && r->o.verbose)
		say("sending CTL_STOP: %s", strerror(errno));
	if (r->o.verbose)
		say("[+%.3f ms] stopping", (double)(mono_ns() - r->t0_ns) / 1e6);
}

static void on_signal_byte(recorder *r, char sig)
{
	if (sig == SIGCHLD) {
		reap(r, 0);
		if (r->child_done)
			send_stop(r);
		return;
	}
	/* SIGINT, SIGTERM: without a command, stop; with one, pass SIGTERM on (a terminal's
	 * Ctrl-C already reached the whole process group) and stop when it ends. */
	if (r->child <= 0)
		send_stop(r);
	else if (sig == SIGTERM && !r->child_done)
		kill(r->child, SIGTERM);
}

/* Until CTL_STOPPED: progress, signals, the command's end, --duration. */
static int run_loop(recorder *r)
{
	int64_t deadline = r->o.duration > 0 ? mono_ns() + (int64_t)(r->o.duration * 1e9) : 0;
	for (;;) {
		struct pollfd p[2] = { { .fd = r->ctl, .events = POLLIN },
				       { .fd = sig_pipe[0], .events = POLLIN } };
		if (poll(p, 2, 100) < 0 && errno != EINTR)
			return manager_lost(r, strerror(errno));
		if (p[1].revents) {
			char sigs[16];
			ssize_t n = read(sig_pipe[0], sigs, sizeof(sigs));
			for (ssize_t i = 0; i < n; i++)
				on_signal_byte(r, sigs[i]);
		}
		reap(r, 0);
		if (r->child > 0 && r->child_done)
			send_stop(r);
		int64_t now = mono_ns();
		if (deadline && now >= deadline)
			send_stop(r);
		if (r->stop_sent && now - r->heard_ns > (int64_t)(r->o.manager_timeout * 1e9))
			return manager_silent(r);
		if (!p[0].revents)
			continue;
		nt_wire_msg msg;
		const char *why = NULL;
		int got = recv_msg(r->ctl, &msg, 0, &why);
		if (got < 0)
			return manager_lost(r, why);
		if (got == 0)
			continue;
		r->heard_ns = now;
		if (msg.type == NT_WIRE_CTL_PROGRESS)
			progress(r, &msg);
		else if (msg.type == NT_WIRE_CTL_STOPPED ||
			 (msg.type == NT_WIRE_CTL_END && r->stop_sent && (int64_t)msg.a != -2))
			return finished(r, &msg);
	}
}

static int record(recorder *r)
{
	r->tty = isatty(2);
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		say("pipe: %s", strerror(errno));
		return EXIT_FAILED;
	}
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int rc = EXIT_FAILED;
	if (make_output(r) != 0)
		return EXIT_FAILED;
	if (connect_manager(r, 1) != 0 || start_trace(r) != 0) {
		drop_output(r);
		stop_embedded(r);
		return EXIT_FAILED;
	}
	int spawn_failed = r->o.command != NULL && spawn(r) != 0;
	if (spawn_failed)
		send_stop(r);
	rc = run_loop(r);
	if (spawn_failed && rc == 0)
		rc = EXIT_FAILED;
	if (r->child > 0 && !r->child_done)
		reap(r, 1);
	close(r->ctl);
	stop_embedded(r);
	drop_output(r);
	return rc;
}

int main(int argc, char **argv)
{
	recorder r;
	memset(&r, 0, sizeof(r));
	r.ctl = r.out_fd = -1;
	r.t0_ns = mono_ns();
	if (nt_record_parse_options(argc, argv, &r.o) != 0) {
		fprintf(stderr, "Try 'trace-record --help'.\n");
		return EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	if (r.o.list)
		return do_list(&r);
	return record(&r);
}
