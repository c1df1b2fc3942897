/*
 * nanotrace-manager - the trace manager daemon: providers register with it, trace-record
 * drives it (manager/core/nt_manager.h says what it does).
 *
 *   nanotrace-manager [--foreground] [--socket PATH] [--log FILE] [--verbose]
 *
 * By default it detaches (double fork, setsid) and logs to manager.log (0600) in its
 * socket's directory; --foreground keeps it attached and logs to stderr. SIGTERM and SIGINT
 * stop it cleanly: a trace in progress is finished, the socket removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "format/nt_format.h"
#include "runtime/nt_private_file.h"
#include "format/nt_wire.h"
#include "manager/core/nt_manager.h"
#include "ship/nt_ship.h"
#include "ship/nt_ship_trace2.h"
#include "runtime/nt_sock.h"
#include "nt_stream_ship.h"
#include "nt_size_arg.h"
#include "format/nt_version.h"

static nt_manager *the_manager; /* for the signal handler only */

static void on_signal(int sig)
{
	(void)sig;
	if (the_manager != NULL)
		nt_manager_stop(the_manager);
}

static void log_line(void *ctx, const char *line)
{
	FILE *f = ctx;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(f, "%02d:%02d:%02d.%06ld [%d] %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
		ts.tv_nsec / 1000, (int)getpid(), line);
	fflush(f);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nanotrace-manager [--foreground] [--socket PATH] [--log FILE] [--verbose]\n"
		"                         [--otlp | --otlp-endpoint URL] [--otlp-spool DIR]\n"
		"                         [--otlp-spool-size SIZE] [--trace2-event TARGET]\n"
		"The nanotrace trace manager: programs linking libnanotrace register with it when\n"
		"NANOTRACE_MANAGER names its socket; trace-record records them into one archive.\n"
		"  -f, --foreground  stay attached; log to stderr (unless --log)\n"
		"  -s, --socket PATH  listen on PATH (default: $NANOTRACE_MANAGER, else\n"
		"                 $XDG_RUNTIME_DIR/nanotrace/manager.sock, else\n"
		"                 /tmp/nanotrace-$UID/manager.sock; the directory must be yours, 0700;\n"
		"                 only the default socket's directory is created when missing)\n"
		"  -l, --log FILE  append the log to FILE (created 0600; a link or a file of another\n"
		"                 user is refused; default: manager.log in the socket's directory\n"
		"                 when detached)\n"
		"  -v, --verbose  log every provider's state change\n"
		"      --otlp-endpoint URL  also send each section written, as it is written (a\n"
		"                 streaming one as its buffers are saved), to\n"
		"                 an OpenTelemetry collector over OTLP/HTTP (URL/v1/traces,\n"
		"                 URL/v1/metrics; the OTEL_EXPORTER_OTLP_* variables apply), through\n"
		"                 a spool sent when the collector answers, also after a restart;\n"
		"                 what is sent, retried and dropped is logged\n"
		"      --otlp     the same, to the endpoint the variables name\n"
		"                 (OTEL_EXPORTER_OTLP_ENDPOINT, _TRACES_ENDPOINT, _METRICS_ENDPOINT;\n"
		"                 default http://localhost:4318)\n"
		"      --otlp-spool DIR  the spool (default $XDG_STATE_HOME/nanotrace/otlp-spool,\n"
		"                 else ~/.local/state/nanotrace/otlp-spool; made 0700)\n"
		"      --otlp-spool-size SIZE  its cap in bytes, or with K, M, G (default 64M)\n"
		"      --trace2-event TARGET  while a trace records a provider, send its Trace2\n"
		"                 messages as Git's EVENT lines to TARGET,\n"
		"                 af_unix:[stream:|dgram:]<absolute path> (trace2receiver's socket),\n"
		"                 one message per line, as NANOTRACE_EVENT would from the program;\n"
		"                 a target that cannot be reached is one warning per provider in\n"
		"                 the log\n"		"  -h, --help     this text\n"
		"  -V, --version  the version, the manager protocol and archive format\n"
		"Exit: 0 stopped by SIGTERM/SIGINT, 1 usage, 2 cannot listen or run.\n");
}

