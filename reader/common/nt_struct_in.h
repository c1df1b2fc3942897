/*
 * nt_struct_in.h - reading a caller's growable options struct (not installed).
 *
 * Each public options struct starts with size_t struct_size, set by its init function to
 * the size the caller was compiled with. A caller built against an older header passes a
 * shorter struct: the fields it lacks keep the defaults already in *out. A newer caller's
 * extra fields must be zero (their defaults; the kernel's copy_struct_from_user rule),
 * since a non-zero one asks for something this library cannot do.
 */
#ifndef NT_STRUCT_IN_H
#define NT_STRUCT_IN_H

#include <stdio.h>
#include <string.h>

#define NT_STRUCT_SIZE_MAX 4096 /* larger is garbage, not a future version */

/* Copies the caller's `in` over `out` (out_size bytes, already holding the defaults).
 * min_size is the size of the struct's first version. Returns 0, or -1 after one line on
 * stderr naming `who` and the init function to call: a renderer's return value cannot say
 * more, and this is a mistake in the calling program, not in an archive. */
static inline int nt_struct_copy_in(void *out, size_t out_size, const void *in,
				    size_t min_size, const char *who, const char *init)
{
	size_t n;
	memcpy(&n, in, sizeof(n));
	if (n < min_size || n > NT_STRUCT_SIZE_MAX) {
		fprintf(stderr, "nanotrace: %s: options struct_size %zu is not the size of the "
			"options struct: fill it with %s() first\n", who, n, init);
		return -1;
	}
	for (size_t i = out_size; i < n; i++) {
		if (((const unsigned char *)in)[i] != 0) {
			fprintf(stderr, "nanotrace: %s: the options set a field this library does "
				"not know, at byte %zu; link the nanotrace-reader the program was "
				"built with\n", who, i);
			return -1;
		}
	}
	memcpy(out, in, n < out_size ? n : out_size);
	memcpy(out, &out_size, sizeof(out_size));
	return 0;
}

#endif /* NT_STRUCT_IN_H */
