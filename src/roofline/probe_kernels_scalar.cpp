#include "roofline/probe_kernels.h"

namespace tps {

uint64_t read_kernel_scalar(const uint8_t* p, size_t n) {
  const uint64_t* w = reinterpret_cast<const uint64_t*>(p);
  const size_t half = n / 512 * 32;  // in words
  const uint64_t* v = w + half;
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (size_t i = 0; i < half; i += 2) {
    a0 += w[i];
    a1 += w[i + 1];
    a2 += v[i];
    a3 += v[i + 1];
  }
  for (size_t i = 2 * half; i < n / 8; ++i) a0 += w[i];
  return a0 + a1 + a2 + a3;
}

namespace {

constexpr int kChains = 8;

double f32_mul_add(int64_t iterations) {
  float acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = 0.001f * j;
  for (int64_t i = 0; i < iterations; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = acc[j] * 0.999f + 1e-4f;
  double s = 0;
  for (float a : acc) s += a;
  return s;
}

}  // namespace

std::vector<ComputeKernel> compute_kernels_scalar() {
  return {{"f32", "scalar", kChains * 2.0, f32_mul_add}};
}

}  // namespace tps
