#include "model/kv_cache.h"

#include <algorithm>

#include "core/error.h"
#include "quant/quantize.h"

namespace tps {

KvCache::KvCache(const ModelConfig& config, int64_t n_blocks, int64_t block_tokens)
    : n_layers_(config.n_layers), n_blocks_(n_blocks), block_tokens_(block_tokens), kv_dim_(config.kv_dim()) {
  if (n_blocks <= 0 || block_tokens <= 0) fail("KV cache needs at least one block of at least one token");
  storage_.resize(static_cast<size_t>(n_layers_) * n_blocks_ * 2 * block_tokens_ * kv_dim_);
}

void KvCache::store(int64_t layer, int64_t block, int64_t slot, const float* key, const float* value) {
  uint16_t* keys_t = keys(layer, block) + slot;
  for (int64_t c = 0; c < kv_dim_; ++c) keys_t[c * block_tokens_] = f32_to_f16(key[c]);
  uint16_t* values_row = values(layer, block) + slot * kv_dim_;
  for (int64_t c = 0; c < kv_dim_; ++c) values_row[c] = f32_to_f16(value[c]);
}

void KvCache::copy_block(int64_t from, int64_t to) {
  const size_t n = 2 * block_tokens_ * kv_dim_;  // keys then values of one layer
  for (int64_t layer = 0; layer < n_layers_; ++layer) {
    const uint16_t* src = storage_.data() + offset(layer, from, 0);
    std::copy(src, src + n, storage_.data() + offset(layer, to, 0));
  }
}

}  // namespace tps
