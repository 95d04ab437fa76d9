#include "engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/timer.h"

namespace tps {
namespace {

constexpr int32_t kVocab = 64;

// The next token is a hash of the whole sequence so far, read back through the block
// tables from what earlier forward passes wrote: any paging, prefix-sharing, copy or
// preemption mistake changes the output.
int32_t next_token(const std::vector<int32_t>& history) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : history) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
  return 1 + static_cast<int32_t>(h % (kVocab - 1));
}

std::vector<int32_t> reference(std::vector<int32_t> prompt, int32_t n) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < n; ++i) {
    out.push_back(next_token(prompt));
    prompt.push_back(out.back());
  }
  return out;
}

class FakeModel : public BatchModel {
 public:
  FakeModel(int32_t n_blocks, int32_t block_tokens, int sleep_ms = 0)
      : bt_(block_tokens), n_blocks_(n_blocks), slots_(static_cast<size_t>(n_blocks) * block_tokens, -1),
        sleep_ms_(sleep_ms) {}
  int32_t vocab_size() const override { return kVocab; }
  KvGeometry kv_geometry() const override { return {bt_, n_blocks_, 512}; }
  void forward(const ForwardBatch& b, float* logits) override {
    while (held.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    max_rows = std::max(max_rows.load(), static_cast<int>(b.size()));
    forwards++;
    for (size_t r = 0; r < b.size(); ++r) slot(b, r, b.positions[r]) = b.tokens[r];
    for (size_t r = 0; r < b.size(); ++r) {
      if (!b.want_logits[r]) continue;
      std::vector<int32_t> history;
      for (int32_t p = 0; p <= b.positions[r]; ++p) history.push_back(slot(b, r, p));
      std::fill(logits, logits + kVocab, 0.0f);
      logits[next_token(history)] = 5.0f;
      logits += kVocab;
    }
    if (sleep_ms_) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
  }
  void copy_block(int32_t from, int32_t to) override {
    std::copy_n(slots_.begin() + from * bt_, bt_, slots_.begin() + to * bt_);
    copies++;
  }
  std::atomic<int> max_rows{0}, forwards{0}, copies{0};
  // While set, forward() waits: requests submitted meanwhile all queue before the first
  // step ends, whatever the machine's scheduling.
  std::atomic<bool> held{false};

 private:
  int32_t& slot(const ForwardBatch& b, size_t row, int32_t pos) {
    const SequenceBlocks& s = b.sequences[b.sequence[row]];
    EXPECT_LT(pos / bt_, s.n_blocks);
    return slots_[static_cast<size_t>(s.block_table[pos / bt_]) * bt_ + pos % bt_];
  }
  int32_t bt_, n_blocks_;
  std::vector<int32_t> slots_;
  int sleep_ms_;
};

GenerationRequest greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  return r;
}

std::vector<int32_t> collect(RequestStream& s, FinishReason* reason = nullptr) {
  std::vector<GeneratedToken> got;
  double deadline = now_seconds() + 20;
  while (!s.finished() && now_seconds() < deadline) s.wait(got, deadline);
  std::vector<int32_t> ids;
  for (auto& t : got) ids.push_back(t.id);
  if (reason) *reason = s.finish_reason();
  return ids;
}

std::vector<int32_t> prompt_of(int32_t len, int32_t salt) {
  std::vector<int32_t> p;
  for (int32_t i = 0; i < len; ++i) p.push_back(1 + (i * 7 + salt * 13) % (kVocab - 1));
  return p;
}

EngineConfig config(int32_t max_seqs, int32_t budget) {
  EngineConfig c;
  c.max_seqs = max_seqs;
  c.max_batch_tokens = budget;
  c.max_queue = 64;
  return c;
}

void wait_until(const std::function<bool()>& cond) {
  double deadline = now_seconds() + 10;
  while (!cond() && now_seconds() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

}  // namespace

TEST(Engine, GreedyOutputFollowsTheModel) {
  FakeModel model(64, 4);
  Engine engine(model, config(4, 32));
  auto s = engine.submit(greedy(prompt_of(9, 1), 12));
  FinishReason reason;
  EXPECT_EQ(collect(*s, &reason), reference(prompt_of(9, 1), 12));
  EXPECT_EQ(reason, FinishReason::kLength);
  EXPECT_EQ(s->prompt_tokens(), 9);
  EXPECT_EQ(s->generated_tokens(), 12);
}

TEST(Engine, SixteenConcurrentRequestsMatchRunningAlone) {
  FakeModel model(256, 4);
  Engine engine(model, config(16, 24));  // small budget: long prompts go in chunks
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 16; ++i) streams.push_back(engine.submit(greedy(prompt_of(3 + 5 * i, i), 10 + i)));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(collect(*streams[i]), reference(prompt_of(3 + 5 * i, i), 10 + i)) << i;
  EXPECT_LE(model.max_rows.load(), 24);
  wait_until([&] { return engine.stats().blocks_used == 0; });
  EXPECT_EQ(engine.stats().blocks_used, 0);
}

