#pragma once
// Vector helpers of the forward pass besides matmul: axpy (residuals, biases), RMS
// norm, SwiGLU, RoPE, attention's inner step. Each dispatches on active_isa() like matmul;
// the *_reference functions are the plain scalar versions the tests compare against.
#include <cstdint>

namespace tps {

void axpy(float a, const float* x, float* y, int64_t n);  // y += a * x
// out = x / sqrt(mean(x^2) + eps) * weight (out may be x)
void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out);
// out = silu(gate) * up, silu(g) = g / (1 + e^-g) (out may alias either input)
void silu_mul(const float* gate, const float* up, int64_t n, float* out);

// Rotary position embedding of n_heads vectors of head_dim at position pos, rotating
// pair i by pos * freq_base^(-2i / head_dim). kAdjacent pairs (x[2i], x[2i+1]) as in
// llama; kHalves pairs (x[i], x[i + head_dim/2]) as in NeoX/qwen2.
enum class RopeStyle { kAdjacent, kHalves };
void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t pos, float freq_base, RopeStyle style);

// out[i * out_stride] = x[i] as an IEEE half, rounded as f32_to_f16 (quant/quantize.h) does.
void to_f16(const float* x, int64_t n, uint16_t* out, int64_t out_stride = 1);

// One KV block of one KV head: its keys transposed (kt[d * kt_stride + j], IEEE
// halves, the KV cache's storage), its value rows (v[j * v_stride + d]); the first n
// positions count.
struct AttentionBlock {
  const uint16_t* kt;
  const uint16_t* v;
  int64_t n;
};

// The queries of `rows` consecutive positions of one sequence (the last row's at the
// last position of the blocks, each earlier row one position before the next), `heads`
// query heads each that share one KV head: row i's head h at q[i * row_stride + h *
// head_dim ..], its output at out[the same].
struct AttentionQueries {
  const float* q;
  float* out;
  int64_t rows;
  int64_t row_stride;
  int64_t heads;
};

// Attention of the queries over the positions of `blocks` in order, each row up to its
// own position: out = softmax(scale q.k) v per head, computed FlashAttention-style
// (online softmax, kAttentionKeys keys at a time). Each row's output is bit for bit what
// it would be alone; the rows share the reads of the keys and values they all see.
// `prefetch`: the blocks are likely not in cache, so ask for each one a block ahead.
// model/attention.cpp drives it; its test compares whole attention to a reference.
constexpr int kAttentionKeys = 16;
void attend(const AttentionQueries& queries, int64_t head_dim, float scale, const AttentionBlock* blocks,
            int64_t n_blocks, int64_t kt_stride, int64_t v_stride, bool prefetch);

void axpy_reference(float a, const float* x, float* y, int64_t n);
void rmsnorm_reference(const float* x, const float* weight, int64_t n, float eps, float* out);
void silu_mul_reference(const float* gate, const float* up, int64_t n, float* out);
void rope_reference(float* x, int64_t n_heads, int64_t head_dim, int64_t pos, float freq_base, RopeStyle style);

}  // namespace tps
