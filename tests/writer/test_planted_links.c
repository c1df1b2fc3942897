/*
 * test_planted_links.c - a symbolic link planted at any name the writer uses is never
 * followed: its target keeps its content, and the archive is correct.
 *
 * Links point at a victim file and sit at the final path (refused: NT_ERR_IO naming it, no
 * file left behind) and at every name an attacker could predict: `<path>.tmp.<pid>` (the
 * old temporary name) and, for Trace2's NANOTRACE=<dir>, the SID-named file (the process
 * moves on to `.1`). The SID is made predictable by freezing the clock
 * and the host name this program gives the library (it links libnanotrace statically).
 */
#define _GNU_SOURCE
#include "tests/support/nt_cmocka.h"
#define NT_TMPDIR_TAG "planted"
#include "tests/support/nt_tmpdir_test.h"
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include <nanotrace/nanotrace_trace2.h>
#include "tests/support/nt_test_util.h"

#define EVENTS 500

/* ---- a frozen clock and host name for the SID (Trace2 only) ---------------------------- */

static int frozen;

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	(void)tz;
	struct timespec ts = { 0, 0 };
	if (!frozen)
		clock_gettime(CLOCK_REALTIME, &ts);
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

int gethostname(char *name, size_t len)
{
	struct utsname u;
	if (frozen || uname(&u) != 0)
		return -1; /* the SID's host part is then "Localhost" */
	snprintf(name, len, "%s", u.nodename);
	return 0;
}

/* ---- helpers ----------------------------------------------------------------------------- */

static void plant(const char *link, const char *victim)
{
	unlink(link);
	assert_int_equal(symlink(victim, link), 0);
}

/* The old scheme's temporary name for `path` in this process. */
static void old_temp_name(char *out, size_t cap, const char *path, pid_t pid)
{
	snprintf(out, cap, "%s.tmp.%d", path, (int)pid);
}

static void assert_is(const char *path, mode_t type)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & S_IFMT, type);
}

static void emit(int n)
{
	for (int i = 0; i < n; i++)
		NT_INSTANT("planted", "ev", NT_I32("i", i));
}

/* `path` is a regular file holding exactly the EVENTS events of emit(). */
static void assert_archive(const char *path)
{
	assert_is(path, S_IFREG);
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
	assert_int_equal(t.errors, 0);
	size_t n = 0;
	for (size_t i = 0; i < t.n; i++)
		n += strcmp(t.ev[i].name, "ev") == 0 && t.ev[i].args[0].value.i64 == (int64_t)n;
	assert_int_equal(n, EVENTS);
	test_trace_free(&t);
}


/* ---- the tests --------------------------------------------------------------------------- */

/* Only the names in `keep` (NULL-terminated) are in the directory: nothing was left behind
 * under a temporary name. */
static void assert_dir_holds(const char *const *keep)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		int known = 0;
		for (const char *const *k = keep; *k != NULL; k++)
			known |= strcmp(e->d_name, *k) == 0;
		assert_msg(known, "'%s' was left in %s", e->d_name, dir);
	}
	closedir(d);
}

/* The last error names `path` and says a link is there. */
static void assert_refused(const char *path)
{
	const char *msg = nt_last_error();
	assert_msg(strstr(msg, path) != NULL && strstr(msg, "symbolic link") != NULL,
		   "the message names the path and the link: %s", msg);
}

/* A link at nt_finish()'s path is refused (NT_ERR_IO naming it); the data stays in the arena
 * and a second nt_finish() to a plain path writes it. */
static void finish_does_not_follow_links(void **state)
{
	(void)state;
	char path[300], tmp[320], victim[300], victim_tmp[300], other[300];
	in_dir(path, sizeof(path), "anon.ntrace");
	in_dir(other, sizeof(other), "other.ntrace");
	in_dir(victim, sizeof(victim), "victim");
	in_dir(victim_tmp, sizeof(victim_tmp), "victim-tmp");
	make_victim(victim);
	make_victim(victim_tmp);
	plant(path, victim);
	old_temp_name(tmp, sizeof(tmp), path, getpid());
	plant(tmp, victim_tmp);

	nt_config cfg;
	nt_config_init(&cfg);
	assert_int_equal(nt_start(&cfg), NT_OK);
	emit(EVENTS);
	assert_int_equal(nt_finish(path), NT_ERR_IO);
	assert_refused(path);
	assert_victim_intact(victim);
	assert_victim_intact(victim_tmp);
	assert_is(path, S_IFLNK);
	assert_is(tmp, S_IFLNK);
	const char *only[] = { "anon.ntrace", "victim", "victim-tmp", NULL, NULL };
	only[3] = strrchr(tmp, '/') + 1;
	assert_dir_holds(only);

	assert_int_equal(nt_finish(other), NT_OK);
	assert_archive(other);
	empty_dir();
}

/* nt_start() refuses a link at the arena's path; without one it creates the arena's file
 * and nt_finish(NULL) compacts it in place, while a link waits at the old temporary name
 * for each, and one is planted at the path before nt_finish (refused: the archive stays). */
