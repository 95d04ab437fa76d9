#include "kernels/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/ops_kernels.h"
#include "kernels/unmerged.h"
#include "quant/quantize.h"

namespace tps {

namespace ops_baseline {
#include "kernels/ops_impl.inc"
}  // namespace ops_baseline

const OpsKernels& ops_kernels_baseline() {
  static constexpr OpsKernels k{ops_baseline::axpy, ops_baseline::rmsnorm,
                                ops_baseline::silu_mul, ops_baseline::rope, ops_baseline::to_f16,
                                ops_baseline::attend};
  return k;
}

namespace {

const OpsKernels& ops_for(Isa isa) {
  if (isa >= Isa::kAvx512) return ops_kernels_avx512();
  if (isa >= Isa::kAvx2) return ops_kernels_avx2();
  return ops_kernels_baseline();
}

const OpsKernels& active() { return ops_for(active_isa()); }

// cos/sin of pos * freq_base^(-2i / head_dim) for each pair i.
void rope_table(int64_t head_dim, int64_t pos, float freq_base, float* cos_t, float* sin_t) {
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    float theta = static_cast<float>(pos) * std::pow(freq_base, -2.0f * static_cast<float>(i) / static_cast<float>(head_dim));
    cos_t[i] = std::cos(theta);
    sin_t[i] = std::sin(theta);
  }
}

}  // namespace

void axpy(float a, const float* x, float* y, int64_t n) { active().axpy(a, x, y, n); }
void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  active().rmsnorm(x, weight, n, eps, out);
}
void silu_mul(const float* gate, const float* up, int64_t n, float* out) { active().silu_mul(gate, up, n, out); }

void attend(const AttentionQueries& queries, int64_t head_dim, float scale, const AttentionBlock* blocks,
            int64_t n_blocks, int64_t kt_stride, int64_t v_stride, bool prefetch) {
  active().attend(queries, head_dim, scale, blocks, n_blocks, kt_stride, v_stride, prefetch);
}

void to_f16(const float* x, int64_t n, uint16_t* out, int64_t out_stride) { active().to_f16(x, n, out, out_stride); }

void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t pos, float freq_base, RopeStyle style) {
  // The last position's table: a decode step rotates q and k of every layer at one
  // position (measured on TinyLlama: recomputing it per call took 1.5 % of decode).
  struct Table {
    int64_t head_dim = -1, pos = -1;
    float freq_base = 0;
    std::vector<float> cos_sin;
  };
  thread_local Table table;
  if (table.head_dim != head_dim || table.pos != pos || table.freq_base != freq_base) {
    table.cos_sin.resize(static_cast<size_t>(head_dim));
    rope_table(head_dim, pos, freq_base, table.cos_sin.data(), table.cos_sin.data() + head_dim / 2);
    table.head_dim = head_dim;
    table.pos = pos;
    table.freq_base = freq_base;
  }
  active().rope(x, n_heads, head_dim, table.cos_sin.data(), table.cos_sin.data() + head_dim / 2, style);
}

void axpy_reference(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void rmsnorm_reference(const float* x, const float* weight, int64_t n, float eps, float* out) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  double scale = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i] * scale * weight[i]);
}

void silu_mul_reference(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(gate[i] / (1.0 + std::exp(-static_cast<double>(gate[i]))) * up[i]);
}

void rope_reference(float* x, int64_t n_heads, int64_t head_dim, int64_t pos, float freq_base, RopeStyle style) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      double theta = static_cast<double>(pos) * std::pow(static_cast<double>(freq_base), -2.0 * i / head_dim);
      int64_t ia = style == RopeStyle::kHalves ? i : 2 * i, ib = style == RopeStyle::kHalves ? i + half : 2 * i + 1;
      double a = v[ia], b = v[ib];
      v[ia] = static_cast<float>(a * std::cos(theta) - b * std::sin(theta));
      v[ib] = static_cast<float>(a * std::sin(theta) + b * std::cos(theta));
    }
  }
}

}  // namespace tps
