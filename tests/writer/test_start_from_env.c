/* test_start_from_env.c - nt_start_from_env(): a program of low-level events enabled by
 * NANOTRACE and the NANOTRACE_* variables, as Trace2 programs are. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "tests/support/nt_cmocka.h"
#include "tests/support/nt_test_util.h"

static const char *const vars[] = { "NANOTRACE", "NANOTRACE_MODE", "NANOTRACE_BUFFER_SIZE",
				    "NANOTRACE_CATEGORIES", "NANOTRACE_CLOCK",
				    "NANOTRACE_MAX_FILES" };

static int clear_env(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	return 0;
}

/* Unset, empty, "0" and "false" ask for nothing: NT_DISABLED, which is not an error. */
static void unset_is_disabled_not_an_error(void **state)
{
	(void)state;
	static const char *const off[] = { NULL, "", "0", "false" };
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		if (off[i] != NULL)
			setenv("NANOTRACE", off[i], 1);
		assert_int_equal(nt_start_from_env(), NT_DISABLED);
		assert_true(NT_DISABLED > 0);
		assert_false(nt_is_recording());
	}
}

/* Each malformed value is an error naming the variable and the value; nothing starts and
 * no file is left behind. */
static void bad_values_name_the_variable(void **state)
{
	(void)state;
	char path[256];
	test_tmp_path(path, sizeof(path), "env-bad");
	static const struct {
		const char *var, *value;
	} bad[] = {
		{ "NANOTRACE_MODE", "sometimes" },   { "NANOTRACE_BUFFER_SIZE", "4X" },
		{ "NANOTRACE_BUFFER_SIZE", "-1" },   { "NANOTRACE_CATEGORIES", "io,,db" },
		{ "NANOTRACE_CLOCK", "sundial" },    { "NANOTRACE_MAX_FILES", "ten" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		clear_env(NULL);
		setenv("NANOTRACE", path, 1);
		setenv(bad[i].var, bad[i].value, 1);
		assert_int_equal(nt_start_from_env(), NT_ERR_INVALID_ARGUMENT);
		assert_msg(strstr(nt_last_error(), bad[i].var) != NULL &&
				   strstr(nt_last_error(), bad[i].value) != NULL,
			   "%s=%s: %s", bad[i].var, bad[i].value, nt_last_error());
		assert_false(nt_is_recording());
		assert_int_equal(access(path, F_OK), -1);
	}
	clear_env(NULL);
	setenv("NANOTRACE", "relative/out.ntrace", 1);
	assert_int_equal(nt_start_from_env(), NT_ERR_INVALID_ARGUMENT);
	assert_non_null(strstr(nt_last_error(), "absolute path"));
	setenv("NANOTRACE", "/nonexistent-dir/out.ntrace", 1);
	assert_int_equal(nt_start_from_env(), NT_ERR_IO);
	assert_non_null(strstr(nt_last_error(), "/nonexistent-dir/out.ntrace"));
	/* Buffer sizes out of the variable's range (64K to NT_ENV_MAX_BUFFER_BYTES), or with a
	 * sign or a blank first: the message shows what was written; no file is left. */
	static const char *const sizes[] = { "1K", "4G", "257M", " -1", "+5M", "18446744073709551615" };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		setenv("NANOTRACE", path, 1);
		setenv("NANOTRACE_BUFFER_SIZE", sizes[i], 1);
		assert_int_equal(nt_start_from_env(), NT_ERR_INVALID_ARGUMENT);
		assert_msg(strstr(nt_last_error(), "NANOTRACE_BUFFER_SIZE") != NULL &&
				   strstr(nt_last_error(), sizes[i]) != NULL &&
				   strstr(nt_last_error(), "to 256M") != NULL,
			   "%s: %s", sizes[i], nt_last_error());
		assert_int_equal(access(path, F_OK), -1);
	}
	setenv("NANOTRACE_BUFFER_SIZE", "256M", 1);
	assert_msg(nt_start_from_env() == NT_OK, "256M: %s", nt_last_error());
	assert_int_equal(nt_finish(NULL), NT_OK);
	unlink(path);
	unsetenv("NANOTRACE_BUFFER_SIZE");
}

/* A file target is the archive: the settings come from the variables, and nt_finish(NULL)
 * compacts it in place. */
static void file_target_records_with_the_settings(void **state)
{
	(void)state;
	char path[256];
	test_tmp_path(path, sizeof(path), "env-file");
	setenv("NANOTRACE", path, 1);
	setenv("NANOTRACE_MODE", "circular", 1);
	setenv("NANOTRACE_BUFFER_SIZE", "1M", 1);
	setenv("NANOTRACE_CATEGORIES", "io,net:*", 1);
	setenv("NANOTRACE_CLOCK", "monotonic", 1);
	assert_msg(nt_start_from_env() == NT_OK, "%s", nt_last_error());
	assert_true(nt_is_recording());
	assert_int_equal(nt_start_from_env(), NT_ERR_STATE); /* already recording */
	NT_INSTANT("io", "kept");
	NT_INSTANT("db", "filtered");
	NT_INSTANT("net:tcp", "kept");
	assert_int_equal(nt_finish(NULL), NT_OK);
	test_trace t;
	assert_int_equal(test_read(path, NT_ORDER_TIME, &t), 0);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.info.buffering_mode, NT_MODE_CIRCULAR);
	/* buffer_size is the arena's events and strings; the mapping adds its header */
	assert_true(t.info.arena_size >= 1u << 20 && t.info.arena_size < 2u << 20);
	assert_int_equal(t.info.clock_source, NT_CLOCK_SOURCE_MONOTONIC);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	test_trace_free(&t);
	unlink(path);
}

/* A directory target gets one archive per process, named after the program and its pid. */
static void directory_target_gets_one_archive_per_process(void **state)
{
	(void)state;
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/nt-test-env-dir-%d",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	assert_int_equal(mkdir(dir, 0700), 0);
	setenv("NANOTRACE", dir, 1);
	assert_msg(nt_start_from_env() == NT_OK, "%s", nt_last_error());
	NT_INSTANT("any", "event");
	assert_int_equal(nt_finish(NULL), NT_OK);
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	char found[512] = "";
	int files = 0;
	char pid_part[32];
	snprintf(pid_part, sizeof(pid_part), "-P%08x.ntrace", (unsigned)getpid());
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		files++;
		snprintf(found, sizeof(found), "%s/%s", dir, e->d_name);
		assert_msg(strncmp(e->d_name, "test_start_from_env-", 20) == 0 &&
				   strstr(e->d_name, pid_part) != NULL,
			   "name %s", e->d_name);
	}
	closedir(d);
	assert_int_equal(files, 1);
	test_trace t;
	assert_int_equal(test_read(found, NT_ORDER_TIME, &t), 0);
	assert_int_equal(t.n, 1);
	test_trace_free(&t);
	unlink(found);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(unset_is_disabled_not_an_error, clear_env),
		cmocka_unit_test_setup(bad_values_name_the_variable, clear_env),
		cmocka_unit_test_setup(file_target_records_with_the_settings, clear_env),
		cmocka_unit_test_setup(directory_target_gets_one_archive_per_process, clear_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
