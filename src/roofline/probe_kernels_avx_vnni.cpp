#include <immintrin.h>

#include "roofline/probe_kernels.h"

namespace tps {

namespace {

constexpr int kChains = 12;

// Independent vpdpbusd chains (4 u8 x s8 products per 32-bit lane each).
double int8_dpbusd(int64_t iterations) {
  __m256i acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_epi32(j);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_dpbusd_avx_epi32(acc[j], a, b);
  __m256i s = acc[0];
  for (int j = 1; j < kChains; ++j) s = _mm256_add_epi32(s, acc[j]);
  return static_cast<double>(_mm256_extract_epi32(s, 0));
}

}  // namespace

ComputeKernel int8_kernel_avx_vnni() { return {"int8", "avx_vnni vpdpbusd", kChains * 32 * 2.0, int8_dpbusd}; }

}  // namespace tps
