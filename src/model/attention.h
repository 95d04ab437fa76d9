#pragma once
// Causal attention of batch rows over their sequences' cached keys and values, read
// block by block through each sequence's block table with an online softmax (one pass,
// no score buffer as long as the context), as FlashAttention does.
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/ops.h"
#include "model/forward_batch.h"
#include "model/kv_cache.h"

namespace tps {

struct AttentionShape {
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // query heads share a KV head in groups (GQA)
  int64_t head_dim = 0;
};

// q: [rows][n_heads * head_dim]; out: same layout. Row r attends to positions
// 0..batch.positions[r] of its sequence, whose K/V must already be in `kv`.
// `scratch` (the block lists of the rows being attended) is grown to what the threads need.
void attention(const float* q, const ForwardBatch& batch, const KvCache& kv, int64_t layer,
               const AttentionShape& shape, float* out, std::vector<AttentionBlock>& scratch, ThreadPool& pool);

}  // namespace tps