static void file_arena_does_not_follow_links(void **state)
{
	(void)state;
	for (int mode = NT_MODE_ONESHOT; mode <= NT_MODE_STREAMING; mode++) {
		char path[300], tmp[320], victim[300], victim_tmp[300], victim_fin[300];
		in_dir(path, sizeof(path), "arena.ntrace");
		in_dir(victim, sizeof(victim), "victim");
		in_dir(victim_tmp, sizeof(victim_tmp), "victim-tmp");
		in_dir(victim_fin, sizeof(victim_fin), "victim-finish");
		make_victim(victim);
		make_victim(victim_tmp);
		make_victim(victim_fin);
		plant(path, victim);
		old_temp_name(tmp, sizeof(tmp), path, getpid());
		plant(tmp, victim_tmp);

		nt_config cfg;
		nt_config_init(&cfg);
		cfg.mode = mode;
		cfg.path = path;
		cfg.buffer_size = 1u << 20;
		assert_int_equal(nt_start(&cfg), NT_ERR_IO);
		assert_refused(path);
		assert_is(path, S_IFLNK);
		assert_victim_intact(victim);
		const char *only[] = { "arena.ntrace", "victim", "victim-tmp", "victim-finish",
				       NULL, NULL };
		only[4] = strrchr(tmp, '/') + 1;
		assert_dir_holds(only);

		unlink(path);
		assert_int_equal(nt_start(&cfg), NT_OK);
		assert_is(path, S_IFREG);
		emit(EVENTS);
		plant(tmp, victim_fin);
		assert_int_equal(nt_finish(NULL), NT_OK);

		assert_victim_intact(victim);
		assert_victim_intact(victim_tmp);
		assert_victim_intact(victim_fin);
		assert_archive(path);
		empty_dir();
	}
}

/* A file-backed arena moved elsewhere by nt_finish(other), in every mode: a link at `other`
 * is refused (NT_ERR_IO naming it); the arena's own file stays a readable archive. */
static void finish_elsewhere_does_not_follow_links(void **state)
{
	(void)state;
	for (int mode = NT_MODE_ONESHOT; mode <= NT_MODE_STREAMING; mode++) {
		char path[300], other[300], victim[300];
		in_dir(path, sizeof(path), "arena.ntrace");
		in_dir(other, sizeof(other), "moved.ntrace");
		in_dir(victim, sizeof(victim), "victim");
		make_victim(victim);
		plant(other, victim);
		nt_config cfg;
		nt_config_init(&cfg);
		cfg.mode = mode;
		cfg.path = path;
		cfg.buffer_size = 1u << 20;
		assert_int_equal(nt_start(&cfg), NT_OK);
		emit(EVENTS);
		assert_int_equal(nt_finish(other), NT_ERR_IO);
		assert_refused(other);
		assert_is(other, S_IFLNK);
		assert_victim_intact(victim);
		test_trace t;
		assert_int_equal(test_read(path, NT_ORDER_STREAM, &t), 0);
		test_trace_free(&t);
		empty_dir();
	}
}

/* In a child, which can start Trace2 once: NANOTRACE=<dir> with links at its SID-named file
 * and at the old temporary name of the ".1" file it must move on to. */
static void trace2_child(const char *victim)
{
	char sid_file[300], next[320], tmp[340];
	frozen = 1;
	snprintf(sid_file, sizeof(sid_file), "%s/19700101T000000.000000Z-Localhost-P%08x", dir,
		 (unsigned)getpid());
	snprintf(next, sizeof(next), "%s.1", sid_file);
	old_temp_name(tmp, sizeof(tmp), next, getpid());
	if (symlink(victim, sid_file) != 0 || symlink(victim, tmp) != 0)
		_exit(3);
	setenv("NANOTRACE", dir, 1);
	unsetenv("NANOTRACE_PARENT_SID");
	unsetenv("NANOTRACE_MAX_FILES");
	unsetenv("NANOTRACE_MODE");
	if (!NT_T2_INITIALIZE(NULL) || strstr(nt_trace2_sid(), "-Localhost-P") == NULL)
		_exit(4);
	emit(EVENTS);
	exit(0); /* the exit handler finishes the archive */
}

static void trace2_dir_does_not_follow_links(void **state)
{
	(void)state;
	char victim[300], sid_file[300], next[320], tmp[340];
	in_dir(victim, sizeof(victim), "victim");
	make_victim(victim);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		trace2_child(victim);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	snprintf(sid_file, sizeof(sid_file), "%s/19700101T000000.000000Z-Localhost-P%08x", dir,
		 (unsigned)pid);
	snprintf(next, sizeof(next), "%s.1", sid_file);
	old_temp_name(tmp, sizeof(tmp), next, pid);
	assert_victim_intact(victim);
	assert_is(sid_file, S_IFLNK);
	assert_is(tmp, S_IFLNK);
	assert_archive(next);
	empty_dir();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(finish_does_not_follow_links),
		cmocka_unit_test(file_arena_does_not_follow_links),
		cmocka_unit_test(finish_elsewhere_does_not_follow_links),
		cmocka_unit_test(trace2_dir_does_not_follow_links),
	};
	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
