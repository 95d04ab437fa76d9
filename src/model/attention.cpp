#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ops.h"

namespace tps {

namespace {

// One query head of one row: online softmax over the row's positions, block by block.
void attend_head(const float* q, const SequenceBlocks& seq, int64_t position, const KvCache& kv, int64_t layer,
                 int64_t kv_offset, int64_t head_dim, float scale, float* scores, float* acc, float* out) {
  const int64_t bt = kv.block_tokens();
  const int64_t stride = kv.kv_dim();
  float running_max = -std::numeric_limits<float>::infinity();
  float running_sum = 0.0f;
  std::fill(acc, acc + head_dim, 0.0f);
  for (int64_t start = 0; start <= position; start += bt) {
    const int32_t block = seq.block_table[start / bt];
    const int64_t n = std::min(bt, position + 1 - start);
    const float* keys = kv.keys(layer, block) + kv_offset;
    const float* values = kv.values(layer, block) + kv_offset;
    float block_max = running_max;
    for (int64_t j = 0; j < n; ++j) {
      scores[j] = dot(q, keys + j * stride, head_dim) * scale;
      block_max = std::max(block_max, scores[j]);
    }
    const float correction = std::exp(running_max - block_max);
    running_sum *= correction;
    for (int64_t d = 0; d < head_dim; ++d) acc[d] *= correction;
    for (int64_t j = 0; j < n; ++j) {
      const float p = std::exp(scores[j] - block_max);
      running_sum += p;
      axpy(p, values + j * stride, acc, head_dim);
    }
    running_max = block_max;
  }
  const float inv = 1.0f / running_sum;
  for (int64_t d = 0; d < head_dim; ++d) out[d] = acc[d] * inv;
}

}  // namespace

void attention(const float* q, const ForwardBatch& batch, const KvCache& kv, int64_t layer,
               const AttentionShape& shape, float* out, std::vector<float>& scratch, ThreadPool& pool) {
  const int64_t rows = static_cast<int64_t>(batch.size());
  const int64_t q_dim = shape.n_heads * shape.head_dim;
  const int64_t group = shape.n_heads / shape.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  const size_t per_thread = static_cast<size_t>(kv.block_tokens() + shape.head_dim);
  if (scratch.size() < per_thread * pool.size()) scratch.resize(per_thread * pool.size());
  // Work items are (row, head) pairs, so both prefill and a single decode row spread
  // across threads.
  pool.parallel_for(rows * shape.n_heads, 1, [&](int64_t begin, int64_t end, int thread) {
    float* scores = scratch.data() + per_thread * thread;
    float* acc = scores + kv.block_tokens();
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / shape.n_heads, h = item % shape.n_heads;
      const SequenceBlocks& seq = batch.sequences[batch.sequence[r]];
      attend_head(q + r * q_dim + h * shape.head_dim, seq, batch.positions[r], kv, layer,
                  (h / group) * shape.head_dim, shape.head_dim, scale, scores, acc,
                  out + r * q_dim + h * shape.head_dim);
    }
  });
}

}  // namespace tps
