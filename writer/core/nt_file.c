/*
 * nt_file.c - the writer's file helpers: every file the writer creates is made by
 * nt_create_beside() and renamed into place, and every write of a buffer goes through
 * nt_write_all().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nt_internal.h"

int nt_create_beside(const char *path, char **name_out)
{
	size_t cap = strlen(path) + sizeof(".XXXXXX");
	char *name = malloc(cap);
	if (name == NULL) {
		errno = ENOMEM;
		return -1;
	}
	snprintf(name, cap, "%s.XXXXXX", path);
	/* A random name created with O_EXCL: a link planted at any name we could have
	 * predicted is never opened, let alone followed. */
	int fd = mkostemp(name, O_CLOEXEC);
	if (fd >= 0 && fchmod(fd, nt_S.file_mode ? nt_S.file_mode : 0644) != 0) {
		int err = errno;
		close(fd);
		unlink(name);
		errno = err;
		fd = -1;
	}
	if (fd < 0) {
		free(name);
		return -1;
	}
	*name_out = name;
	return fd;
}

int nt_write_all(int fd, const void *data, size_t len, uint64_t *offset)
{
	const uint8_t *p = data;
	while (len > 0) {
		ssize_t w = offset ? pwrite(fd, p, len, (off_t)*offset) : write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO; /* a write of nothing would repeat forever */
		p += w;
		len -= (size_t)w;
		if (offset)
			*offset += (uint64_t)w;
	}
	return 0;
}
