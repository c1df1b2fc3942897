/*
 * nt_unaligned.h - loads of the format's little-endian integers from any byte address.
 *
 * Saved data promises only 4-byte alignment inside a chunk (nt_record.h), FlatBuffers
 * fields none, and a bundle's slices whatever their offset is: every decoder reads a field
 * through these, never through a cast pointer (undefined where the address is not aligned,
 * and a trap for UBSan). nt_format.h requires a little-endian host, so a load is one copy;
 * the compiler makes it one move.
 */
#ifndef NT_UNALIGNED_H
#define NT_UNALIGNED_H

#include <stdint.h>

#include "nt_format.h"

static inline uint16_t nt_load_le16(const void *p)
{
	uint16_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t nt_load_le32(const void *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t nt_load_le64(const void *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, sizeof(v));
	return v;
}

#endif /* NT_UNALIGNED_H */
