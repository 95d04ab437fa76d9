#include <immintrin.h>

#include <cstring>
#include <initializer_list>

#include "roofline/probe_kernels.h"

namespace tps {

namespace {

// Horizontal sums through memory: gcc 12's _mm512_reduce_* warn spuriously (-Wuninitialized).
template <typename T, typename V>
T lane_sum(V v) {
  alignas(64) T lanes[64 / sizeof(T)];
  std::memcpy(lanes, &v, 64);
  T s = 0;
  for (T x : lanes) s += x;
  return s;
}

}  // namespace

uint64_t read_kernel_avx512(const uint8_t* p, size_t n) {
  return lane_sum<uint64_t>(read_two_halves<__m512i, 64>(
      p, n, [](const uint8_t* at) { return _mm512_load_si512(at); },
      [](__m512i x, __m512i y) { return _mm512_add_epi64(x, y); }));
}

namespace {

// 16 independent chains cover latency x pipes of every path timed (e.g. 4-cycle FMA x 2,
// 6-cycle vdpbf16ps x 2) and leave registers for the operands.
constexpr int kChains = 16;

double f32_fma(int64_t iterations) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(0.001f * j);
  // acc -> acc * x + y converges to y / (1 - x) = 0.1: values stay normal, no denormal stalls.
  const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-4f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], x, y);
  __m512 s = acc[0];
  for (int j = 1; j < kChains; ++j) s = _mm512_add_ps(s, acc[j]);
  return lane_sum<float>(s);
}

// Sixteen chains c_j = start(j), each advanced `iterations` times by step, four at a
// time (TPS_FOUR_CHAINS); their sum by add. Named locals, not an array: see
// probe_kernels.h.
template <typename V, typename Start, typename Step, typename Add>
V sixteen_chains(int64_t iterations, Start start, Step step, Add add) {
  V c0 = start(0), c1 = start(1), c2 = start(2), c3 = start(3), c4 = start(4), c5 = start(5), c6 = start(6),
    c7 = start(7), c8 = start(8), c9 = start(9), c10 = start(10), c11 = start(11), c12 = start(12), c13 = start(13),
    c14 = start(14), c15 = start(15);
  for (int64_t i = 0; i < iterations; ++i) {
    step(c0, c1, c2, c3);
    step(c4, c5, c6, c7);
    step(c8, c9, c10, c11);
    step(c12, c13, c14, c15);
  }
  V s = c0;
  for (V c : {c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15}) s = add(s, c);
  return s;
}

// Called only where the CPU has AVX512_BF16 (compute_kernels_avx512 checks).
[[gnu::target("avx512bf16")]] double bf16_dot(int64_t iterations) {
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(3e-3f), _mm512_set1_ps(1e-3f));
  return lane_sum<float>(sixteen_chains<__m512>(
      iterations, [](int j) { return _mm512_set1_ps(0.001f * static_cast<float>(j)); },
      [&](__m512& w, __m512& x, __m512& y, __m512& z) { TPS_FOUR_CHAINS("vdpbf16ps", a, b, w, x, y, z); },
      [](__m512 x, __m512 y) { return _mm512_add_ps(x, y); }));
}

double int8_vnni(int64_t iterations) {
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  return lane_sum<int32_t>(sixteen_chains<__m512i>(
      iterations, [](int j) { return _mm512_set1_epi32(j); },
      [&](__m512i& w, __m512i& x, __m512i& y, __m512i& z) { TPS_FOUR_CHAINS("vpdpbusd", a, b, w, x, y, z); },
      [](__m512i x, __m512i y) { return _mm512_add_epi32(x, y); }));
}

}  // namespace

std::vector<ComputeKernel> compute_kernels_avx512() {
  std::vector<ComputeKernel> k = {{"f32", "avx512 vfmadd231ps", kChains * 16 * 2.0, f32_fma}};
  if (__builtin_cpu_supports("avx512bf16"))
    k.push_back({"bf16", "avx512_bf16 vdpbf16ps", kChains * 32 * 2.0, bf16_dot});
  if (__builtin_cpu_supports("avx512vnni"))
    k.push_back({"int8", "avx512_vnni vpdpbusd", kChains * 64 * 2.0, int8_vnni});
  return k;
}

}  // namespace tps
