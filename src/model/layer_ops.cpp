#include "model/layer_ops.h"

#include <cmath>

namespace tps {

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(sum / n + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void rope_angles(int64_t position, float base, int64_t rope_dims, float* cos, float* sin) {
  for (int64_t i = 0; i < rope_dims / 2; ++i) {
    double theta = position * std::pow(static_cast<double>(base), -2.0 * i / rope_dims);
    cos[i] = static_cast<float>(std::cos(theta));
    sin[i] = static_cast<float>(std::sin(theta));
  }
}

void apply_rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dims, RopeStyle style,
                const float* cos, const float* sin) {
  const int64_t half = rope_dims / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      // (a, b) is one pair rotated by theta_i.
      float* a = style == RopeStyle::kAdjacentPairs ? v + 2 * i : v + i;
      float* b = style == RopeStyle::kAdjacentPairs ? v + 2 * i + 1 : v + i + half;
      const float x0 = *a, x1 = *b;
      *a = x0 * cos[i] - x1 * sin[i];
      *b = x0 * sin[i] + x1 * cos[i];
    }
  }
}

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void add_in_place(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace tps
