/*
 * test_private_file.c - runtime/nt_private_file.h, the one way the writer, trace-import and
 * trace-record create trace files: temporary names nobody can predict, a mode set exactly
 * whatever the umask, O_CLOEXEC, and a symbolic link at the target refused (ELOOP), never
 * followed or replaced; links at every name one could predict are never touched.
 */
#define _GNU_SOURCE
#include "tests/support/nt_cmocka.h"
#define NT_TMPDIR_TAG "private"
#include "tests/support/nt_tmpdir_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/nt_private_file.h"


static void assert_link(const char *path)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_msg(S_ISLNK(st.st_mode), "%s is no longer a symbolic link", path);
}


/* 500 names for one path: each "<path>." and 6 random characters, all different, none the
 * pid in any form: a name cannot be guessed to plant a link at it. */
static void names_cannot_be_predicted(void **state)
{
	(void)state;
	enum { N = 500 };
	char path[300], pid[32];
	static char *names[N];
	in_dir(path, sizeof(path), "out.ntrace");
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (int i = 0; i < N; i++) {
		int fd = nt_private_create_beside(path, 0, &names[i]);
		assert_true(fd >= 0);
		close(fd);
		assert_int_equal(strlen(names[i]), strlen(path) + 7);
		assert_memory_equal(names[i], path, strlen(path));
		assert_int_equal(names[i][strlen(path)], '.');
		assert_null(strstr(names[i] + strlen(path), pid));
		for (int j = 0; j < i; j++)
			assert_msg(strcmp(names[i], names[j]) != 0, "name %d repeats %d", i, j);
	}
	for (int i = 0; i < N; i++) {
		unlink(names[i]);
		free(names[i]);
	}
}

/* Links at every name an old scheme used (fixed, pid-derived, the template itself): a file
 * is created and published, and each link and its victim are untouched. */
static void links_at_predictable_names_are_untouched(void **state)
{
	(void)state;
	char path[300], victim[300], link[400];
	in_dir(path, sizeof(path), "out.ntrace");
	in_dir(victim, sizeof(victim), "victim");
	make_victim(victim);
	const char *const forms[] = { "%s.tmp", "%s.tmp.%d", "%s.%d", "%s.XXXXXX", "%s~", "%s.new" };
	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		snprintf(link, sizeof(link), forms[f], path, (int)getpid());
		assert_int_equal(symlink(victim, link), 0);
	}
	char *tmp = NULL;
	int fd = nt_private_create_beside(path, 0, &tmp);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "archive", 7), 7);
	close(fd);
	assert_int_equal(nt_private_publish(tmp, path), 0);
	free(tmp);
	assert_victim_intact(victim);
	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		snprintf(link, sizeof(link), forms[f], path, (int)getpid());
		assert_link(link);
	}
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode) && st.st_size == 7);
	empty_dir();
}

/* The mode is exactly the one asked for (0: 0600) under umask 0, 022 and 077; and the
 * descriptor does not leak into exec'd programs. */
static void mode_is_exact_whatever_the_umask(void **state)
{
	(void)state;
	const mode_t masks[] = { 0, 022, 077 };
	const unsigned modes[] = { 0, 0600, 0640, 0644 };
	char path[300];
	in_dir(path, sizeof(path), "mode.ntrace");
	mode_t old = umask(0);
	for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
		umask(masks[m]);
		for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
			char *tmp = NULL;
			int fd = nt_private_create_beside(path, modes[k], &tmp);
			assert_true(fd >= 0);
			assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
			struct stat st;
			assert_int_equal(fstat(fd, &st), 0);
			unsigned want = modes[k] ? modes[k] : NT_PRIVATE_FILE_MODE;
			assert_msg((st.st_mode & 07777) == want, "umask %03o, mode %03o: got %03o",
				   (unsigned)masks[m], want, (unsigned)(st.st_mode & 07777));
			close(fd);
			unlink(tmp);
			free(tmp);
		}
	}
	umask(old);
	assert_int_equal(NT_PRIVATE_FILE_MODE, 0600);
}

