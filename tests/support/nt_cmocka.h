/*
 * nt_cmocka.h - cmocka as every C test includes it, plus assert_msg().
 *
 * assert_msg(cond, fmt, ...) is cmocka's assertion with a printf message: when cond is false
 * cmocka prints the message with the file and line and fails the test (fail_msg).
 */
#ifndef NT_CMOCKA_H
#define NT_CMOCKA_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" { /* cmocka 1.1's header declares C functions without saying so */
#endif
#include <cmocka.h>
#ifdef __cplusplus
}
#endif

#define assert_msg(cond, ...)                                                              \
	do {                                                                               \
		if (!(cond))                                                               \
			fail_msg(__VA_ARGS__);                                             \
	} while (0)

#endif /* NT_CMOCKA_H */
