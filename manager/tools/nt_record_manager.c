/*
 * nt_record_manager.c - the manager trace-record speaks to: the one on the default socket
 * once nt_manager_connect() has checked that the socket's directory and the server are the
 * user's (else the output file and the providers would go to whoever planted the socket),
 * or, when none answers there, the manager core run on a thread on a private socket in a
 * fresh 0700 directory (the embedded default); and the controller messages to it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nt_recorder.h"
#include "nt_stream_ship.h"
#include "runtime/nt_sock.h"
#include "runtime/nt_term_escape.h"

#define CONNECT_TIMEOUT_MS 2000 /* a manager whose accept queue stays full this long is stuck */
#define EMBEDDED_JOIN_S 10 /* an embedded manager asked to stop ends within its stop budget */

int64_t nt_record_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int nt_record_send(int sock, const nt_wire_msg *msg, int fd)
{
	int err = nt_sock_send(sock, msg, sizeof(*msg), &fd, fd >= 0 ? 1 : 0, 0);
	if (err == 0)
		return 0;
	errno = -err; /* the callers say strerror(errno) */
	return -1;
}

/* One message from the manager within timeout_ms: 1, 0 on timeout, -1 when the manager
 * closed or sent something malformed (why says which). */
int nt_record_recv(int sock, nt_wire_msg *msg, int timeout_ms, const char **why)
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
		fprintf(stderr, "trace-record: [+%.3f ms] %s\n", (double)(nt_record_now_ns() - r->t0_ns) / 1e6,
			line);
}

static void *embedded_main(void *arg)
{
	nt_manager_run(arg);
	return NULL;
}

#define PRIVATE_DIR_PREFIX "nanotrace-record-" /* then mkdtemp's 6 characters */

/* The private socket directories earlier trace-records left when they were killed (SIGKILL
 * leaves no chance to remove one): the user's, 0700, named as ours are, in the same place,
 * holding a socket no one listens on any more (ECONNREFUSED: its manager is gone). A
 * directory still being set up has no socket yet and is left alone. */
static void remove_stale_dirs(recorder *r, const char *tmp)
{
	DIR *d = opendir(tmp);
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, PRIVATE_DIR_PREFIX, strlen(PRIVATE_DIR_PREFIX)) != 0 ||
		    strlen(e->d_name) != strlen(PRIVATE_DIR_PREFIX) + 6)
			continue;
		char dir[PATH_MAX], sock[PATH_MAX + 32], why[256];
		if (snprintf(dir, sizeof(dir), "%s/%s", tmp, e->d_name) >= (int)sizeof(dir))
			continue;
		snprintf(sock, sizeof(sock), "%s/%s", dir, NT_MANAGER_SOCKET_NAME);
		struct stat st;
		if (nt_sock_dir_private(sock, why, sizeof(why)) != 0 || lstat(sock, &st) != 0 ||
		    !S_ISSOCK(st.st_mode))
			continue;
		int fd = nt_sock_connect(sock, 0);
		if (fd >= 0)
			close(fd);
		if (fd != -ECONNREFUSED)
			continue;
		if (unlink(sock) == 0 && rmdir(dir) == 0 && r->o.verbose)
			say("removed '%s', the socket directory of a trace-record that was killed", dir);
	}
	closedir(d);
}

/* Connects to the manager on the default path, or starts the embedded one. -1 when none
 * answers (and none may be embedded), -2 when the one there is refused (said here): the
 * socket's directory or the server belongs to someone else, who would get the output file
 * and every provider's registration. */