/* Appended to, never truncated; created 0600; a symbolic link there is refused (O_NOFOLLOW
 * fails with ELOOP), and so is a file that is not the user's: the manager's log lines would
 * go to whoever made it. O_NONBLOCK: a FIFO planted there must not hang the start. */
static FILE *open_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
		      0600);
	if (fd < 0) {
		fprintf(stderr, "nanotrace-manager: cannot open log '%s': %s\n", path,
			nt_private_strerror(errno));
		return NULL;
	}
	struct stat st;
	int flags = fcntl(fd, F_GETFL);
	if (fstat(fd, &st) != 0 || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
		fprintf(stderr, "nanotrace-manager: cannot open log '%s': %s\n", path,
			strerror(errno));
		close(fd);
		return NULL;
	}
	if (st.st_uid != geteuid()) {
		fprintf(stderr, "nanotrace-manager: log '%s' is owned by uid %u, not by uid %u: "
			"refused\n", path, (unsigned)st.st_uid, (unsigned)geteuid());
		close(fd);
		return NULL;
	}
	return fdopen(fd, "a");
}

/* Double fork: the daemon is no session leader and cannot regain a terminal. The parent
 * returns only once the daemon listens (or says why it cannot), through a pipe. */
static int detach(int *ready_fd)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(pipefd[1]);
		char c = 2;
		ssize_t n = read(pipefd[0], &c, 1);
		_exit(n == 1 ? c : 2);
	}
	close(pipefd[0]);
	setsid();
	pid = fork();
	if (pid < 0)
		_exit(2);
	if (pid > 0)
		_exit(0); /* the first parent still waits on the pipe, kept by the grandchild */
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
	}
	if (chdir("/") != 0)
		return -1;
	*ready_fd = pipefd[1];
	return 0;
}

static void tell(int ready_fd, char code)
{
	if (ready_fd >= 0) {
		ssize_t n = write(ready_fd, &code, 1);
		(void)n;
		close(ready_fd);
	}
}

/* What could not start: one line on stderr (and in the log), the waiting parent told;
 * returns the exit status, 2. */
static int start_failed(FILE *log, int ready_fd, const char *what, const char *why)
{
	fprintf(stderr, "nanotrace-manager: %s%s\n", what, why);
	if (log != stderr)
		log_line(log, why);
	tell(ready_fd, 2);
	return 2;
}

/* --otlp-endpoint: the shipper (ship/nt_ship.h), its lines in the log. Started after
 * detach(): a fork() keeps no thread. */
static void ship_log(void *ctx, const char *line)
{
	char buf[1100];
	snprintf(buf, sizeof(buf), "otlp: %s", line);
	log_line(ctx, buf);
}

static void ship_section(void *ctx, int fd, uint64_t offset, uint64_t len, const char *name)
{
	nt_ship_section(ctx, fd, offset, len, name);
}

/* --trace2-event: each recording provider's buffer followed (ship/nt_ship_trace2.h). */
static void forward_recording(void *ctx, uint32_t id, int memfd, const char *name)
{
	if (memfd >= 0)
		nt_ship_trace2_start(ctx, id, memfd, name);
	else
		nt_ship_trace2_end(ctx, id);
}

typedef struct args {
	int foreground, verbose;
	const char *socket, *log;
	int otlp; /* --otlp or --otlp-endpoint */
	const char *otlp_endpoint, *otlp_spool;
	uint64_t otlp_spool_size;
	const char *trace2_event;
} args;

/* long options only */
enum { OPT_OTLP = 256, OPT_OTLP_ENDPOINT, OPT_OTLP_SPOOL, OPT_OTLP_SPOOL_SIZE, OPT_TRACE2_EVENT };


static nt_ship *start_shipper(const args *a, FILE *log, char *why, size_t whylen)
{
	nt_ship_config cfg;
	nt_ship_config_init(&cfg);
	cfg.endpoint = a->otlp_endpoint;
	cfg.spool_dir = a->otlp_spool;
	cfg.spool_cap = a->otlp_spool_size;
	cfg.log = ship_log;
	cfg.log_ctx = log;
	return nt_ship_new(&cfg, why, whylen);
}

