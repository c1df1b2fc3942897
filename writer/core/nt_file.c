/*
 * nt_file.c - the writer's file helpers: every file the writer creates is made by
 * nt_create_beside() and renamed into place by nt_file_publish() (runtime/nt_private_file.h: the
 * same mechanism as trace-import's and trace-record's), and every write of a buffer goes
 * through nt_write_all() (runtime/nt_write_all.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/nt_private_file.h"
#include "nt_internal.h"

int nt_create_beside(const char *path, char **name_out)
{
	return nt_private_create_beside(path, nt_S.file_mode, name_out);
}

int nt_file_publish(const char *tmp, const char *path)
{
	return nt_private_publish(tmp, path);
}

const char *nt_file_strerror(int err)
{
	return nt_private_strerror(err);
}

int nt_private_arena_path(char *path, size_t cap, const char *name)
{
	const char *bases[] = { secure_getenv("XDG_RUNTIME_DIR"), secure_getenv("TMPDIR"),
				"/tmp" };
	char dir[sizeof(nt_S.private_dir)];
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		const char *b = bases[i];
		if (b == NULL || b[0] != '/' ||
		    (size_t)snprintf(dir, sizeof(dir), "%s/nanotrace-event-XXXXXX", b) >= sizeof(dir))
			continue;
		if (mkdtemp(dir) == NULL)
			continue;
		if ((size_t)snprintf(path, cap, "%s/%s", dir, name) >= cap ||
		    strlen(path) >= sizeof(nt_S.private_file)) {
			rmdir(dir);
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(nt_S.private_dir, dir, strlen(dir) + 1);
		memcpy(nt_S.private_file, path, strlen(path) + 1);
		nt_S.private_owner = (int)getpid();
		return 0;
	}
	if (errno == 0)
		errno = ENOENT;
	return -1;
}

void nt_private_arena_remove(int and_dir)
{
	if (nt_S.private_owner == 0 || nt_S.private_owner != (int)getpid())
		return;
	int saved = errno;
	unlink(nt_S.private_file);
	if (and_dir)
		rmdir(nt_S.private_dir);
	errno = saved;
}
