/*
 * nt_grow.h - the reader library's one growable array (not installed).
 *
 * Input sizes are untrusted, so growth is checked: capacities double from 16 and a request
 * whose byte size would overflow fails like an allocation failure, leaving the array as it
 * was. New elements are zeroed.
 *
 * A table by index grows to the highest index an archive names, which a hostile one sets
 * near a field's limit while defining one entry: a large array is therefore a fresh calloc
 * with the old elements copied in, not a realloc whose new part is zeroed by a memset, so
 * the elements never written stay zero pages never touched (malloc's large blocks, and
 * ASan's, are fresh mappings) and an index near a limit costs address space, not memory.
 */
#ifndef NT_GROW_H
#define NT_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* An array of at least this many bytes is allocated fresh (glibc's default mmap threshold). */
#define NT_GROW_FRESH_BYTES (128u * 1024u)

/* Makes *arr (of *cap elements of `elem` bytes) hold at least `need`; returns 1, or 0 when
 * memory runs out (then *arr and *cap are unchanged). */
static inline int nt_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	void **p = (void **)arr;
	if (need <= *cap)
		return 1;
	size_t n = *cap ? *cap : 16;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return 0;
		n *= 2;
	}
	if (elem != 0 && n > SIZE_MAX / elem)
		return 0;
	if (n * elem >= NT_GROW_FRESH_BYTES) {
		void *q = calloc(n, elem);
		if (q == NULL)
			return 0;
		if (*cap != 0)
			memcpy(q, *p, *cap * elem);
		free(*p);
		*p = q;
		*cap = n;
		return 1;
	}
	void *q = realloc(*p, n * elem);
	if (q == NULL)
		return 0;
	memset((char *)q + *cap * elem, 0, (n - *cap) * elem);
	*p = q;
	*cap = n;
	return 1;
}

#endif /* NT_GROW_H */
