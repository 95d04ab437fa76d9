#pragma once
// The KV block allocator with the prefix cache folded in: every block has a reference
// count; a full block can be registered under the hash of its token prefix so later
// sequences with the same prefix share it. Registered blocks nobody references stay
// cached and are evicted least-recently-released first when free blocks run out.
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace tps {

// Hash of a full block's tokens chained with its parent block's hash (0 for the
// first block), so equal hashes mean equal whole prefixes.
uint64_t block_prefix_hash(uint64_t parent_hash, std::span<const int32_t> tokens);

class KvBlockPool {
 public:
  explicit KvBlockPool(int32_t n_blocks);

  int32_t n_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  // Blocks someone references.
  int32_t used() const { return n_blocks() - available(); }
  // Blocks an allocation may take: never used plus cached-but-unreferenced.
  int32_t available() const { return static_cast<int32_t>(free_.size() + lru_.size()); }
  int32_t cached() const { return static_cast<int32_t>(by_hash_.size()); }

  // A block with reference count 1, or -1 when none is free and none can be evicted.
  int32_t allocate();
  void retain(int32_t block);
  void release(int32_t block);
  int32_t refcount(int32_t block) const { return blocks_[block].refs; }

  // The cached block holding this prefix hash, retained for the caller; -1 on a miss.
  int32_t lookup(uint64_t hash);
  // Registers a just-filled block under its prefix hash. When another block already
  // holds that prefix this one stays private (returns false).
  bool publish(int32_t block, uint64_t hash);
  // Published blocks are immutable: writing one needs a private copy first.
  bool is_published(int32_t block) const { return blocks_[block].published; }

 private:
  struct Block {
    int32_t refs = 0;
    bool published = false;
    uint64_t hash = 0;
    std::list<int32_t>::iterator lru_pos;
  };
  void unpublish(int32_t block);

  std::vector<Block> blocks_;
  std::vector<int32_t> free_;  // unpublished, unreferenced
  std::list<int32_t> lru_;     // published, unreferenced; front = oldest
  std::unordered_map<uint64_t, int32_t> by_hash_;
};

}  // namespace tps
