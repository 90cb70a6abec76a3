/*
 * The scanner's SSE2 path: jscan-walk.h's grammar with a block reader
 * that looks at 16 bytes at once.  Every x86-64 has SSE2.
 */

#if defined(__x86_64__)
#include <emmintrin.h>
#include <stdint.h>
#include <string.h>

#include "corral.h"
#include "jscan-int.h"

/* A bit for each of the 16 bytes at p that ends a run of plain bytes. */
static inline __attribute__((always_inline)) uint64_t
jscan_block16(const unsigned char *p)
{
	__m128i	x = _mm_loadu_si128((const __m128i *)p);

	/* jscan-int.h says why these two comparisons find them all. */
	return (uint64_t)(unsigned int)_mm_movemask_epi8(_mm_or_si128(
	    _mm_cmplt_epi8(_mm_xor_si128(x, _mm_load_si128(JSCAN_K(0))),
	    _mm_load_si128(JSCAN_K(2))),
	    _mm_cmpeq_epi8(x, _mm_load_si128(JSCAN_K(1)))));
}

/*
 * A bit for each of the 64 bytes at p that ends a run of plain string
 * bytes: '"', '\\', or below 0x20 or above 0x7F.
 */
static inline __attribute__((always_inline)) uint64_t
jscan_block_sse2(const unsigned char *p)
{
	return jscan_block16(p) | jscan_block16(p + 16) << 16 |
	    jscan_block16(p + 32) << 32 | jscan_block16(p + 48) << 48;
}

#define JW(name)	jscan_##name##_sse2
#define JW_BLOCK	jscan_block_sse2
#include "jscan-walk.h"
#endif
