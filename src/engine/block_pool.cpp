#include "engine/block_pool.h"

#include <xxhash.h>

#include <stdexcept>

namespace tps {

uint64_t block_prefix_hash(uint64_t parent_hash, std::span<const int32_t> tokens) {
  return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), parent_hash);
}

KvBlockPool::KvBlockPool(int32_t n_blocks) : blocks_(n_blocks) {
  free_.reserve(n_blocks);
  // Low ids first, so a fresh pool hands out 0, 1, 2, ...
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int32_t KvBlockPool::allocate() {
  int32_t block;
  if (!free_.empty()) {
    block = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    block = lru_.front();
    lru_.pop_front();
    unpublish(block);
  } else {
    return -1;
  }
  blocks_[block].refs = 1;
  return block;
}

void KvBlockPool::retain(int32_t block) {
  Block& b = blocks_[block];
  if (b.refs == 0) {
    if (!b.published) throw std::logic_error("retain of a free KV block");
    lru_.erase(b.lru_pos);
  }
  ++b.refs;
}

void KvBlockPool::release(int32_t block) {
  Block& b = blocks_[block];
  if (b.refs <= 0) throw std::logic_error("release of an unreferenced KV block");
  if (--b.refs > 0) return;
  if (b.published) {
    b.lru_pos = lru_.insert(lru_.end(), block);
  } else {
    free_.push_back(block);
  }
}

int32_t KvBlockPool::lookup(uint64_t hash) {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return -1;
  retain(it->second);
  return it->second;
}

bool KvBlockPool::publish(int32_t block, uint64_t hash) {
  Block& b = blocks_[block];
  if (b.published) return b.hash == hash;
  if (!by_hash_.emplace(hash, block).second) return false;
  b.published = true;
  b.hash = hash;
  return true;
}

void KvBlockPool::unpublish(int32_t block) {
  Block& b = blocks_[block];
  by_hash_.erase(b.hash);
  b.published = false;
  b.hash = 0;
}

}  // namespace tps
