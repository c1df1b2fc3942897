/*
 * nt_tmpdir_test.h - a private directory for tests that plant files and links (cmocka group
 * setup and teardown): made by mkdtemp under $TMPDIR, emptied between tests, removed at the
 * end; and the victim a planted link points at, whose content must survive. The including
 * file defines NT_TMPDIR_TAG (a word: the directory's name prefix).
 */
#ifndef NT_TMPDIR_TEST_H
#define NT_TMPDIR_TEST_H

#include <dirent.h>
#include <fcntl.h>
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

static const char victim_text[] = "the victim's own content\n";

/* `name` in the directory. */
static void in_dir(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

static void make_victim(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, victim_text, sizeof(victim_text) - 1),
			 (ssize_t)sizeof(victim_text) - 1);
	close(fd);
}

/* The victim still holds exactly its own content: nothing wrote through a link to it. */
static void assert_victim_intact(const char *path)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	assert_int_equal(n, (ssize_t)sizeof(victim_text) - 1);
	assert_memory_equal(buf, victim_text, sizeof(victim_text) - 1);
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
