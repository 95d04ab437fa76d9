#pragma once
// The replaceable rules of the scheduler, each small enough to test alone:
// how many sequences may run, how many tokens one step may carry (prefill is chunked
// to what is left of it), and whom to preempt when KV blocks run out.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/sequence.h"

namespace tps {

// Caps the rows of one forward pass. Decode rows are taken first, so a long prompt is
// fed in chunks of what remains and never stalls the streams already running.
class TokenBudget {
 public:
  explicit TokenBudget(int32_t tokens) : remaining_(tokens) {}
  int32_t remaining() const { return remaining_; }
  // Grants up to `wanted` tokens.
  int32_t take(int32_t wanted) {
    int32_t granted = std::clamp(wanted, 0, remaining_);
    remaining_ -= granted;
    return granted;
  }
  void give_back(int32_t tokens) { remaining_ += tokens; }

 private:
  int32_t remaining_;
};

// Admits a waiting sequence while fewer than max_seqs run and its first chunk's
// blocks are free without preempting anyone (new work never evicts running work).
struct CapacityPolicy {
  int32_t max_seqs = 16;
  bool can_admit(size_t running, int32_t blocks_needed, int32_t blocks_available) const {
    return static_cast<int32_t>(running) < max_seqs && blocks_needed <= blocks_available;
  }
};

// The most recently admitted sequence loses its blocks first: it has the least work
// to redo and the oldest requests keep making progress, so nothing deadlocks.
inline size_t preemption_victim(const std::vector<Sequence*>& running) { return running.size() - 1; }

}  // namespace tps
