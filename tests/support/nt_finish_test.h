/*
 * nt_finish_test.h - the writer tests' round trip: finish the session into a temporary
 * archive and read it back.
 */
#ifndef NT_FINISH_TEST_H
#define NT_FINISH_TEST_H

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

#endif /* NT_FINISH_TEST_H */
