#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace tps {
namespace {

Sequence make_seq(uint64_t id, int32_t prompt_len, int32_t first_token = 1) {
  Sequence s;
  s.id = id;
  s.tokens.resize(prompt_len);
  std::iota(s.tokens.begin(), s.tokens.end(), first_token);
  s.prompt_len = prompt_len;
  return s;
}

// What the engine does after a forward pass: one new token for every sequence whose
// chunk reached its end, then complete().
void run_step(Scheduler& sched, const StepPlan& plan) {
  for (const auto& c : plan.chunks)
    if (c.wants_logits) c.seq->tokens.push_back(1000 + static_cast<int32_t>(c.seq->tokens.size()));
  sched.complete(plan);
}

}  // namespace

TEST(TokenBudget, GrantsWhatIsLeft) {
  TokenBudget b(10);
  EXPECT_EQ(b.take(4), 4);
  EXPECT_EQ(b.take(8), 6);
  EXPECT_EQ(b.take(1), 0);
  b.give_back(3);
  EXPECT_EQ(b.remaining(), 3);
}

TEST(CapacityPolicy, LimitsSequencesAndBlocks) {
  CapacityPolicy c{2};
  EXPECT_TRUE(c.can_admit(1, 3, 3));
  EXPECT_FALSE(c.can_admit(2, 0, 10));
  EXPECT_FALSE(c.can_admit(0, 4, 3));
}

TEST(Scheduler, ChunksLongPromptsAndPutsDecodeRowsFirst) {
  KvBlockPool pool(64);
  Scheduler sched({.max_seqs = 4, .max_batch_tokens = 8, .block_tokens = 4, .prefix_cache = false}, pool);
  Sequence a = make_seq(1, 3), b = make_seq(2, 20, 100);
  sched.enqueue(&a);
  sched.enqueue(&b);
  StepPlan p1 = sched.schedule();
  ASSERT_EQ(p1.chunks.size(), 2u);
  EXPECT_EQ(p1.chunks[0].count, 3);
  EXPECT_TRUE(p1.chunks[0].wants_logits);
  EXPECT_EQ(p1.chunks[1].count, 5);  // what the budget leaves
  EXPECT_FALSE(p1.chunks[1].wants_logits);
  run_step(sched, p1);
  // Next step: a's decode row comes first, then the rest of b's prompt in a chunk.
  StepPlan p2 = sched.schedule();
  ASSERT_EQ(p2.chunks.size(), 2u);
  EXPECT_EQ(p2.chunks[0].seq, &a);
  EXPECT_EQ(p2.chunks[0].count, 1);
  EXPECT_EQ(p2.chunks[1].seq, &b);
  EXPECT_EQ(p2.chunks[1].begin, 5);
  EXPECT_EQ(p2.chunks[1].count, 7);
  EXPECT_EQ(p2.rows(), 8);
  run_step(sched, p2);
  EXPECT_EQ(b.computed, 12);
  EXPECT_EQ(b.blocks.size(), 3u);
  EXPECT_EQ(a.blocks.size(), 1u);
}

TEST(Scheduler, RespectsMaxSeqs) {
  KvBlockPool pool(64);
  Scheduler sched({.max_seqs = 2, .max_batch_tokens = 64, .block_tokens = 4}, pool);
  Sequence s[3] = {make_seq(1, 2), make_seq(2, 2, 50), make_seq(3, 2, 90)};
  for (auto& q : s) sched.enqueue(&q);
  StepPlan p = sched.schedule();
  EXPECT_EQ(p.chunks.size(), 2u);
  EXPECT_EQ(sched.waiting().size(), 1u);
  sched.remove(&s[0]);
  run_step(sched, p);
  p = sched.schedule();
  EXPECT_EQ(sched.running().size(), 2u);
  EXPECT_EQ(sched.waiting().size(), 0u);
}

