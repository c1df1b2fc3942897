/*
 * nt_atomic.h - the writer's atomic accesses, named by the ordering they need.
 *
 * Normally these are Concurrency Kit's ck_pr primitives (on x86-64 an acquire load or a
 * release store is a plain mov plus a compiler barrier). ThreadSanitizer cannot see ck_pr's
 * volatile accesses and fences as synchronisation, even with CK_USE_CC_BUILTINS, so a TSan
 * build maps each access to the compiler's __atomic builtin of exactly the same ordering:
 * TSan then checks the protocol we actually rely on, not a stronger one.
 */
#ifndef NT_ATOMIC_H
#define NT_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__SANITIZE_THREAD__)
#define NT_ATOMIC_BUILTINS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NT_ATOMIC_BUILTINS 1
#endif
#endif

#ifdef NT_ATOMIC_BUILTINS

static inline uint32_t nt_load_32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline uint64_t nt_load_64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline uint32_t nt_load_acquire_32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline uint64_t nt_load_acquire_64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void nt_store_32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline void nt_store_64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline void nt_store_release_32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline void nt_store_release_64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline uint64_t nt_faa_64(uint64_t *p, uint64_t v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline void nt_add_64(uint64_t *p, uint64_t v) { __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline bool nt_cas_64(uint64_t *p, uint64_t expected, uint64_t desired)
{
	return __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}
/* GCC rejects standalone fences under TSan; a seq_cst read-modify-write of a private word is
 * a full barrier too, and one TSan accepts. */
static inline void nt_fence_full(void)
{
	static uint32_t word;
	__atomic_fetch_add(&word, 0, __ATOMIC_SEQ_CST);
}
static inline void nt_fence_store(void) { nt_fence_full(); }

#else

#include <ck_pr.h>

static inline uint32_t nt_load_32(const uint32_t *p) { return ck_pr_load_32(p); }
static inline uint64_t nt_load_64(const uint64_t *p) { return ck_pr_load_64(p); }
static inline uint32_t nt_load_acquire_32(const uint32_t *p)
{
	uint32_t v = ck_pr_load_32(p);
	ck_pr_fence_load();
	return v;
}
static inline uint64_t nt_load_acquire_64(const uint64_t *p)
{
	uint64_t v = ck_pr_load_64(p);
	ck_pr_fence_load();
	return v;
}
static inline void nt_store_32(uint32_t *p, uint32_t v) { ck_pr_store_32(p, v); }
static inline void nt_store_64(uint64_t *p, uint64_t v) { ck_pr_store_64(p, v); }
static inline void nt_store_release_32(uint32_t *p, uint32_t v)
{
	ck_pr_fence_store();
	ck_pr_store_32(p, v);
}
static inline void nt_store_release_64(uint64_t *p, uint64_t v)
{
	ck_pr_fence_store();
	ck_pr_store_64(p, v);
}
static inline uint64_t nt_faa_64(uint64_t *p, uint64_t v) { return ck_pr_faa_64(p, v); }
static inline void nt_add_64(uint64_t *p, uint64_t v) { ck_pr_add_64(p, v); }
static inline bool nt_cas_64(uint64_t *p, uint64_t expected, uint64_t desired)
{
	return ck_pr_cas_64(p, expected, desired);
}
static inline void nt_fence_full(void) { ck_pr_fence_memory(); }
static inline void nt_fence_store(void) { ck_pr_fence_store(); }

#endif

#endif /* NT_ATOMIC_H */
