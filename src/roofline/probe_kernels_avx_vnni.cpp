#include <immintrin.h>

#include <initializer_list>

#include "roofline/probe_kernels.h"

namespace tps {

namespace {

constexpr int kChains = 12;

// Independent vpdpbusd chains (4 u8 x s8 products per 32-bit lane each), VEX-encoded.
double int8_dpbusd(int64_t iterations) {
  __m256i c0 = _mm256_set1_epi32(0), c1 = _mm256_set1_epi32(1), c2 = _mm256_set1_epi32(2), c3 = _mm256_set1_epi32(3),
          c4 = _mm256_set1_epi32(4), c5 = _mm256_set1_epi32(5), c6 = _mm256_set1_epi32(6), c7 = _mm256_set1_epi32(7),
          c8 = _mm256_set1_epi32(8), c9 = _mm256_set1_epi32(9), c10 = _mm256_set1_epi32(10),
          c11 = _mm256_set1_epi32(11);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
  for (int64_t i = 0; i < iterations; ++i) {
    TPS_FOUR_CHAINS("%{vex%} vpdpbusd", a, b, c0, c1, c2, c3);
    TPS_FOUR_CHAINS("%{vex%} vpdpbusd", a, b, c4, c5, c6, c7);
    TPS_FOUR_CHAINS("%{vex%} vpdpbusd", a, b, c8, c9, c10, c11);
  }
  __m256i s = c0;
  for (__m256i c : {c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11}) s = _mm256_add_epi32(s, c);
  return static_cast<double>(_mm256_extract_epi32(s, 0));
}

}  // namespace

ComputeKernel int8_kernel_avx_vnni() { return {"int8", "avx_vnni vpdpbusd", kChains * 32 * 2.0, int8_dpbusd}; }

}  // namespace tps