TEST(Engine, PrefixCacheHitGivesTheSameOutput) {
  FakeModel model(64, 4);
  Engine engine(model, config(4, 64));
  auto first = engine.submit(greedy(prompt_of(13, 2), 5));
  auto a = collect(*first);
  EXPECT_EQ(first->cached_tokens(), 0);
  auto second = engine.submit(greedy(prompt_of(13, 2), 5));
  EXPECT_EQ(collect(*second), a);
  EXPECT_EQ(second->cached_tokens(), 12);
  // A full-block prompt hits every block and copies the last one before rewriting it.
  auto third = engine.submit(greedy(prompt_of(12, 2), 5));
  EXPECT_EQ(collect(*third), reference(prompt_of(12, 2), 5));
  EXPECT_EQ(third->cached_tokens(), 11);
  EXPECT_GE(model.copies.load(), 1);
  EXPECT_GT(engine.stats().prefix_hit_tokens, 0);
}

TEST(Engine, PreemptionUnderFewBlocksStillCompletesEveryRequestCorrectly) {
  FakeModel model(10, 4);  // 40 positions for four requests of 26 positions each
  EngineConfig c = config(4, 64);
  c.prefix_cache = false;
  Engine engine(model, c);
  std::vector<std::shared_ptr<RequestStream>> streams;
  // All four must be in the engine together (else the first may finish alone, on a
  // loaded machine, before the others arrive, and nothing needs preempting).
  model.held = true;
  for (int i = 0; i < 4; ++i) streams.push_back(engine.submit(greedy(prompt_of(6, 10 + i), 20)));
  model.held = false;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(collect(*streams[i]), reference(prompt_of(6, 10 + i), 20)) << i;
  EXPECT_GT(engine.stats().preemptions, 0);
}

TEST(Engine, CancelFreesBlocks) {
  FakeModel model(64, 4, 2);
  Engine engine(model, config(4, 64));
  auto s = engine.submit(greedy(prompt_of(10, 3), 400));
  std::vector<GeneratedToken> got;
  while (got.size() < 3) s->wait(got, now_seconds() + 10);
  EXPECT_GT(engine.stats().blocks_used, 0);
  s->cancel();
  FinishReason reason;
  collect(*s, &reason);
  EXPECT_EQ(reason, FinishReason::kCancelled);
  wait_until([&] { return engine.stats().blocks_used == 0 && engine.stats().running == 0; });
  EXPECT_EQ(engine.stats().blocks_used, 0);
}

TEST(Engine, BoundedQueueRefusesBeyondIt) {
  FakeModel model(64, 4, 5);
  EngineConfig c = config(1, 64);
  c.max_queue = 2;
  Engine engine(model, c);
  int refused = 0;
  std::vector<std::shared_ptr<RequestStream>> accepted;
  for (int i = 0; i < 6; ++i) {
    auto s = engine.submit(greedy(prompt_of(4, i), 200));
    if (s) {
      accepted.push_back(s);
    } else {
      ++refused;
    }
  }
  EXPECT_GE(refused, 3);  // at most one running and two waiting
  for (auto& s : accepted) s->cancel();
}

TEST(Engine, StopsAtEndOfGenerationUnlessIgnored) {
  std::vector<int32_t> ref = reference(prompt_of(5, 4), 30);
  int32_t eog = ref[6];
  size_t first = std::find(ref.begin(), ref.end(), eog) - ref.begin();
  FakeModel model(64, 4);
  EngineConfig c = config(4, 64);
  c.is_eog = [eog](int32_t id) { return id == eog; };
  Engine engine(model, c);
  FinishReason reason;
  auto s = engine.submit(greedy(prompt_of(5, 4), 30));
  EXPECT_EQ(collect(*s, &reason), std::vector<int32_t>(ref.begin(), ref.begin() + first));
  EXPECT_EQ(reason, FinishReason::kStop);
  GenerationRequest r = greedy(prompt_of(5, 4), 8);
  r.ignore_eos = true;
  auto t = engine.submit(r);
  auto ids = collect(*t, &reason);
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), eog), 0);
  EXPECT_EQ(reason, FinishReason::kLength);
}

TEST(Engine, LogprobsOfTheChosenToken) {
  FakeModel model(64, 4);
  Engine engine(model, config(4, 64));
  GenerationRequest r = greedy(prompt_of(5, 5), 3);
  r.top_logprobs = 2;
  auto s = engine.submit(r);
  std::vector<GeneratedToken> got;
  while (!s->finished()) s->wait(got, now_seconds() + 10);
  ASSERT_EQ(got.size(), 3u);
  // One logit of 5 among 63 zeros.
  float expected = 5.0f - std::log(std::exp(5.0f) + 63.0f);
  EXPECT_NEAR(got[0].logprob, expected, 1e-4);
  ASSERT_EQ(got[0].top.size(), 2u);
  EXPECT_EQ(got[0].top[0].first, got[0].id);
}

}  // namespace tps