/* A link at the target, pointing at a file or at nothing, is refused with ELOOP: the link
 * stays, the victim keeps its content, the temporary file is the caller's to remove. A
 * regular file or a hard link to the victim at the target is replaced by name only. */
static void publish_refuses_a_link_at_the_target(void **state)
{
	(void)state;
	char path[300], victim[300], hard[300], missing[300];
	in_dir(path, sizeof(path), "target.ntrace");
	in_dir(victim, sizeof(victim), "victim");
	in_dir(hard, sizeof(hard), "hard.ntrace");
	in_dir(missing, sizeof(missing), "missing");
	make_victim(victim);
	const char *const targets[] = { victim, missing };
	for (int t = 0; t < 2; t++) {
		assert_int_equal(symlink(targets[t], path), 0);
		char *tmp = NULL;
		int fd = nt_private_create_beside(path, 0, &tmp);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "archive", 7), 7);
		close(fd);
		errno = 0;
		assert_int_equal(nt_private_publish(tmp, path), -1);
		assert_int_equal(errno, ELOOP);
		assert_non_null(strstr(nt_private_strerror(ELOOP), "symbolic link"));
		assert_link(path);
		assert_int_equal(access(tmp, F_OK), 0);
		assert_int_equal(access(missing, F_OK), -1); /* a dangling link made nothing */
		unlink(tmp);
		free(tmp);
		unlink(path);
	}
	assert_victim_intact(victim);
	assert_int_equal(link(victim, hard), 0);
	char *tmp = NULL;
	int fd = nt_private_create_beside(hard, 0, &tmp);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(nt_private_publish(tmp, hard), 0);
	free(tmp);
	assert_victim_intact(victim);
	empty_dir();
}

/* Something that is not a regular file at the target (a FIFO, a directory; /dev/null as
 * root) is refused and stays what it is: renaming over it would replace it with a file. */
static void non_regular_target_is_refused(void **state)
{
	(void)state;
	char fifo[300], dir[300];
	in_dir(fifo, sizeof(fifo), "out.fifo");
	in_dir(dir, sizeof(dir), "out.dir");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	const char *targets[] = { fifo, dir };
	for (int i = 0; i < 2; i++) {
		char *tmp = NULL;
		int fd = nt_private_create_beside(targets[i], 0, &tmp);
		assert_true(fd >= 0);
		close(fd);
		errno = 0;
		assert_int_equal(nt_private_publish(tmp, targets[i]), -1);
		assert_int_equal(errno, ENOTSUP);
		assert_non_null(strstr(nt_private_strerror(ENOTSUP), "not a regular file"));
		struct stat st;
		assert_int_equal(lstat(targets[i], &st), 0);
		assert_true(i == 0 ? S_ISFIFO(st.st_mode) : S_ISDIR(st.st_mode));
		unlink(tmp);
		free(tmp);
	}
	unlink(fifo);
	rmdir(dir);
	empty_dir();
}

/* A failure leaves nothing: a directory that does not exist is ENOENT, and no name is
 * returned. */
static void failure_leaves_nothing(void **state)
{
	(void)state;
	char path[300];
	in_dir(path, sizeof(path), "no-such-dir/out.ntrace");
	char *tmp = NULL;
	errno = 0;
	assert_int_equal(nt_private_create_beside(path, 0, &tmp), -1);
	assert_int_equal(errno, ENOENT);
	assert_null(tmp);
	assert_int_equal(nt_private_target_ok(path), 0); /* absent: nothing to refuse */
	in_dir(path, sizeof(path), "absent.ntrace");
	assert_int_equal(nt_private_target_ok(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_cannot_be_predicted),
		cmocka_unit_test(links_at_predictable_names_are_untouched),
		cmocka_unit_test(mode_is_exact_whatever_the_umask),
		cmocka_unit_test(publish_refuses_a_link_at_the_target),
		cmocka_unit_test(non_regular_target_is_refused),
		cmocka_unit_test(failure_leaves_nothing),
	};
	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
