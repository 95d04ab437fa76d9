#pragma once
// Plans each step of continuous batching: which sequences feed which tokens through
// the next forward pass, with KV blocks allocated on demand, prefixes shared through the
// prefix cache, copy-on-write of shared blocks, and preemption when blocks run out.
// Pure bookkeeping: it never touches the model, so it is tested without one.
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "engine/block_pool.h"
#include "engine/scheduler_policy.h"
#include "engine/sequence.h"

namespace tps {

struct SchedulerConfig {
  int32_t max_seqs = 16;
  int32_t max_batch_tokens = 256;  // rows of one forward pass
  int32_t block_tokens = 16;
  bool prefix_cache = true;
};

struct ScheduledChunk {
  Sequence* seq;
  int32_t begin;  // first position fed
  int32_t count;
  bool wants_logits;  // the chunk reaches the sequence's last token
  // Rows at the chunk's end that give logits: 1, or 1 + drafts to verify; 0 mid-prompt.
  int32_t logit_rows() const { return wants_logits ? 1 + seq->drafted : 0; }
};

struct StepPlan {
  std::vector<ScheduledChunk> chunks;
  std::vector<std::pair<int32_t, int32_t>> copies;  // (from, to) block copies to do first
  std::vector<Sequence*> preempted;                 // moved back to the waiting queue
  int32_t rows() const;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, KvBlockPool& pool);

  const SchedulerConfig& config() const { return config_; }
  void enqueue(Sequence* seq) { waiting_.push_back(seq); }
  StepPlan schedule();
  // Marks the plan's tokens computed and publishes the blocks they filled. Called once a
  // chunk with logits has its next token appended, and rejected drafts have left the
  // tokens: only the accepted part of a chunk counts, so no block holding a rejected
  // draft is ever published.
  void complete(const StepPlan& plan);
  // Drops a sequence wherever it is and releases its blocks.
  void remove(Sequence* seq);

  const std::vector<Sequence*>& running() const { return running_; }
  const std::deque<Sequence*>& waiting() const { return waiting_; }
  // Prompt tokens looked up in the prefix cache and found there, over all admissions.
  int64_t prefix_lookup_tokens() const { return lookup_tokens_; }
  int64_t prefix_hit_tokens() const { return hit_tokens_; }

 private:
  int32_t blocks_for(int32_t positions) const;
  // Blocks a chunk ending at `end` still needs, copies of shared blocks included.
  int32_t blocks_needed(const Sequence& seq, int32_t end) const;
  // Allocates blocks and private copies for positions [seq.computed, end); false when
  // the pool is short (nothing is changed then).
  bool reserve(Sequence& seq, int32_t end, StepPlan& plan);
  void match_prefix(Sequence& seq);
  void release_blocks(Sequence& seq);
  void preempt(size_t index, StepPlan& plan);

  SchedulerConfig config_;
  KvBlockPool& pool_;
  CapacityPolicy capacity_;
  std::vector<Sequence*> running_;  // admission order
  std::deque<Sequence*> waiting_;
  int64_t lookup_tokens_ = 0;
  int64_t hit_tokens_ = 0;
};

}  // namespace tps
