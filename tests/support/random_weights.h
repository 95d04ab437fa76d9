#pragma once
// Random weights and activations for the kernel tests.
#include <memory>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/packed_weights.h"
#include "quant/quantize.h"

namespace tps::test {

inline std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Gaussian weights of `type`, packed as the model loader packs them.
struct Matrix {
  std::vector<uint8_t> data;
  WeightMatrix w;
  PackedWeights packed;
};

inline std::unique_ptr<Matrix> random_matrix(GgmlType type, int64_t rows, int64_t cols, uint32_t seed, ThreadPool& pool) {
  auto m = std::make_unique<Matrix>();
  auto wf = gaussian(static_cast<size_t>(rows * cols), seed);
  size_t rb = row_bytes(type, cols);
  m->data.resize(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) quantize_row(type, wf.data() + r * cols, m->data.data() + r * rb, cols);
  m->w = WeightMatrix{type, rows, cols, m->data.data(), rb};
  m->packed = pack_weights(m->w, &pool);
  if (!m->packed.empty()) m->w.packed = &m->packed;
  return m;
}

}  // namespace tps::test