TEST(Scheduler, SharesCachedPrefixBlocksAndCopiesBeforeWriting) {
  KvBlockPool pool(16);
  Scheduler sched({.max_seqs = 4, .max_batch_tokens = 64, .block_tokens = 4}, pool);
  Sequence a = make_seq(1, 8);
  sched.enqueue(&a);
  run_step(sched, sched.schedule());
  EXPECT_EQ(pool.cached(), 2);  // both full prompt blocks published
  // Same 8-token prompt: every block hits; the last token is fed again, so its block
  // (shared) is copied first.
  Sequence b = make_seq(2, 8);
  sched.enqueue(&b);
  StepPlan p = sched.schedule();
  ASSERT_EQ(p.chunks.size(), 2u);
  const ScheduledChunk& cb = p.chunks[1];
  EXPECT_EQ(cb.seq, &b);
  EXPECT_EQ(cb.begin, 7);
  EXPECT_EQ(cb.count, 1);
  EXPECT_EQ(b.cached_tokens, 7);
  EXPECT_EQ(b.blocks[0], a.blocks[0]);
  EXPECT_NE(b.blocks[1], a.blocks[1]);
  ASSERT_EQ(p.copies.size(), 1u);
  EXPECT_EQ(p.copies[0], std::make_pair(a.blocks[1], b.blocks[1]));
  EXPECT_EQ(pool.refcount(a.blocks[0]), 2);
  EXPECT_EQ(sched.prefix_hit_tokens(), 7);
  EXPECT_EQ(sched.prefix_lookup_tokens(), 16);
  // A longer prompt sharing one block: hit on block 0 only.
  Sequence c = make_seq(3, 6);
  c.tokens[5] = 77;
  sched.enqueue(&c);
  run_step(sched, p);
  StepPlan p3 = sched.schedule();
  EXPECT_EQ(c.cached_tokens, 4);
  EXPECT_EQ(c.blocks[0], a.blocks[0]);
  sched.remove(&a);
  sched.remove(&b);
  sched.remove(&c);
  EXPECT_EQ(pool.used(), 0);
}

TEST(Scheduler, PreemptsNewestWhenBlocksRunOutAndRecomputesLater) {
  KvBlockPool pool(4);  // 16 positions
  Scheduler sched({.max_seqs = 4, .max_batch_tokens = 64, .block_tokens = 4, .prefix_cache = false}, pool);
  Sequence a = make_seq(1, 7), b = make_seq(2, 7, 50);
  sched.enqueue(&a);
  sched.enqueue(&b);
  run_step(sched, sched.schedule());  // a: 2 blocks, b: 2 blocks, pool full
  EXPECT_EQ(pool.available(), 0);
  run_step(sched, sched.schedule());  // position 7 still fits in block 1
  // Position 8 needs a third block each: b (newest) is preempted, a continues.
  StepPlan p = sched.schedule();
  ASSERT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(p.preempted[0], &b);
  ASSERT_EQ(p.chunks.size(), 1u);
  EXPECT_EQ(p.chunks[0].seq, &a);
  EXPECT_EQ(b.computed, 0);
  EXPECT_TRUE(b.blocks.empty());
  EXPECT_EQ(b.tokens.size(), 9u);  // keeps its generated tokens for the recompute
  EXPECT_EQ(sched.waiting().front(), &b);
  run_step(sched, p);
  sched.remove(&a);
  StepPlan r = sched.schedule();
  ASSERT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.chunks[0].seq, &b);
  EXPECT_EQ(r.chunks[0].begin, 0);
  EXPECT_EQ(r.chunks[0].count, 9);
  EXPECT_TRUE(r.chunks[0].wants_logits);
}

TEST(Scheduler, LoneSequenceThatCannotGrowIsPreemptedNotStuck) {
  KvBlockPool pool(2);
  Scheduler sched({.max_seqs = 2, .max_batch_tokens = 64, .block_tokens = 4, .prefix_cache = false}, pool);
  Sequence a = make_seq(1, 8);
  sched.enqueue(&a);
  run_step(sched, sched.schedule());
  StepPlan p = sched.schedule();  // needs a third block: none exists
  EXPECT_TRUE(p.chunks.empty());
  EXPECT_EQ(p.preempted.size(), 1u);
  EXPECT_EQ(pool.used(), 0);
}

}  // namespace tps
