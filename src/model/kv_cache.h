#pragma once
// Storage of attention keys and values for every layer, in fixed-size blocks of
// positions. A sequence owns a block table (block ids in position order), so memory
// follows actual lengths; which blocks a sequence gets is decided in src/engine.
// Values are IEEE halves, as llama.cpp's default cache: half the memory and half the
// bytes a decode step's attention reads, for rounding far below the weights'.
#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace tps {

class KvCache {
 public:
  static constexpr int64_t kDefaultBlockTokens = 16;
  KvCache(const ModelConfig& config, int64_t n_blocks, int64_t block_tokens = kDefaultBlockTokens);

  int64_t n_blocks() const { return n_blocks_; }
  int64_t block_tokens() const { return block_tokens_; }
  int64_t kv_dim() const { return kv_dim_; }
  static constexpr int64_t kBytesPerValue = sizeof(uint16_t);
  size_t bytes() const { return storage_.size() * kBytesPerValue; }

  // One block of one layer. Keys are stored transposed, [kv_dim][block_tokens], so the
  // keys of one head form rows of consecutive positions that attention scores a
  // vector at a time; values are [block_tokens][kv_dim].
  uint16_t* keys(int64_t layer, int64_t block) { return storage_.data() + offset(layer, block, 0); }
  uint16_t* values(int64_t layer, int64_t block) { return storage_.data() + offset(layer, block, 1); }
  const uint16_t* keys(int64_t layer, int64_t block) const { return storage_.data() + offset(layer, block, 0); }
  const uint16_t* values(int64_t layer, int64_t block) const { return storage_.data() + offset(layer, block, 1); }
  // Writes the key and value vectors (kv_dim each) of position `slot` of a block,
  // rounded to halves.
  void store(int64_t layer, int64_t block, int64_t slot, const float* key, const float* value);
  // Copies one block's contents (all layers) to another: copy-on-write of shared prefixes.
  void copy_block(int64_t from, int64_t to);

 private:
  size_t offset(int64_t layer, int64_t block, int kv) const {
    return ((static_cast<size_t>(layer) * n_blocks_ + block) * 2 + kv) * block_tokens_ * kv_dim_;
  }
  int64_t n_layers_, n_blocks_, block_tokens_, kv_dim_;
  std::vector<uint16_t> storage_;
};

}  // namespace tps
