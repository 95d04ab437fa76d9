#include <immintrin.h>

#include "roofline/probe_kernels.h"

namespace tps {

uint64_t read_kernel_avx2(const uint8_t* p, size_t n) {
  const __m256i s = read_two_halves<__m256i, 32>(
      p, n, [](const uint8_t* at) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(at)); },
      [](__m256i x, __m256i y) { return _mm256_add_epi64(x, y); });
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

namespace {

constexpr int kChains = 12;

double f32_fma(int64_t iterations) {
  __m256 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_ps(0.001f * j);
  const __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-4f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], x, y);
  alignas(32) float lanes[8];
  __m256 s = acc[0];
  for (int j = 1; j < kChains; ++j) s = _mm256_add_ps(s, acc[j]);
  _mm256_store_ps(lanes, s);
  return lanes[0] + lanes[7];
}

// vpmaddubsw (u8 x s8 pairs summed to i16) is the int8 multiply of AVX2 without VNNI;
// each chain feeds its output back as the next unsigned operand.
double int8_maddubs(int64_t iterations) {
  __m256i x[kChains];
  for (int j = 0; j < kChains; ++j) x[j] = _mm256_set1_epi8(static_cast<char>(j + 1));
  const __m256i b = _mm256_set1_epi8(3);
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < kChains; ++j) x[j] = _mm256_maddubs_epi16(x[j], b);
  __m256i s = x[0];
  for (int j = 1; j < kChains; ++j) s = _mm256_add_epi16(s, x[j]);
  return static_cast<double>(_mm256_extract_epi16(s, 0));
}

}  // namespace

std::vector<ComputeKernel> compute_kernels_avx2() {
  return {{"f32", "avx2 vfmadd231ps", kChains * 8 * 2.0, f32_fma},
          {"int8", "avx2 vpmaddubsw", kChains * 32 * 2.0, int8_maddubs}};
}

}  // namespace tps
