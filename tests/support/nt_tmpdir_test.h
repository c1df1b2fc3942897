/*
 * nt_tmpdir_test.h - a private directory for tests that plant files and links (cmocka group
 * setup and teardown): made by mkdtemp under $TMPDIR, emptied between tests, removed at the
 * end. The including file defines NT_TMPDIR_TAG (a word: the directory's name prefix).
 */
#ifndef NT_TMPDIR_TEST_H
#define NT_TMPDIR_TEST_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nt_cmocka.h"

static char dir[256];

/* Removes every entry of the directory (links as links: unlinkat never follows them). */
static void empty_dir(void)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

static int make_dir(void **state)
{
	(void)state;
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(dir, sizeof(dir), "%s/nt-" NT_TMPDIR_TAG "-XXXXXX", base);
	return mkdtemp(dir) == NULL;
}

static int remove_dir(void **state)
{
	(void)state;
	empty_dir();
	return rmdir(dir);
}

#endif /* NT_TMPDIR_TEST_H */
