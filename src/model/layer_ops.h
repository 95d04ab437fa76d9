#pragma once
// The element-wise pieces of a transformer layer, on one row (token) at a time.
#include <cstdint>

#include "model/model_config.h"

namespace tps {

// out = x / sqrt(mean(x^2) + eps) * weight. `out` may alias `x`.
void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps);

// Rotates the first rope_dims of each of n_heads heads of x by angles whose cos and sin
// are given per pair (rope_dims / 2 of each); pairs are adjacent elements (llama GGUF,
// whose converter permutes Q/K for it) or the two halves of the rotated part (neox).
void apply_rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dims, RopeStyle style,
                const float* cos, const float* sin);

// The rotation angles at `position`: theta_i = position * base^(-2i / rope_dims).
void rope_angles(int64_t position, float base, int64_t rope_dims, float* cos, float* sin);

// gate[i] = silu(gate[i]) * up[i]: the SwiGLU of the feed-forward block.
void silu_mul(float* gate, const float* up, int64_t n);

// x[i] += y[i]
void add_in_place(float* x, const float* y, int64_t n);

}  // namespace tps
