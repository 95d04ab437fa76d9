#include "model/kv_cache.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/ops.h"

namespace tps {

KvCache::KvCache(const ModelConfig& config, int64_t n_blocks, int64_t block_tokens)
    : n_layers_(config.n_layers),
      n_blocks_(n_blocks),
      block_tokens_(block_tokens),
      kv_dim_(config.kv_dim()),
      head_dim_(config.head_dim) {
  if (n_blocks <= 0 || block_tokens <= 0) fail("KV cache needs at least one block of at least one token");
  storage_ = allocate_huge_pages(bytes());
  std::fill_n(data(), values(), uint16_t{0});
}

void KvCache::store(int64_t layer, int64_t block, int64_t slot, const float* key, const float* value) {
  for (int64_t h = 0; h < kv_dim_ / head_dim_; ++h) {
    uint16_t* keys = data() + head_offset(layer, block, h);
    uint16_t* values = keys + head_dim_ * block_tokens_;
    to_f16(key + h * head_dim_, head_dim_, keys + slot, block_tokens_);
    to_f16(value + h * head_dim_, head_dim_, values + slot * head_dim_);
  }
}

void KvCache::copy_block(int64_t from, int64_t to) {
  for (int64_t layer = 0; layer < n_layers_; ++layer)
    std::copy_n(data() + offset(layer, from), block_size(), data() + offset(layer, to));
}

void KvCache::copy_blocks_from(const KvCache& from, int64_t n) {
  if (from.n_layers_ != n_layers_ || from.block_tokens_ != block_tokens_ || from.kv_dim_ != kv_dim_ ||
      from.head_dim_ != head_dim_ || n > std::min(n_blocks_, from.n_blocks_))
    fail("cannot copy {} KV blocks between caches of different shapes", n);
  for (int64_t layer = 0; layer < n_layers_; ++layer)  // a layer's blocks are contiguous
    std::copy_n(from.data() + from.offset(layer, 0), n * block_size(), data() + offset(layer, 0));
}

}  // namespace tps
