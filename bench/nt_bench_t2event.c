/*
 * nt_bench_t2event - what NANOTRACE_EVENT=af_unix:... (Git's Trace2 socket target) costs a
 * traced program (issue 27): the Trace2 macros' ns per message on the calling thread with
 * the target on, beside recording to an archive alone, in the same run; and the CPU the
 * forwarder (reader/trace2/nt_trace2_forward.c: a poll copies and reads the whole arena)
 * spends in a long-running program that writes little.
 *
 * Each measurement is a fresh process (the Trace2 layer reads its variables once): this
 * program again with --child, under one of three settings, taken in turn each round:
 *   archive  NANOTRACE=<file> (circular, the default 4 MiB arena);
 *   target   the same plus NANOTRACE_EVENT=af_unix:stream:<socket of this program>;
 *   private  NANOTRACE_EVENT alone (the private 1 MiB arena).
 * A thread of this program reads the socket and counts lines. The busy part: --pairs
 * region_enter/region_leave pairs as fast as they go (ns per message, median of --rounds);
 * the quiet part: one pair per ms for --quiet-ms (the process's CPU time over its wall time,
 * which the forwarder's polls make grow). The children find libnanotrace-reader through
 * LD_LIBRARY_PATH=--reader-dir (default: ../reader beside this program's folder).
 *
 *   nt_bench_t2event [--rounds N] [--pairs N] [--quiet-ms MS] [--reader-dir DIR] [--json]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nanotrace/nanotrace_trace2.h>

#include "nt_bench_json.h"
#include "nt_bench_opts.h"
#include "nt_bench_util.h"

enum { ARCHIVE, TARGET, PRIVATE, NSETTINGS };
static const char *const setting_name[NSETTINGS] = { "archive", "target", "private" };

/* ---- the traced child ------------------------------------------------------------------- */

static double cpu_ns(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

static double thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Prints "<CPU ns per message of the calling thread> <wall ns per message> <cpu/wall of
 * the quiet part>". The quiet part starts after SETTLE_MS, when the forwarder has sent what
 * the busy part left (it costs then what its polls of a full arena cost). */
#define SETTLE_MS 1500
static int child(long pairs, long quiet_ms)
{
	NT_T2_INITIALIZE_CLOCK();
	NT_T2_INITIALIZE("bench");
	const char *argv[] = { "nt_bench_t2event", "--child", NULL };
	NT_T2_CMD_START(argv);
	uint64_t t0 = now_ns();
	double tc0 = thread_cpu_ns();
	for (long i = 0; i < pairs; i++) {
		NT_T2_REGION_ENTER("bench", "pair", -1);
		NT_T2_REGION_LEAVE("bench", "pair", -1);
	}
	double cpu = (thread_cpu_ns() - tc0) / (double)(2 * pairs);
	double ns = (double)(now_ns() - t0) / (double)(2 * pairs);
	usleep(SETTLE_MS * 1000);
	double c0 = cpu_ns();
	uint64_t w0 = now_ns();
	for (long ms = 0; ms < quiet_ms; ms++) {
		NT_T2_REGION_ENTER("bench", "quiet", -1);
		NT_T2_REGION_LEAVE("bench", "quiet", -1);
		usleep(1000);
	}
	double share = (cpu_ns() - c0) / (double)(now_ns() - w0);
	printf("%.3f %.3f %.5f\n", cpu, ns, share);
	fflush(stdout);
	return NT_T2_CMD_EXIT(0);
}

/* ---- the listener ----------------------------------------------------------------------- */

static int listen_fd;
static unsigned long lines_received;

static void *drain(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept(listen_fd, NULL, NULL);
		if (c < 0)
			return NULL;
		char buf[1 << 16];
		ssize_t n;
		while ((n = read(c, buf, sizeof(buf))) > 0) {
			unsigned long lines = 0;
			for (ssize_t i = 0; i < n; i++)
				lines += buf[i] == '\n';
			__atomic_add_fetch(&lines_received, lines, __ATOMIC_RELAXED);
		}
		close(c);
	}
}

/* ---- the runs --------------------------------------------------------------------------- */

