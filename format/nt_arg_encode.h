/* The bytes of one argument of an Event record: the one encoder that the writer
 * (writer/core/nt_event.c) and the Trace2 importer (reader/import) both use, so that an
 * imported argument is byte for byte what the writer records for the same value.
 *
 * An argument is its ArgHeader (nt_arg_header in nt_format.h: type, size_words, name,
 * value32), written here as one little-endian word, then size_words - 1 payload words.
 * Each function writes at q (8-byte aligned, room for the argument) and returns the word
 * after the argument. A caller keeps each argument within NT_MAX_RECORD_WORDS words: the
 * writer by its byte budget, the importer by refusing a record over NT_MAX_RECORD_BYTES. */
#ifndef NT_ARG_ENCODE_H
#define NT_ARG_ENCODE_H

#include <stdint.h>
#include <string.h>

#include "nt_format.h"

/* The most words a fixed-size argument (nt_arg_put_fixed) takes. */
#define NT_ARG_FIXED_MAX_WORDS 2u

/* An ArgHeader as the word it is in the record. */
static inline uint64_t nt_arg_head(uint32_t name, unsigned type, uint32_t size_words,
				   uint32_t value32)
{
	return (uint64_t)name << 16 | type | (uint64_t)size_words << 8 | (uint64_t)value32 << 32;
}

/* A fixed-size argument: INT64 and UINT64 values that fit 32 bits become INT32 and UINT32
 * held in value32 (one word), BOOL is 0 or 1 in value32, DOUBLE, POINTER and the wide
 * integers take a payload word; any other type is recorded as NONE. Tests in order of
 * likelihood, not a switch: on the writer's fast path a jump table costs an indirect jump
 * and registers. */
static inline __attribute__((always_inline)) uint64_t *nt_arg_put_fixed(uint64_t *q,
									unsigned type,
									uint64_t name, uint64_t v)
{
	uint64_t head = name << 16;
	if (__builtin_expect(type == NT_ARG_INT64, 1)) { /* NT_I64 and NT_I32 */
		if (__builtin_expect((uint64_t)(int64_t)(int32_t)v == v, 1)) {
			q[0] = head | NT_ARG_INT32 | 1u << 8 | v << 32;
			return q + 1;
		}
	} else if (type == NT_ARG_UINT64) {
		if (__builtin_expect(v <= UINT32_MAX, 1)) {
			q[0] = head | NT_ARG_UINT32 | 1u << 8 | v << 32;
			return q + 1;
		}
	} else if (type == NT_ARG_BOOL) {
		q[0] = head | NT_ARG_BOOL | 1u << 8 | (uint64_t)(v != 0) << 32;
		return q + 1;
	} else if (type != NT_ARG_DOUBLE && type != NT_ARG_POINTER) {
		q[0] = head | NT_ARG_NONE | 1u << 8;
		return q + 1;
	}
	q[0] = head | type | 2u << 8;
	q[1] = v;
	return q + 2;
}

/* An argument of `type` whose payload is `len` bytes at p, zero padding to a whole word,
 * with `value32` in its header. */
static inline uint64_t *nt_arg_put_bytes(uint64_t *q, uint32_t name, unsigned type,
					 uint32_t value32, const void *p, uint32_t len)
{
	uint32_t padded = nt_words_for_bytes(len) * 8;
	q[0] = nt_arg_head(name, type, 1 + padded / 8, value32);
	/* The padding is the rest of the last word: zero it, then copy over it (one store
	 * instead of a memset call). */
	if (padded != 0)
		q[padded / 8] = 0;
	memcpy(q + 1, p, len);
	return q + 1 + padded / 8;
}

/* A STRING argument: `len` bytes of s (value32 is the length). */
static inline uint64_t *nt_arg_put_string(uint64_t *q, uint32_t name, const char *s,
					  uint32_t len)
{
	return nt_arg_put_bytes(q, name, NT_ARG_STRING, len, s, len);
}

/* One item of a STRING_LIST payload (and the payload of a JSON argument): a 4-byte length
 * and the bytes, unpadded. Writes at `at`; returns the byte after it. */
static inline uint8_t *nt_arg_put_item(uint8_t *at, const void *s, uint32_t len)
{
	memcpy(at, &len, 4);
	memcpy(at + 4, s, len);
	return at + 4 + len;
}

/* The header of a STRING_LIST argument of `count` items taking `bytes` bytes (its payload,
 * items written with nt_arg_put_item, follows it zero padded to a whole word). */
static inline uint64_t nt_arg_string_list_head(uint32_t name, uint32_t count, uint32_t bytes)
{
	return nt_arg_head(name, NT_ARG_STRING_LIST, 1 + nt_words_for_bytes(bytes), count);
}

/* A JSON argument (the importer's key kept verbatim): the JSON text as one item, value32
 * the key's position in its line. Room for it: 1 + nt_words_for_bytes(4 + len) words. */
static inline uint64_t *nt_arg_put_json(uint64_t *q, uint32_t name, uint32_t position,
					const char *text, uint32_t len)
{
	uint32_t words = nt_words_for_bytes(4 + len);
	q[0] = nt_arg_head(name, NT_ARG_JSON, 1 + words, position);
	q[words] = 0;
	nt_arg_put_item((uint8_t *)(q + 1), text, len);
	return q + 1 + words;
}

#endif /* NT_ARG_ENCODE_H */
