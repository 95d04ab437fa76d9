#include "model/kv_cache.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/ops.h"

namespace tps {

KvCache::KvCache(const ModelConfig& config, int64_t n_blocks, int64_t block_tokens)
    : n_layers_(config.n_layers), n_blocks_(n_blocks), block_tokens_(block_tokens), kv_dim_(config.kv_dim()) {
  if (n_blocks <= 0 || block_tokens <= 0) fail("KV cache needs at least one block of at least one token");
  storage_.resize(static_cast<size_t>(n_layers_) * n_blocks_ * 2 * block_tokens_ * kv_dim_);
}

void KvCache::store(int64_t layer, int64_t block, int64_t slot, const float* key, const float* value) {
  to_f16(key, kv_dim_, keys(layer, block) + slot, block_tokens_);
  to_f16(value, kv_dim_, values(layer, block) + slot * kv_dim_);
}

void KvCache::copy_block(int64_t from, int64_t to) {
  const size_t n = 2 * block_tokens_ * kv_dim_;  // keys then values of one layer
  for (int64_t layer = 0; layer < n_layers_; ++layer) {
    const uint16_t* src = storage_.data() + offset(layer, from, 0);
    std::copy(src, src + n, storage_.data() + offset(layer, to, 0));
  }
}

}  // namespace tps
