/*
 * nt_record_output.c - the bundle file: created beside -o FILE under a random name
 * (runtime/nt_private_file.h: mkostemp, 0600), written by the manager through the descriptor
 * passed with CTL_START, and renamed onto FILE at the end; a symbolic link at FILE is
 * refused, before recording and again at the rename, never followed or replaced. And each
 * way a recording ends: finished, its manager lost, its manager silent.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/nt_bundle.h"
#include "runtime/nt_private_file.h"
#include "nt_recorder.h"
#include "nt_record_bundle.h"

/* Temporary bundles beside -o FILE that no process holds any more: a trace-record killed
 * (SIGKILL) with its embedded manager leaves its recording there, under the hidden name no
 * one would find. Each holder keeps a lock on its file (flock: the manager's copy of the
 * descriptor shares it), so one that can be locked is a left one; named, never removed: it
 * holds what was recorded. */
static void name_left_bundles(const char *dir, const char *base)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	size_t blen = strlen(base);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		const char *n = e->d_name;
		if (n[0] != '.' || strncmp(n + 1, base, blen) != 0 || n[1 + blen] != '.' ||
		    strlen(n) != blen + 8)
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", dir, n) >= (int)sizeof(path))
			continue;
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
		    flock(fd, LOCK_SH | LOCK_NB) == 0)
			say("'%s' holds the unfinished recording of a trace-record that was killed "
			    "(trace-dump reads what it holds; remove it when done)", path);
		close(fd);
	}
	closedir(d);
}

int nt_record_make_output(recorder *r)
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
	char dirname[PATH_MAX];
	snprintf(dirname, sizeof(dirname), "%.*s", dirlen ? dirlen : 1, slash ? dir : ".");
	name_left_bundles(dirname, base);
	/* 0600, O_EXCL, a random name: never an existing file (runtime/nt_private_file.h) */
	r->out_fd = nt_private_create(r->tmp_path, NT_PRIVATE_FILE_MODE);
	if (r->out_fd < 0) {
		say("cannot create the archive beside '%s': %s", r->o.output, strerror(errno));
		r->tmp_path[0] = '\0';
		return -1;
	}
	/* Held while anything records into it (name_left_bundles); a lock that cannot be
	 * taken only costs that notice. */
	(void)flock(r->out_fd, LOCK_EX | LOCK_NB);
	return 0;
}

void nt_record_drop_output(recorder *r)
{
	if (r->tmp_path[0] != '\0')
		unlink(r->tmp_path);
	r->tmp_path[0] = '\0';
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

int nt_record_finished(recorder *r, const nt_wire_msg *m)
{
	char text[NT_WIRE_MAX_TEXT + 1];
	nt_wire_str(m->text, m->text_len, text);
	nt_record_end_progress(r);
	if (m->type == NT_WIRE_CTL_END) {
		say("the manager could not write the archive: %s", text);
		return EXIT_FAILED;
	}
	if (r->exec_failed)
		return EXIT_NOT_RUN; /* the bundle, empty of processes, is dropped */
	if (put_in_place(r) != 0)
		return EXIT_FAILED;
	say("wrote %s: %llu %s, %llu events, %llu bytes, %llu dropped", r->o.output,
	    (unsigned long long)m->a, m->a == 1 ? "process" : "processes",
	    (unsigned long long)m->b, (unsigned long long)m->c, (unsigned long long)m->d);
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
int nt_record_manager_lost(recorder *r, const char *why)
{
	nt_record_end_progress(r);
	char msg[256], err[256];
	snprintf(msg, sizeof(msg), "the manager went away while recording: %s", why);
	if (nt_record_stop_embedded(r) != 0)
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
		nt_record_reap(r, 1);
	}
	return EXIT_MANAGER_LOST;
}

/* The manager's connection is open but it has said nothing for --manager-timeout while
 * stopping (it sends progress 4 times a second): stuck. A manager still holding the file
 * is never raced; the embedded one is ours to stop, and once joined the file is ours. */
int nt_record_manager_silent(recorder *r)
{
	char why[160];
	snprintf(why, sizeof(why), "it sent nothing for %g s while stopping", r->o.manager_timeout);
	nt_record_end_progress(r);
	if (r->embedded != NULL)
		return nt_record_manager_lost(r, why);
	char msg[PATH_MAX + 256];
	snprintf(msg, sizeof(msg), "the manager at %s %s", r->socket_path, why);
	return keep_unfinished(r, msg);
}
