#pragma once
// What the scheduler knows of one request: its tokens so far, how many of them have
// K/V in the cache, and the blocks that hold them.
#include <cstdint>
#include <vector>

namespace tps {

struct Sequence {
  uint64_t id = 0;
  std::vector<int32_t> tokens;        // prompt, then generated tokens
  int32_t prompt_len = 0;
  int32_t computed = 0;               // leading tokens whose K/V are in the cache
  std::vector<int32_t> blocks;        // block table: KV block ids in position order
  std::vector<uint64_t> block_hashes; // prefix hashes of the leading full blocks
  int32_t cached_tokens = -1;         // prefix-cache hit of the first admission (-1: not yet)
  int32_t preemptions = 0;
  // Speculative decoding: the last `drafted` tokens are proposals, fed with the last
  // accepted token in one chunk whose every row gives logits, and then verified.
  int32_t drafted = 0;

  int32_t pending() const { return static_cast<int32_t>(tokens.size()) - computed; }
  int32_t generated() const { return static_cast<int32_t>(tokens.size()) - drafted - prompt_len; }
  void drop_drafts() {
    tokens.resize(tokens.size() - static_cast<size_t>(drafted));
    drafted = 0;
  }
};

}  // namespace tps
