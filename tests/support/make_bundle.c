/* make_bundle - write a bundle (format/nt_bundle.h) from archives, as trace-record's manager
 * would, so the reader's tests need no manager:
 *
 *   make_bundle OUT [--end STATE|none] [--end-message TEXT] SECTION...
 *
 * SECTION is ARCHIVE[,state=S][,name=N][,pid=P][,msg=M][,provider=I]: ARCHIVE is a file
 * ("-" for a section with no archive saved); S is a state name of nt_bundle.h
 * (finished, exited, killed, timed_out, damaged; default finished); name, pid and mode
 * default to the archive header's. --end none leaves the END frame out (a recording cut
 * short); --end STATE writes it with that state (default finished). Exit 0, or 1 with a
 * message naming what was wrong. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace_reader.h>
#include "bundle_writer.h"

static int state_of(const char *s)
{
	static const char *const names[] = { "", "finished", "exited", "killed", "timed_out",
					     "damaged", "manager_lost" };
	for (int i = 1; i < 7; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return strtol(s, NULL, 0) > 0 ? (int)strtol(s, NULL, 0) : -1; /* a raw value: lies */
}

static void *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *p = malloc(n > 0 ? (size_t)n : 1);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*size = (size_t)n;
	return p;
}

/* Parse one SECTION argument (modified in place) and write it; 0 or 1 (message printed). */
static int add_section(FILE *out, char *arg, uint32_t provider)
{
	bw_section s = { .end_state = NT_SECTION_FINISHED, .provider_id = provider };
	char *save, *path = strtok_r(arg, ",", &save), *kv;
	long pid = -1;
	int mode = -1;
	void *data = NULL;
	while ((kv = strtok_r(NULL, ",", &save)) != NULL) {
		char *v = strchr(kv, '=');
		if (v == NULL)
			goto bad;
		*v++ = '\0';
		if (strcmp(kv, "state") == 0 && state_of(v) > 0)
			s.end_state = (uint8_t)state_of(v);
		else if (strcmp(kv, "name") == 0)
			s.name = v;
		else if (strcmp(kv, "msg") == 0)
			s.message = v;
		else if (strcmp(kv, "pid") == 0)
			pid = strtol(v, NULL, 10);
		else if (strcmp(kv, "mode") == 0)
			mode = atoi(v);
		else if (strcmp(kv, "provider") == 0)
			s.provider_id = (uint32_t)strtoul(v, NULL, 10);
		else
			goto bad;
	}
	static char names[256][NT_HDR_MAX_STRING + 1];
	if (strcmp(path, "-") != 0) {
		if ((data = read_file(path, &s.size)) == NULL) {
			fprintf(stderr, "make_bundle: %s: cannot read\n", path);
			return 1;
		}
		s.archive = data;
		nt_reader *r = nt_reader_open_memory(data, s.size, path, NULL);
		if (r != NULL) {
			s.pid = nt_reader_info(r)->pid;
			s.mode = nt_reader_info(r)->buffering_mode;
			snprintf(names[provider % 256], sizeof(names[0]), "%s", nt_reader_info(r)->process_name);
			if (s.name == NULL)
				s.name = names[provider % 256];
			nt_reader_close(r);
		}
	}
	if (pid >= 0)
		s.pid = (uint32_t)pid;
	if (mode >= 0)
		s.mode = (uint8_t)mode;
	int rc = bw_section_write(out, &s);
	free(data);
	if (rc != 0)
		fprintf(stderr, "make_bundle: writing section %s failed\n", path);
	return rc != 0;
bad:
	fprintf(stderr, "make_bundle: bad section option '%s' (state, name, pid, msg, mode, provider)\n", kv);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: make_bundle OUT [--end STATE|none] [--end-message TEXT] SECTION...\n");
		return 1;
	}
	/* Private, and never through a link planted at the name. */
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (out == NULL) {
		perror(argv[1]);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	int end = NT_SECTION_FINISHED, rc = bw_preamble(out, (int64_t)time(NULL) * 1000000000);
	const char *end_msg = "";
	uint32_t n = 0;
	for (int i = 2; i < argc && rc == 0; i++) {
		if (strcmp(argv[i], "--end") == 0 && i + 1 < argc) {
			end = strcmp(argv[++i], "none") == 0 ? 0 : state_of(argv[i]);
			if (end < 0)
				rc = 1;
		} else if (strcmp(argv[i], "--end-message") == 0 && i + 1 < argc) {
			end_msg = argv[++i];
		} else {
			rc = add_section(out, argv[i], ++n);
		}
	}
	if (rc == 0 && end > 0)
		rc = bw_end(out, (uint8_t)end, n, end_msg);
	if (fclose(out) != 0)
		rc = 1;
	return rc != 0;
}
