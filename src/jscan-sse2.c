/*
 * The scanner's SSE2 path: jscan-walk.h's grammar with a finder that looks
 * at 16 bytes at once.  Every x86-64 has SSE2.
 */

#if defined(__x86_64__)
#include <emmintrin.h>
#include <stdint.h>
#include <string.h>

#include "corral.h"
#include "jscan-int.h"

/*
 * The first byte at or after pos that ends a run of plain string bytes:
 * '"', '\\', or below 0x20 or above 0x7F (both below 0x20 as signed
 * bytes).  *c is the byte found (NUL at the line's end).
 */
static inline __attribute__((always_inline)) size_t
jscan_find_sse2(const struct jscan_tail *t, const unsigned char *s,
    size_t n, size_t pos, unsigned char *c)
{
	const unsigned char *at;
	__m128i		x;
	unsigned int	m;

	for (;; pos += 16) {
		if (__builtin_expect(pos + 16 <= n, 1))
			at = s + pos;
		else
			at = t->b + (pos - t->base);
		x = _mm_loadu_si128((const __m128i *)at);
		m = (unsigned int)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(
		    _mm_cmpeq_epi8(x, _mm_load_si128(JSCAN_K(0))),
		    _mm_cmpeq_epi8(x, _mm_load_si128(JSCAN_K(1)))),
		    _mm_cmplt_epi8(x, _mm_load_si128(JSCAN_K(2)))));
		if (m != 0) {
			*c = at[__builtin_ctz(m)];
			return pos + (size_t)__builtin_ctz(m);
		}
	}
}

#define JW(name)	jscan_##name##_sse2
#define JW_FIND		jscan_find_sse2
#include "jscan-walk.h"
#endif
