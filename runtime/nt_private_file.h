/*
 * nt_private_file.h - the one way every nanotrace program creates a file that holds a trace
 * (the writer's archives and file-backed arenas, trace-import's archive, trace-record's
 * bundle): header-only, because it is the same mechanism in each layer and format/ is the
 * only folder they share.
 *
 *   1. nt_private_create_beside(): "<path>.XXXXXX" (or nt_private_create(): another
 *      template beside it, as trace-record's hidden ".<name>.XXXXXX") made by mkostemp (O_CREAT | O_EXCL |
 *      O_CLOEXEC, a random suffix): no name can be predicted, and since O_EXCL fails on any
 *      existing name, a symbolic link planted at one is never opened, let alone followed.
 *      Its mode is set exactly with fchmod (the umask does not apply; 0600 by default).
 *   2. The file is written under that name, so `path` is never a half-written file.
 *   3. nt_private_publish(): renamed over `path`, unless a symbolic link is at `path`, or
 *      anything else but a regular file (refused, ENOTSUP: /dev/null stays a device): that
 *      is refused (ELOOP), never followed and never replaced. rename() itself never follows
 *      a link either, so a link planted between the check and the rename is replaced, and
 *      whatever it pointed at is still untouched.
 *
 * Errors are errno values; nt_private_strerror() words ELOOP for a user.
 */
#ifndef NT_PRIVATE_FILE_H
#define NT_PRIVATE_FILE_H

#ifndef _GNU_SOURCE
#error "nt_private_file.h needs _GNU_SOURCE (mkostemp)"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Trace files are private to their owner unless a caller asks otherwise. */
#define NT_PRIVATE_FILE_MODE 0600u

/* Create the file named by `tmpl` (a path ending in "XXXXXX", which mkostemp replaces in
 * place with random characters) exclusively, with mode `mode` (0: NT_PRIVATE_FILE_MODE),
 * exactly. Returns its fd (O_CLOEXEC), or -1 with errno (mkostemp's or fchmod's; nothing is
 * left behind). Cost: one open, one fchmod. */
static inline int nt_private_create(char *tmpl, unsigned mode)
{
	int fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd >= 0 && fchmod(fd, (mode_t)(mode ? mode : NT_PRIVATE_FILE_MODE)) != 0) {
		int err = errno;
		close(fd);
		unlink(tmpl);
		errno = err;
		fd = -1;
	}
	return fd;
}

/* nt_private_create() of "<path>.XXXXXX". Returns its fd and its name (malloc'd) in
 * *name_out, or -1 with errno (ENOMEM, or nt_private_create's). Cost: one malloc more. */
static inline int nt_private_create_beside(const char *path, unsigned mode, char **name_out)
{
	size_t cap = strlen(path) + sizeof(".XXXXXX");
	char *name = (char *)malloc(cap);
	if (name == NULL) {
		errno = ENOMEM;
		return -1;
	}
	snprintf(name, cap, "%s.XXXXXX", path);
	int fd = nt_private_create(name, mode);
	if (fd < 0) {
		int err = errno;
		free(name);
		errno = err;
		return -1;
	}
	*name_out = name;
	return fd;
}

/* 0 when `path` may be replaced: absent, or a regular file; -1 with errno ELOOP when a
 * symbolic link is there, ENOTSUP when something else that is not a regular file is (a
 * device such as /dev/null, a FIFO, a socket, a directory: renaming over it would put a
 * regular file in its place, as root even over /dev/null), or lstat's errno. Cost: one
 * lstat. */
static inline int nt_private_target_ok(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTSUP;
		return -1;
	}
	return 0;
}

/* Rename `tmp` over `path` unless a symbolic link is at `path` (see the top). Returns 0, or
 * -1 with errno (ELOOP: refused, a link is there); `tmp` is left for the caller to unlink.
 * Cost: one lstat and one rename. */
static inline int nt_private_publish(const char *tmp, const char *path)
{
	if (nt_private_target_ok(path) != 0)
		return -1;
	return rename(tmp, path);
}

/* strerror(err), but ELOOP and ENOTSUP are said as what they mean here. */
static inline const char *nt_private_strerror(int err)
{
	return err == ELOOP	? "a symbolic link is there (refused: never followed or replaced)"
	       : err == ENOTSUP ? "not a regular file (a device, FIFO, socket or directory is never "
				  "replaced)"
				: strerror(err);
}

#endif /* NT_PRIVATE_FILE_H */
