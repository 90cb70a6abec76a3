/*
 * The scanner's AVX2 path: jscan-walk.h's grammar with a finder that looks
 * at 32 bytes at once.  This file is built with -mavx2; jscan_run takes
 * it only on a CPU that has AVX2 (jscan_path_has).
 */

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "corral.h"
#include "jscan-int.h"

/*
 * As jscan_find_sse2 (jscan-sse2.c), 32 bytes at a time; *c is the byte
 * found (NUL at the line's end).
 */
static inline __attribute__((always_inline)) size_t
jscan_find_avx2(const struct jscan_tail *t, const unsigned char *s,
    size_t n, size_t pos, unsigned char *c)
{
	const unsigned char *at;
	__m256i		x;
	unsigned int	m;

	for (;; pos += 32) {
		if (__builtin_expect(pos + 32 <= n, 1))
			at = s + pos;
		else
			at = t->b + (pos - t->base);
		x = _mm256_loadu_si256((const __m256i *)at);
		/* Signed: 0x20 > x for x below 0x20 and above 0x7F. */
		m = (unsigned int)_mm256_movemask_epi8(_mm256_or_si256(
		    _mm256_or_si256(_mm256_cmpeq_epi8(x, _mm256_load_si256(
		    JSCAN_K(0))), _mm256_cmpeq_epi8(x,
		    _mm256_load_si256(JSCAN_K(1)))),
		    _mm256_cmpgt_epi8(_mm256_load_si256(JSCAN_K(2)),
		    x)));
		if (m != 0) {
			*c = at[__builtin_ctz(m)];
			return pos + (size_t)__builtin_ctz(m);
		}
	}
}

#define JW(name)	jscan_##name##_avx2
#define JW_FIND		jscan_find_avx2
#include "jscan-walk.h"
#endif
