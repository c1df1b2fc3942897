/*
 * nt_finish_test.h - the writer tests' round trip: finish the session into a temporary
 * archive and read it back.
 */
#ifndef NT_FINISH_TEST_H
#define NT_FINISH_TEST_H

#include <pthread.h>
#include <unistd.h>

#include <nanotrace/nanotrace.h>
#include "nt_test_util.h"

/* nt_finish() into a per-test temporary file named after `tag`, read back in `order` into
 * *t, the file removed. 0; -1 when nt_finish() failed (nt_last_error() says why) or the
 * archive did not open. */
__attribute__((unused)) static int test_finish_and_read(const char *tag, nt_order order,
							test_trace *t)
{
	char path[256];
	test_tmp_path(path, sizeof(path), tag);
	int rc = nt_finish(path) == NT_OK ? test_read(path, order, t) : -1;
	unlink(path);
	return rc;
}

/* A session of `cfg` recorded by `n` threads running fn(args[i]), finished by nt_finish()
 * into a per-test temporary file named after `tag` (the session's own file when
 * `file_backed`); the archive's bytes (malloc'd), its size in *size, the file removed.
 * cmocka's asserts: include nt_cmocka.h first. */
__attribute__((unused)) static uint8_t *test_record_threads(nt_config *cfg, const char *tag,
							    int file_backed, unsigned n,
							    void *(*fn)(void *),
							    void *const *args, size_t *size)
{
	char path[256];
	test_tmp_path(path, sizeof(path), tag);
	if (file_backed)
		cfg->path = path;
	assert_int_equal(nt_start(cfg), NT_OK);
	pthread_t th[64];
	assert_true(n <= 64);
	for (unsigned i = 0; i < n; i++)
		pthread_create(&th[i], NULL, fn, args[i]);
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(nt_finish(path), NT_OK);
	cfg->path = NULL;
	uint8_t *data = test_slurp(path, size);
	assert_non_null(data);
	unlink(path);
	return data;
}

#endif /* NT_FINISH_TEST_H */