static int run_child(const char *self, int setting, const char *dir, const char *sock,
		     long pairs, long quiet_ms, double *cpu, double *ns, double *share)
{
	char archive[PATH_MAX], target[PATH_MAX + 32], p[32], q[32];
	snprintf(archive, sizeof(archive), "%s/archive.ntrace", dir);
	snprintf(target, sizeof(target), "af_unix:stream:%s", sock);
	snprintf(p, sizeof(p), "%ld", pairs);
	snprintf(q, sizeof(q), "%ld", quiet_ms);
	unlink(archive);
	unsetenv("NANOTRACE");
	unsetenv("NANOTRACE_EVENT");
	setenv("NANOTRACE_MODE", "circular", 1);
	if (setting != PRIVATE)
		setenv("NANOTRACE", archive, 1);
	if (setting != ARCHIVE)
		setenv("NANOTRACE_EVENT", target, 1);
	char *argv[] = { (char *)self, "--child", p, q, NULL };
	char buf[128];
	if (nt_bench_run_output(argv, buf, sizeof(buf)) != 0 ||
	    sscanf(buf, "%lf %lf %lf", cpu, ns, share) != 3)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	int json = 0;
	char reader_dir[PATH_MAX] = "";
	if (argc >= 4 && strcmp(argv[1], "--child") == 0)
		return child(atol(argv[2]), atol(argv[3]));
	uint64_t nrounds = 7, npairs = 200000, nquiet = 2000;
	const char *reader_arg = NULL;
	const nt_bench_opt opts[] = {
		NT_BENCH_NUMBER("--rounds", "N", &nrounds, 1, 99),
		NT_BENCH_NUMBER("--pairs", "N", &npairs, 1, 1000000000),
		NT_BENCH_NUMBER("--quiet-ms", "MS", &nquiet, 0, 3600000),
		NT_BENCH_TEXT("--reader-dir", "DIR", &reader_arg),
		NT_BENCH_FLAG("--json", &json),
	};
	if (!NT_BENCH_PARSE("nt_bench_t2event", argc, argv, opts))
		return 2;
	long rounds = (long)nrounds, pairs = (long)npairs, quiet_ms = (long)nquiet;
	if (reader_arg != NULL)
		snprintf(reader_dir, sizeof(reader_dir), "%s", reader_arg);
	char self[PATH_MAX];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0)
		return 1;
	self[sl] = '\0';
	if (reader_dir[0] == '\0')
		snprintf(reader_dir, sizeof(reader_dir), "%.*s/../reader",
			 (int)(strrchr(self, '/') - self), self);
	setenv("LD_LIBRARY_PATH", reader_dir, 1);

	char dir[] = "/tmp/nt_bench_t2event-XXXXXX";
	if (mkdtemp(dir) == NULL) {
		perror("nt_bench_t2event: mkdtemp");
		return 1;
	}
	setenv("TMPDIR", dir, 1);
	setenv("XDG_RUNTIME_DIR", dir, 1);
	char sock[PATH_MAX];
	snprintf(sock, sizeof(sock), "%s/listener", dir);
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (strlen(sock) >= sizeof(addr.sun_path))
		return 1;
	memcpy(addr.sun_path, sock, strlen(sock) + 1);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(listen_fd, 16) != 0) {
		perror("nt_bench_t2event: listener");
		return 1;
	}
	pthread_t th;
	pthread_create(&th, NULL, drain, NULL);

	double cpu[NSETTINGS][99], ns[NSETTINGS][99], share[NSETTINGS][99];
	for (long r = 0; r < rounds; r++)
		for (int s = 0; s < NSETTINGS; s++)
			if (run_child(self, s, dir, sock, pairs, quiet_ms, &cpu[s][r], &ns[s][r],
				      &share[s][r]) != 0) {
				fprintf(stderr, "nt_bench_t2event: the %s child failed\n",
					setting_name[s]);
				return 1;
			}
	unlink(sock);
	char archive[PATH_MAX];
	snprintf(archive, sizeof(archive), "%s/archive.ntrace", dir);
	unlink(archive);
	int dir_left = rmdir(dir) != 0; /* the private arenas left nothing */

	double med_cpu[NSETTINGS], med_ns[NSETTINGS], med_share[NSETTINGS];
	for (int s = 0; s < NSETTINGS; s++) {
		med_cpu[s] = median(cpu[s], (int)rounds);
		med_ns[s] = median(ns[s], (int)rounds);
		med_share[s] = median(share[s], (int)rounds);
	}
	/* The criterion: the calling thread's own CPU time (what it pays, preemption by the
	 * forwarder or anything else on a loaded machine left out); wall time beside it. */
	double ratio = med_cpu[TARGET] / med_cpu[ARCHIVE];
	double pratio = med_cpu[PRIVATE] / med_cpu[ARCHIVE];
	double wratio = med_ns[TARGET] / med_ns[ARCHIVE];
	double extra = med_share[TARGET] - med_share[ARCHIVE];
	double pextra = med_share[PRIVATE] - med_share[ARCHIVE];
	if (json) {
		nt_json j;
		nt_json_begin(&j, stdout);
		nt_json_num(&j, "t2_event_archive_ns", med_cpu[ARCHIVE], 1, NULL);
		nt_json_num(&j, "t2_event_target_ns", med_cpu[TARGET], 1, NULL);
		nt_json_num(&j, "t2_event_private_ns", med_cpu[PRIVATE], 1, NULL);
		nt_json_num(&j, "t2_event_target_ratio", ratio, 1, NULL);
		nt_json_num(&j, "t2_event_target_wall_ratio", wratio, 1, NULL);
		nt_json_num(&j, "t2_event_private_ratio", pratio, 1, NULL);
		nt_json_num(&j, "t2_event_forward_cpu_pct", 100 * extra, 1, NULL);
		nt_json_num(&j, "t2_event_private_forward_cpu_pct", 100 * pextra, 1, NULL);
		nt_json_num(&j, "t2_event_lines_received",
			    (double)__atomic_load_n(&lines_received, __ATOMIC_RELAXED), 1, NULL);
		nt_json_end(&j);
	} else {
		printf("Trace2 region pairs, %ld per round, median of %ld rounds:\n", pairs, rounds);
		for (int s = 0; s < NSETTINGS; s++)
			printf("  %-8s %7.2f ns/message of the thread's CPU (%7.2f wall)  quiet "
			       "part: %5.2f%% of a core\n", setting_name[s], med_cpu[s], med_ns[s],
			       100 * med_share[s]);
		printf("  target / archive: %.3f (wall %.3f)   private / archive: %.3f\n", ratio,
		       wratio, pratio);
		printf("  forwarder CPU while quiet: +%.2f%% (archive), +%.2f%% (private) of a core\n",
		       100 * extra, 100 * pextra);
		printf("  lines received: %lu%s\n", __atomic_load_n(&lines_received, __ATOMIC_RELAXED),
		       dir_left ? "  (files were left in the work directory)" : "");
	}
	return dir_left;
}
