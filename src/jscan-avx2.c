/*
 * The scanner's AVX2 path: jscan-walk.h's grammar with a block reader
 * that looks at 32 bytes at once.  This file is built with -mavx2;
 * jscan_run takes it only on a CPU that has AVX2 (jscan_path_has).
 */

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "corral.h"
#include "jscan-int.h"

/*
 * A bit for each of the 64 bytes at p that ends a run of plain string
 * bytes: '"', '\\', or below 0x20 or above 0x7F (jscan-int.h says how).
 */
static inline __attribute__((always_inline)) uint64_t
jscan_block_avx2(const unsigned char *p)
{
	const __m256i	f = _mm256_load_si256(JSCAN_K(0));
	const __m256i	b = _mm256_load_si256(JSCAN_K(1));
	const __m256i	lt = _mm256_load_si256(JSCAN_K(2));
	__m256i		x, y;
	uint32_t	lo, hi;

	x = _mm256_loadu_si256((const __m256i *)p);
	y = _mm256_loadu_si256((const __m256i *)(p + 32));
	lo = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(
	    _mm256_cmpgt_epi8(lt, _mm256_xor_si256(x, f)),
	    _mm256_cmpeq_epi8(x, b)));
	hi = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(
	    _mm256_cmpgt_epi8(lt, _mm256_xor_si256(y, f)),
	    _mm256_cmpeq_epi8(y, b)));
	return (uint64_t)hi << 32 | lo;
}

#define JW(name)	jscan_##name##_avx2
#define JW_BLOCK	jscan_block_avx2
#include "jscan-walk.h"
#endif
