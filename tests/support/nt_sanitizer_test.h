/*
 * nt_sanitizer_test.h - which sanitizer a test was built with, for the few assertions a
 * sanitizer's runtime falsifies: its allocator (no interposition, its own resident memory),
 * its shadow memory (page faults on the first touch of any memory), ThreadSanitizer's own
 * system calls. gcc defines __SANITIZE_*__; clang 14 only __SANITIZE_ADDRESS__, and answers
 * __has_feature.
 *   NT_SANITIZED  1 under AddressSanitizer or ThreadSanitizer, else 0
 *   NT_TSAN       1 under ThreadSanitizer, else 0
 */
#ifndef NT_SANITIZER_TEST_H
#define NT_SANITIZER_TEST_H

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define NT_SANITIZED 1
#endif
#endif
#ifndef NT_SANITIZED
#define NT_SANITIZED 0
#endif

#if defined(__SANITIZE_THREAD__)
#define NT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NT_TSAN 1
#endif
#endif
#ifndef NT_TSAN
#define NT_TSAN 0
#endif

#endif /* NT_SANITIZER_TEST_H */