/* Exports what was handed over, gives the spool the OTLP timeout (when `wait`), logs the
 * counts. */
static void stop_shipper(nt_ship *ship, FILE *log, int wait)
{
	if (ship == NULL)
		return;
	nt_ship_counts c;
	char line[1024];
	nt_ship_close(ship, wait ? nt_ship_timeout_ms(ship) : 0, &c);
	ship_log(log, nt_ship_summary(&c, line, sizeof(line)) + strlen("otlp: "));
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, args *a)
{
	static const struct option opts[] = {
		{ "foreground", no_argument, 0, 'f' }, { "socket", required_argument, 0, 's' },
		{ "log", required_argument, 0, 'l' },  { "verbose", no_argument, 0, 'v' },
		{ "help", no_argument, 0, 'h' },       { "version", no_argument, 0, 'V' },
		{ "otlp", no_argument, 0, OPT_OTLP },
		{ "otlp-endpoint", required_argument, 0, OPT_OTLP_ENDPOINT },
		{ "otlp-spool", required_argument, 0, OPT_OTLP_SPOOL },
		{ "otlp-spool-size", required_argument, 0, OPT_OTLP_SPOOL_SIZE },
		{ "trace2-event", required_argument, 0, OPT_TRACE2_EVENT },
		{ 0, 0, 0, 0 },
	};
	/* getopt_long names the program by argv[0] in its messages: the name, not the path it
	 * was run by. */
	char *slash = strrchr(argv[0], '/');
	if (slash != NULL && slash[1] != '\0')
		argv[0] = slash + 1;
	int c;
	while ((c = getopt_long(argc, argv, "fs:l:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'f': a->foreground = 1; break;
		case 's': a->socket = optarg; break;
		case 'l': a->log = optarg; break;
		case 'v': a->verbose = 1; break;
		case OPT_OTLP: a->otlp = 1; break;
		case OPT_OTLP_ENDPOINT: a->otlp = 1; a->otlp_endpoint = optarg; break;
		case OPT_OTLP_SPOOL: a->otlp_spool = optarg; break;
		case OPT_TRACE2_EVENT: a->trace2_event = optarg; break;
		case OPT_OTLP_SPOOL_SIZE:
			if (nt_size_arg(optarg, &a->otlp_spool_size) != 0 || a->otlp_spool_size == 0) {
				fprintf(stderr, "nanotrace-manager: --otlp-spool-size: '%s' is not a "
					"size (bytes, or with K, M, G)\nTry 'nanotrace-manager --help'.\n",
					optarg);
				return 1;
			}
			break;
		case 'h': usage(stdout); return 0;
		case 'V':
			printf("nanotrace-manager (nanotrace) %s\nspeaks manager protocol %u, "
			       "saves archive format %d.%d\n",
			       NT_VERSION_STRING, NT_WIRE_VERSION, NT_FORMAT_MAJOR, NT_FORMAT_MINOR);
			return 0;
		default: /* getopt_long named the option already */
			fprintf(stderr, "Try 'nanotrace-manager --help'.\n");
			return 1;
		}
	}
	if ((a->otlp_spool || a->otlp_spool_size) && !a->otlp) {
		fprintf(stderr, "nanotrace-manager: --otlp-spool and --otlp-spool-size go with "
				"--otlp or --otlp-endpoint\nTry 'nanotrace-manager --help'.\n");
		return 1;
	}
	int type;
	const char *t2_path, *t2_why = NULL;
	if (a->trace2_event != NULL &&
	    nt_sock_target_parse(a->trace2_event, &type, &t2_path, &t2_why) != 0) {
		fprintf(stderr, "nanotrace-manager: --trace2-event: '%s': %s\n"
				"Try 'nanotrace-manager --help'.\n", a->trace2_event,
			t2_why ? t2_why : "the path is too long for a Unix socket");
		return 1;
	}
	if (optind != argc) {
		fprintf(stderr, "nanotrace-manager: unexpected argument '%s'\n"
				"Try 'nanotrace-manager --help'.\n", argv[optind]);
		return 1;
	}
	return -1;
}

int main(int argc, char **argv)
{
	args a = { 0 };
	int done = parse_args(argc, argv, &a);
	if (done >= 0)
		return done;
	int foreground = a.foreground, verbose = a.verbose;
	const char *socket_opt = a.socket, *log_path = a.log;
	char path[PATH_MAX], why[512], deflog[PATH_MAX + 16];
	const char *env = getenv(NT_MANAGER_ENV);
	/* Only the default socket's directory is made when missing; one a user named
	 * (--socket, $NANOTRACE_MANAGER) must exist: a typo must not create directories. */
	int create_dir = socket_opt == NULL && (env == NULL || env[0] == '\0');
	if (socket_opt != NULL)
		snprintf(path, sizeof(path), "%s", socket_opt);
	else if (nt_manager_socket_path(path, sizeof(path), why, sizeof(why)) < 0) {
		fprintf(stderr, "nanotrace-manager: %s\n", why);
		return 2;
	}
	if (path[0] != '/') {
		fprintf(stderr, "nanotrace-manager: socket path '%s' is not absolute\n", path);
		return 1;
	}
	int ready_fd = -1;
	if (!foreground && detach(&ready_fd) != 0) {
		fprintf(stderr, "nanotrace-manager: cannot detach: %s\n", strerror(errno));
		return 2;
	}
	FILE *log = stderr;
	if (log_path == NULL && !foreground) {
		snprintf(deflog, sizeof(deflog), "%s", path);
		char *slash = strrchr(deflog, '/');
		snprintf(slash + 1, sizeof(deflog) - (size_t)(slash + 1 - deflog), "manager.log");
		if (nt_manager_check_dir(path, create_dir, why, sizeof(why)) == 0)
			log_path = deflog;
	}
	if (log_path != NULL && (log = open_log(log_path)) == NULL) {
		tell(ready_fd, 2);
		return 2;
	}
	nt_ship *ship = NULL;
	if (a.otlp && (ship = start_shipper(&a, log, why, sizeof(why))) == NULL)
		return start_failed(log, ready_fd, a.otlp_endpoint ? "--otlp-endpoint: " : "--otlp: ",
				    why);
	nt_ship_trace2 *t2 = NULL;
	if (a.trace2_event && (t2 = nt_ship_trace2_new(a.trace2_event, why, sizeof(why))) == NULL) {
		stop_shipper(ship, log, 0);
		return start_failed(log, ready_fd, "--trace2-event: ", why);
	}
	nt_manager_config cfg = { .socket_path = path, .log = log_line, .log_ctx = log,
				  .verbose = verbose, .create_dir = create_dir,
				  .on_section = ship ? ship_section : NULL, .section_ctx = ship,
				  .on_recording = t2 ? forward_recording : NULL,
				  .recording_ctx = t2,
				  .on_stream = ship ? nt_stream_ship : NULL, .stream_ctx = ship };
	nt_manager *m = nt_manager_new(&cfg, why, sizeof(why));
	if (m == NULL) {
		nt_ship_trace2_free(t2);
		stop_shipper(ship, log, 0);
		return start_failed(log, ready_fd, "", why);
	}
	the_manager = m;
	/* Each provider holds a connection, a FIFO, a buffer and (streaming) a stream file. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	tell(ready_fd, 0);
	if (!foreground) {
		/* the forwarders' warnings (one line each, on stderr) go to the log */
		int null = t2 && log != stderr ? fileno(log) : open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0)
			dup2(null, 2);
	}
	int rc = nt_manager_run(m);
	the_manager = NULL;
	nt_manager_free(m);
	nt_ship_trace2_free(t2);
	stop_shipper(ship, log, 1);
	log_line(log, rc == 0 ? "stopped" : "stopped after an error");
	return rc == 0 ? 0 : 2;
}
