#include "engine/scheduler.h"

#include <algorithm>
#include <stdexcept>

namespace tps {

int32_t StepPlan::rows() const {
  int32_t n = 0;
  for (const auto& c : chunks) n += c.count;
  return n;
}

Scheduler::Scheduler(const SchedulerConfig& config, KvBlockPool& pool) : config_(config), pool_(pool) {
  if (config.max_seqs < 1 || config.block_tokens < 1 || config.max_batch_tokens < config.max_seqs)
    throw std::invalid_argument("scheduler: need max_seqs >= 1 and max_batch_tokens >= max_seqs");
  capacity_.max_seqs = config.max_seqs;
}

int32_t Scheduler::blocks_for(int32_t positions) const {
  return (positions + config_.block_tokens - 1) / config_.block_tokens;
}

static bool shared(const KvBlockPool& pool, int32_t block) {
  return pool.is_published(block) || pool.refcount(block) > 1;
}

int32_t Scheduler::blocks_needed(const Sequence& seq, int32_t end) const {
  int32_t have = static_cast<int32_t>(seq.blocks.size());
  int32_t need = std::max(0, blocks_for(end) - have);
  int32_t last_written = std::min(have, blocks_for(end));
  for (int32_t i = seq.computed / config_.block_tokens; i < last_written; ++i)
    if (shared(pool_, seq.blocks[i])) ++need;
  return need;
}

bool Scheduler::reserve(Sequence& seq, int32_t end, StepPlan& plan) {
  if (blocks_needed(seq, end) > pool_.available()) return false;
  int32_t have = static_cast<int32_t>(seq.blocks.size());
  int32_t last_written = std::min(have, blocks_for(end));
  // Copy-on-write: a block others share (or may share through the cache) is never
  // written in place; the sequence gets a private copy of it.
  for (int32_t i = seq.computed / config_.block_tokens; i < last_written; ++i) {
    int32_t from = seq.blocks[i];
    if (!shared(pool_, from)) continue;
    int32_t to = pool_.allocate();
    plan.copies.emplace_back(from, to);
    seq.blocks[i] = to;
    pool_.release(from);
  }
  while (static_cast<int32_t>(seq.blocks.size()) < blocks_for(end)) seq.blocks.push_back(pool_.allocate());
  return true;
}

void Scheduler::match_prefix(Sequence& seq) {
  if (!config_.prefix_cache || !seq.blocks.empty()) return;
  const int32_t bt = config_.block_tokens;
  const int32_t n_full = static_cast<int32_t>(seq.tokens.size()) / bt;
  uint64_t parent = 0;
  for (int32_t i = 0; i < n_full; ++i) {
    uint64_t h = block_prefix_hash(parent, {seq.tokens.data() + i * bt, static_cast<size_t>(bt)});
    int32_t block = pool_.lookup(h);
    if (block < 0) break;
    seq.blocks.push_back(block);
    seq.block_hashes.push_back(h);
    parent = h;
  }
  seq.computed = static_cast<int32_t>(seq.blocks.size()) * bt;
  // The last token is always fed again: its logits give the next token.
  if (seq.computed == static_cast<int32_t>(seq.tokens.size())) seq.computed -= 1;
}

void Scheduler::release_blocks(Sequence& seq) {
  for (int32_t b : seq.blocks) pool_.release(b);
  seq.blocks.clear();
  seq.block_hashes.clear();
  seq.computed = 0;
}

void Scheduler::preempt(size_t index, StepPlan& plan) {
  Sequence* seq = running_[index];
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
  std::erase_if(plan.chunks, [&](const ScheduledChunk& c) { return c.seq == seq; });
  seq->drop_drafts();
  release_blocks(*seq);
  seq->preemptions++;
  waiting_.push_front(seq);
  plan.preempted.push_back(seq);
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  TokenBudget budget(config_.max_batch_tokens);
  // Decode rows (with their drafts) first, then prefill chunks, each in admission order.
  std::vector<Sequence*> order;
  for (Sequence* s : running_)
    if (s->pending() - s->drafted == 1) order.push_back(s);
  for (Sequence* s : running_)
    if (s->pending() - s->drafted != 1) order.push_back(s);

  for (Sequence* s : order) {
    auto it = std::find(running_.begin(), running_.end(), s);
    if (it == running_.end()) continue;  // preempted by an older sequence this step
    // Drafts the budget cannot take are dropped, never split from their verification.
    if (s->drafted > 0 && budget.remaining() < s->pending()) {
      const int32_t keep = std::max(0, budget.remaining() - 1);
      s->tokens.resize(s->tokens.size() - static_cast<size_t>(s->drafted - std::min(keep, s->drafted)));
      s->drafted = std::min(keep, s->drafted);
    }
    int32_t take = budget.take(s->pending());
    if (take == 0) continue;
    int32_t end = s->computed + take;
    bool reserved = true;
    while (!(reserved = reserve(*s, end, plan))) {
      size_t victim = preemption_victim(running_);
      if (running_[victim] == s) break;
      for (const auto& c : plan.chunks)
        if (c.seq == running_[victim]) budget.give_back(c.count);
      preempt(victim, plan);
    }
    if (!reserved) {
      budget.give_back(take);
      preempt(static_cast<size_t>(std::find(running_.begin(), running_.end(), s) - running_.begin()), plan);
      continue;
    }
    plan.chunks.push_back({s, s->computed, take, end == static_cast<int32_t>(s->tokens.size())});
  }

  // New work is admitted only while nobody had to give blocks back.
  while (plan.preempted.empty() && !waiting_.empty() && budget.remaining() > 0) {
    Sequence& s = *waiting_.front();
    match_prefix(s);
    int32_t take = std::min(s.pending(), budget.remaining());
    int32_t end = s.computed + take;
    if (!capacity_.can_admit(running_.size(), blocks_needed(s, end), pool_.available())) {
      release_blocks(s);
      break;
    }
    if (s.cached_tokens < 0) {
      s.cached_tokens = s.computed;
      lookup_tokens_ += static_cast<int64_t>(s.tokens.size());
      hit_tokens_ += s.computed;
    }
    budget.take(take);
    reserve(s, end, plan);
    plan.chunks.push_back({&s, s.computed, take, end == static_cast<int32_t>(s.tokens.size())});
    running_.push_back(&s);
    waiting_.pop_front();
  }
  return plan;
}

void Scheduler::complete(const StepPlan& plan) {
  const int32_t bt = config_.block_tokens;
  for (const auto& c : plan.chunks) {
    Sequence& s = *c.seq;
    // The sampled token that ends a chunk with logits is not in the cache yet.
    s.computed = std::min(c.begin + c.count, static_cast<int32_t>(s.tokens.size()) - (c.wants_logits ? 1 : 0));
    while (static_cast<int32_t>(s.block_hashes.size() + 1) * bt <= s.computed) {
      size_t i = s.block_hashes.size();
      uint64_t parent = i == 0 ? 0 : s.block_hashes[i - 1];
      uint64_t h = block_prefix_hash(parent, {s.tokens.data() + i * bt, static_cast<size_t>(bt)});
      s.block_hashes.push_back(h);
      if (config_.prefix_cache) pool_.publish(s.blocks[i], h);
    }
  }
}

void Scheduler::remove(Sequence* seq) {
  std::erase(running_, seq);
  auto it = std::find(waiting_.begin(), waiting_.end(), seq);
  if (it != waiting_.end()) waiting_.erase(it);
  release_blocks(*seq);
}

}  // namespace tps
