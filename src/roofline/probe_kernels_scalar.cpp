#include <cstring>

#include "roofline/probe_kernels.h"

namespace tps {

uint64_t read_kernel_scalar(const uint8_t* p, size_t n) {
  return read_two_halves<uint64_t, 8>(
      p, n,
      [](const uint8_t* at) {
        uint64_t w;
        std::memcpy(&w, at, 8);
        return w;
      },
      [](uint64_t x, uint64_t y) { return x + y; });
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
