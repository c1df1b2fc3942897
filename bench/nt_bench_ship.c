/*
 * nt_bench_ship.c - live OTLP shipping (ship/nt_ship.h, issue 27): spans per second one
 * shipper exports and sends (the reader's nt_otlp_export, the spool's files written and
 * synced, libcurl's POSTs) and bytes per span on the wire, with gzip and without, in the
 * same run, interleaved, median of the repetitions.
 *
 *   nt_bench_ship [--events N] [--reps R] [--json]
 *
 * The archive: N iterations of the mixed shape (a Begin/End span holding an instant with two
 * integer arguments: one span with one span event each), recorded once. The receiver: a
 * minimal OTLP/HTTP server on a loopback thread of this process that reads each request
 * whole and answers 200 with an empty body, so the figure is the shipper's, not a
 * collector's. The spool lives in $TMPDIR (its fdatasync per request is part of the cost).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>

#include "nt_bench_json.h"
#include "nt_bench_opts.h"
#include "nt_bench_scratch.h"
#include "nt_bench_util.h"
#include "ship/nt_ship.h"

/* One connection's requests until it closes: headers, Content-Length, the body, 200. */
static void serve(int c)
{
	static char buf[1 << 20];
	size_t have = 0;
	for (;;) {
		char *end;
		while ((end = memmem(buf, have, "\r\n\r\n", 4)) == NULL) {
			ssize_t n = read(c, buf + have, sizeof(buf) - have);
			if (n <= 0)
				return;
			have += (size_t)n;
		}
		size_t head = (size_t)(end - buf) + 4, body = 0;
		const char *cl = strcasestr(buf, "content-length:");
		if (cl != NULL && cl < end)
			body = strtoul(cl + 15, NULL, 10);
		size_t need = head + body;
		if (need > sizeof(buf))
			return; /* no request of the exporter's is that large */
		while (have < need) {
			ssize_t n = read(c, buf + have, sizeof(buf) - have);
			if (n <= 0)
				return;
			have += (size_t)n;
		}
		static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
					 "Content-Length: 0\r\n\r\n";
		if (write(c, ok, sizeof(ok) - 1) != (ssize_t)sizeof(ok) - 1)
			return;
		memmove(buf, buf + need, have - need);
		have -= need;
	}
}

static void *receiver(void *arg)
{
	int l = *(int *)arg, c;
	while ((c = accept(l, NULL, NULL)) >= 0) {
		serve(c);
		close(c);
	}
	return NULL;
}

static int record(const char *path, uint64_t iterations)
{
	nt_config cfg;
	nt_config_init(&cfg);
	cfg.buffer_size = (size_t)(iterations * 80 + (16u << 20)); /* oneshot: room for all */
	if (nt_start(&cfg) != NT_OK)
		return fprintf(stderr, "nt_bench_ship: %s\n", nt_last_error()), 0;
	for (uint64_t i = 0; i < iterations; i++) {
		NT_BEGIN("bench", "iteration");
		NT_INSTANT("bench", "point", NT_I64("x", (int64_t)i), NT_I64("y", (int64_t)(i * 7)));
		NT_END("bench", "iteration");
	}
	if (nt_finish(path) != NT_OK)
		return fprintf(stderr, "nt_bench_ship: %s\n", nt_last_error()), 0;
	return 1;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

/* One shipment of the archive: seconds, and the counts. */
static double ship_once(const char *url, int compression, const char *archive, nt_ship_counts *c)
{
	char spool[4096];
	nt_bench_scratch(spool, sizeof(spool), "spool-XXXXXX");
	if (mkdtemp(spool) == NULL)
		return -1;
	nt_ship_config cfg;
	nt_ship_config_init(&cfg);
	cfg.endpoint = url;
	cfg.compression = compression;
	cfg.spool_dir = spool;
	cfg.spool_cap = (uint64_t)1 << 40;
	char why[512];
	int fd = open(archive, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint64_t t0 = now_ns();
	double t = -1;
	nt_ship *s = fd >= 0 && fstat(fd, &st) == 0 ? nt_ship_new(&cfg, why, sizeof(why)) : NULL;
	if (s != NULL && nt_ship_section(s, fd, 0, (uint64_t)st.st_size, "bench") == 0) {
		nt_ship_close(s, 600000, c);
		t = (double)(now_ns() - t0) / 1e9;
		if (c->left != 0 || c->sent == 0)
			t = -1;
	} else {
		fprintf(stderr, "nt_bench_ship: %s\n", s == NULL ? why : "nt_ship_section failed");
		nt_ship_close(s, 0, NULL);
	}
	if (fd >= 0)
		close(fd);
	nftw(spool, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	return t;
}

int main(int argc, char **argv)
{
	uint64_t events = 200000, nreps = 5;
	int json = 0;
	const nt_bench_opt opts[] = {
		NT_BENCH_NUMBER("--events", "N", &events, 1, NT_BENCH_MANY),
		NT_BENCH_NUMBER("--reps", "N", &nreps, 1, 64),
		NT_BENCH_FLAG("--json", &json),
	};
	if (!NT_BENCH_PARSE("nt_bench_ship", argc, argv, opts))
		return 2;
	int reps = (int)nreps;
	char archive[4096];
	nt_bench_scratch(archive, sizeof(archive), "ship.ntrace");
	if (!record(archive, events))
		return 1;
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 16) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &alen) != 0)
		return perror("nt_bench_ship: listen"), 1;
	pthread_t rt;
	pthread_create(&rt, NULL, receiver, &l);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(a.sin_port));
	static const int modes[2] = { NT_SHIP_GZIP, NT_SHIP_NONE };
	double t[2][64], spans[2] = { 0, 0 }, bytes[2] = { 0, 0 };
	int ok = 1;
	for (int r = 0; r < reps && ok; r++)
		for (int m = 0; m < 2 && ok; m++) {
			nt_ship_counts c;
			t[m][r] = ship_once(url, modes[m], archive, &c);
			ok = t[m][r] > 0;
			spans[m] = (double)c.sent_spans;
			bytes[m] = (double)c.sent_bytes;
		}
	shutdown(l, SHUT_RDWR);
	close(l);
	pthread_join(rt, NULL);
	unlink(archive);
	double rate[2], per_span[2];
	for (int m = 0; m < 2; m++) {
		rate[m] = ok ? spans[m] / median(t[m], reps) : 0;
		per_span[m] = ok && spans[m] > 0 ? bytes[m] / spans[m] : 0;
	}
	const char *why = "a shipment failed or left requests in the spool";
	fprintf(stderr, "nt_bench_ship: %llu spans; gzip %.0f spans/s, %.1f bytes/span; "
		"none %.0f spans/s, %.1f bytes/span\n", (unsigned long long)spans[0], rate[0],
		per_span[0], rate[1], per_span[1]);
	if (json) {
		nt_json j;
		nt_json_begin(&j, stdout);
		nt_json_num(&j, "ship_spans_s_gzip", rate[0], ok, why);
		nt_json_num(&j, "ship_bytes_per_span_gzip", per_span[0], ok, why);
		nt_json_num(&j, "ship_spans_s_none", rate[1], ok, why);
		nt_json_num(&j, "ship_bytes_per_span_none", per_span[1], ok, why);
		nt_json_num(&j, "ship_gzip_size_ratio", per_span[1] / per_span[0], ok, why);
		nt_json_end(&j);
	}
	return ok ? 0 : 1;
}
