#pragma once
// Storage of attention keys and values for every layer, in fixed-size blocks of
// positions. A sequence owns a block table (block ids in position order), so memory
// follows actual lengths; which blocks a sequence gets is decided in src/engine.
// Values are IEEE halves, as llama.cpp's default cache: half the memory and half the
// bytes a decode step's attention reads, for rounding far below the weights'.
#include <cstdint>

#include "core/huge_pages.h"
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
  size_t bytes() const { return values() * kBytesPerValue; }

  // One block of one layer holds, head after head, the head's keys stored transposed,
  // [head_dim][block_tokens] (rows of consecutive positions, which attention scores a
  // vector at a time), then its values, [block_tokens][head_dim]. What attention reads
  // of a block for one head (4 KiB for TinyLlama) is then one run: batched decode's
  // attention from memory measured 1.5x faster than with all heads' values per
  // position (BM_AttentionDecode16x192AllLayers).
  const uint16_t* head_keys(int64_t layer, int64_t block, int64_t head) const {
    return data() + head_offset(layer, block, head);
  }
  const uint16_t* head_values(int64_t layer, int64_t block, int64_t head) const {
    return head_keys(layer, block, head) + head_dim_ * block_tokens_;
  }
  // Writes the key and value vectors (kv_dim each) of position `slot` of a block,
  // rounded to halves.
  void store(int64_t layer, int64_t block, int64_t slot, const float* key, const float* value);
  // Copies one block's contents (all layers) to another: copy-on-write of shared prefixes.
  void copy_block(int64_t from, int64_t to);
  // Copies blocks [0, n) of every layer from a cache of the same shape: what a cache
  // grown to more blocks keeps.
  void copy_blocks_from(const KvCache& from, int64_t n);

 private:
  size_t block_size() const { return static_cast<size_t>(2 * block_tokens_ * kv_dim_); }  // keys and values
  size_t values() const { return static_cast<size_t>(n_layers_) * n_blocks_ * block_size(); }
  size_t offset(int64_t layer, int64_t block) const {
    return (static_cast<size_t>(layer) * n_blocks_ + block) * block_size();
  }
  size_t head_offset(int64_t layer, int64_t block, int64_t head) const {
    return offset(layer, block) + head * 2 * head_dim_ * block_tokens_;
  }
  uint16_t* data() const { return reinterpret_cast<uint16_t*>(storage_.get()); }
  int64_t n_layers_, n_blocks_, block_tokens_, kv_dim_, head_dim_;
  // Huge pages: batched decode reads K/V from memory, a TLB miss every 4 KiB otherwise.
  HugePageBuffer storage_;
};

}  // namespace tps