int nt_record_connect(recorder *r, int may_embed)
{
	char why[512], refused[512] = "";
	int shared = nt_manager_socket_path(r->socket_path, sizeof(r->socket_path), why,
					    sizeof(why));
	if (shared < 0) {
		say("%s", why);
		return -1;
	}
	r->ctl = nt_manager_connect(r->socket_path, CONNECT_TIMEOUT_MS, why, sizeof(why));
	/* The shared /tmp default is refused when another user squats it (their directory, a
	 * link): a recording needs no shared socket, so it goes on with a private manager. */
	if (r->ctl == -2 && !(may_embed && shared == NT_MANAGER_PATH_SHARED)) {
		say("not using the manager at %s: %s", r->socket_path, why);
		return -2;
	}
	if (r->ctl == -2)
		snprintf(refused, sizeof(refused), "%s", why);
	if (r->ctl >= 0) {
		if (r->o.verbose)
			say("[+%.3f ms] using the manager at %s", (double)(nt_record_now_ns() - r->t0_ns) / 1e6,
			    r->socket_path);
		return 0;
	}
	if (!may_embed)
		return -1;
	const char *tmp = getenv("TMPDIR");
	remove_stale_dirs(r, tmp && tmp[0] == '/' ? tmp : "/tmp");
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
				  .verbose = r->o.verbose,
				  /* streaming sections shipped as they are saved; the others as
				   * the bundle holds them (nt_record_ship.c) */
				  .on_stream = r->ship ? nt_stream_ship : NULL, .stream_ctx = r->ship };
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
	if (refused[0] != '\0')
		say("not using the default socket: %s; recording with a private manager at %s",
		    refused, r->socket_path);
	else if (r->o.verbose)
		say("[+%.3f ms] no manager at the default socket: running one at %s",
		    (double)(nt_record_now_ns() - r->t0_ns) / 1e6, r->socket_path);
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
int nt_record_stop_embedded(recorder *r)
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

int nt_record_list(recorder *r)
{
	int rc = nt_record_connect(r, 0);
	if (rc == -2)
		return EXIT_FAILED;
	if (rc != 0) {
		say("no manager answers at %s: no providers are registered", r->socket_path);
		return 0;
	}
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_CTL_LIST);
	if (nt_record_send(r->ctl, &msg, -1) != 0) {
		say("cannot ask the manager: %s", strerror(errno));
		return EXIT_FAILED;
	}
	printf("%8s  %-12s  %s\n", "PID", "STATE", "NAME");
	for (;;) {
		const char *why = "no answer within 5 s";
		if (nt_record_recv(r->ctl, &msg, 5000, &why) != 1) {
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
		nt_wire_str(msg.name, msg.name_len, name);
		printf("%8u  %-12s  %s\n", msg.pid, nt_provider_state_name(msg.a),
		       nt_term_escape_str(name, sizeof(name), name));
	}
}

int nt_record_start(recorder *r)
{
	nt_wire_msg msg;
	for (int i = 0; i < r->o.nproviders; i++) {
		nt_wire_init(&msg, NT_WIRE_CTL_SELECT);
		nt_wire_set_name(&msg, r->o.providers[i]);
		if (nt_record_send(r->ctl, &msg, -1) != 0)
			goto lost;
	}
	nt_wire_init(&msg, NT_WIRE_CTL_START);
	msg.a = (uint64_t)r->o.mode;
	msg.b = r->o.buffer_size;
	msg.d = nt_wire_start_d((uint32_t)r->o.disposition, r->o.compression);
	nt_wire_set_text(&msg, r->o.categories);
	if (nt_record_send(r->ctl, &msg, r->out_fd) != 0)
		goto lost;
	for (;;) {
		const char *why = "no answer to CTL_START within 10 s";
		if (nt_record_recv(r->ctl, &msg, 10000, &why) != 1) {
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
		say("[+%.3f ms] trace started: %llu providers", (double)(nt_record_now_ns() - r->t0_ns) / 1e6,
		    (unsigned long long)msg.a);
	return 0;
lost:
	say("cannot talk to the manager: %s", strerror(errno));
	return -1;
}

void nt_record_send_stop(recorder *r)
{
	if (r->stop_sent)
		return;
	nt_wire_msg msg;
	nt_wire_init(&msg, NT_WIRE_CTL_STOP);
	r->stop_sent = 1;
	r->heard_ns = nt_record_now_ns(); /* the manager's silence counts from here at the earliest */
	if (nt_record_send(r->ctl, &msg, -1) != 0 && r->o.verbose)
		say("sending CTL_STOP: %s", strerror(errno));
	if (r->o.verbose)
		say("[+%.3f ms] stopping", (double)(nt_record_now_ns() - r->t0_ns) / 1e6);
}
