/*
 * nt_lanes.h - the byte-lane transform of the ZstdLanes4 codec (schema/nanotrace.fbs, Codec):
 * records of n bytes (n a multiple of 4) become 4 lanes of n/4 bytes, lane k holding byte k
 * of every 4-byte word. Compact heads, tick deltas and argument values sit at fixed byte
 * positions of 4-byte words, so each lane is far more regular than the interleaved bytes,
 * and zstd finds it: 1.6 (arg-less zones) to 4.7 (zone + two integers) times fewer bytes.
 *
 * Written by hand (no library offers it at this size): one pass each way, at memory speed.
 * On x86-64 a 64-byte block is transposed in registers with SSE2 byte unpacks: a "perfect
 * shuffle" (interleaving the two 32-byte halves) moves the byte at index i (6 bits) to the
 * index rotated left by one bit, so 4 of them take 4w+k to 16k+w (split) and 2 take it back
 * (join). Elsewhere, and for the tail, a plain loop.
 */
#ifndef NT_LANES_H
#define NT_LANES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__SSE2__)
/* Unaligned 16-byte moves through memcpy, which GCC and clang turn into movdqu: the
 * intrinsics' casts of uint8_t pointers confused GCC 12's alias analysis at -O2 (a join
 * after an inlined split of an uninitialized stack buffer read stale bytes). */
static inline __m128i nt_lanes_load_(const uint8_t *p)
{
	__m128i v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void nt_lanes_store_(uint8_t *p, __m128i v)
{
	memcpy(p, &v, sizeof(v));
}

/* Interleaves the 64 bytes r[0..3] (first half r0 r1, second half r2 r3) in place. */
static inline void nt_lanes_perfect_shuffle_(__m128i r[4])
{
	__m128i a = _mm_unpacklo_epi8(r[0], r[2]), b = _mm_unpackhi_epi8(r[0], r[2]);
	__m128i c = _mm_unpacklo_epi8(r[1], r[3]), d = _mm_unpackhi_epi8(r[1], r[3]);
	r[0] = a;
	r[1] = b;
	r[2] = c;
	r[3] = d;
}
#endif

/* Splits `n` bytes at `in` (n % 4 == 0) into 4 lanes at `out` (n bytes; no overlap). */
static inline void nt_lanes_split4(uint8_t *restrict out, const uint8_t *restrict in, size_t n)
{
	const size_t q = n / 4;
	size_t w = 0;
#if defined(__SSE2__)
	for (; w + 16 <= q; w += 16) {
		__m128i r[4];
		for (int k = 0; k < 4; k++)
			r[k] = nt_lanes_load_(in + 4 * w + 16 * k);
		for (int round = 0; round < 4; round++)
			nt_lanes_perfect_shuffle_(r);
		for (int k = 0; k < 4; k++)
			nt_lanes_store_(out + (size_t)k * q + w, r[k]);
	}
#endif
	for (size_t k = 0; k < 4; k++) {
		uint8_t *lane = out + k * q;
		for (size_t i = w; i < q; i++)
			lane[i] = in[4 * i + k];
	}
}

/* Joins the 4 lanes of `n` bytes at `in` (n % 4 == 0) back into words at `out`. */
static inline void nt_lanes_join4(uint8_t *restrict out, const uint8_t *restrict in, size_t n)
{
	const size_t q = n / 4;
	size_t w = 0;
#if defined(__SSE2__)
	for (; w + 16 <= q; w += 16) {
		__m128i r[4];
		for (int k = 0; k < 4; k++)
			r[k] = nt_lanes_load_(in + (size_t)k * q + w);
		nt_lanes_perfect_shuffle_(r);
		nt_lanes_perfect_shuffle_(r);
		for (int k = 0; k < 4; k++)
			nt_lanes_store_(out + 4 * w + 16 * k, r[k]);
	}
#endif
	for (size_t k = 0; k < 4; k++) {
		const uint8_t *lane = in + k * q;
		for (size_t i = w; i < q; i++)
			out[4 * i + k] = lane[i];
	}
}

#endif /* NT_LANES_H */
