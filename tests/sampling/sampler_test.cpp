#include "sampling/sampler.h"

#include <cmath>
#include <limits>
#include <map>

#include <gtest/gtest.h>

namespace tps {

namespace {

// How often each token is drawn in n samples from the same logits.
std::map<int32_t, int> histogram(const SamplingParams& p, const std::vector<float>& logits, int n) {
  Sampler s(p);
  std::map<int32_t, int> h;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = logits;
    ++h[s.sample(l, {})];
  }
  return h;
}

std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

}  // namespace

TEST(Sampler, GreedyPicksTheLargestLogit) {
  Sampler s(SamplingParams::untruncated(0.0f));
  std::vector<float> l = {1.0f, 3.0f, 2.0f};
  EXPECT_EQ(s.sample(l, {}), 1);
}

TEST(Sampler, TemperatureOneDrawsFromTheSoftmax) {
  auto h = histogram(SamplingParams::untruncated(1.0f), logits_of({0.25, 0.75}), 20000);
  EXPECT_NEAR(h[1] / 20000.0, 0.75, 0.015);
}

TEST(Sampler, LowTemperatureSharpens) {
  // At T = 0.5 probabilities go as p^2: 1/16 vs 9/16, i.e. 0.1 vs 0.9.
  auto h = histogram(SamplingParams::untruncated(0.5f), logits_of({0.25, 0.75}), 20000);
  EXPECT_NEAR(h[1] / 20000.0, 0.9, 0.015);
}

TEST(Sampler, TopKKeepsTheKBest) {
  SamplingParams p = SamplingParams::untruncated(1.0f);
  p.top_k = 2;
  auto h = histogram(p, {0.0f, 1.0f, 2.0f, 3.0f}, 2000);
  EXPECT_EQ(h.count(0) + h.count(1), 0u);
  EXPECT_GT(h[2], 0);
  EXPECT_GT(h[3], h[2]);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  SamplingParams p = SamplingParams::untruncated(1.0f);
  p.top_p = 0.6f;  // 0.5 < 0.6, 0.5 + 0.3 >= 0.6: keeps two
  auto h = histogram(p, logits_of({0.5, 0.3, 0.2}), 4000);
  EXPECT_EQ(h.count(2), 0u);
  EXPECT_NEAR(h[0] / 4000.0, 0.5 / 0.8, 0.03);
  p.top_p = 0.5f;  // the first token alone reaches it
  h = histogram(p, logits_of({0.5, 0.3, 0.2}), 200);
  EXPECT_EQ(h[0], 200);
}

TEST(Sampler, TopPOverALargeVocabularyKeepsTheBestFirstPrefix) {
  // 1000 equal logits: ties go by id, so top-p 0.5 keeps ids 0..499 (the prefix is
  // sorted in several growing pieces on the way).
  SamplingParams p = SamplingParams::untruncated(1.0f);
  p.top_p = 0.5f;
  auto h = histogram(p, std::vector<float>(1000, 1.0f), 2000);
  EXPECT_LT(h.rbegin()->first, 500);
  EXPECT_GT(h.rbegin()->first, 400);
}

TEST(Sampler, NeverDrawsATokenMaskedToMinusInfinity) {
  // The server masks end-of-generation tokens this way for ignore_eos.
  const float inf = std::numeric_limits<float>::infinity();
  for (float min_p : {0.0f, 0.1f}) {
    SamplingParams p = SamplingParams::untruncated(1.0f);
    p.min_p = min_p;
    auto h = histogram(p, {-inf, 0.0f, -inf, 0.5f, -inf}, 2000);
    EXPECT_EQ(h.count(0) + h.count(2) + h.count(4), 0u);
    EXPECT_GT(h[1], 0);
    EXPECT_GT(h[3], h[1]);
  }
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  SamplingParams p = SamplingParams::untruncated(1.0f);
  p.min_p = 0.5f;  // threshold 0.25: keeps 0.5 and 0.3
  auto h = histogram(p, logits_of({0.2, 0.5, 0.3}), 4000);
  EXPECT_EQ(h.count(0), 0u);
  EXPECT_GT(h[2], 0);
  p.min_p = 0.7f;  // threshold 0.35: keeps 0.5 only
  h = histogram(p, logits_of({0.2, 0.5, 0.3}), 200);
  EXPECT_EQ(h[1], 200);
}

TEST(Sampler, RepeatPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  SamplingParams p = SamplingParams::untruncated(0.0f);
  p.repeat_penalty = 2.0f;
  Sampler s(p);
  std::vector<float> l = {2.0f, -2.0f, 1.5f, 0.5f};
  std::vector<int32_t> history = {0, 1, 0};
  EXPECT_EQ(s.sample(l, history), 2);  // 2 -> 1, so 1.5 wins
  EXPECT_FLOAT_EQ(l[0], 1.0f);
  EXPECT_FLOAT_EQ(l[1], -4.0f);
  EXPECT_FLOAT_EQ(l[2], 1.5f);
  EXPECT_FLOAT_EQ(l[3], 0.5f);
}

TEST(Sampler, RepeatPenaltyLooksBackOnlyRepeatLastN) {
  SamplingParams p = SamplingParams::untruncated(0.0f);
  p.repeat_penalty = 2.0f;
  p.repeat_last_n = 1;
  Sampler s(p);
  std::vector<float> l = {2.0f, 2.0f};
  std::vector<int32_t> history = {0, 1};
  s.sample(l, history);
  EXPECT_FLOAT_EQ(l[0], 2.0f);
  EXPECT_FLOAT_EQ(l[1], 1.0f);
}

TEST(Sampler, PresenceAndFrequencyPenaltiesSubtract) {
  SamplingParams p = SamplingParams::untruncated(0.0f);
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s(p);
  std::vector<float> l = {3.0f, 3.0f, 1.0f};
  std::vector<int32_t> history = {0, 0, 1};
  EXPECT_EQ(s.sample(l, history), 1);
  EXPECT_FLOAT_EQ(l[0], 3.0f - (2 * 0.25f + 0.5f));
  EXPECT_FLOAT_EQ(l[1], 3.0f - (0.25f + 0.5f));
  EXPECT_FLOAT_EQ(l[2], 1.0f);
}

TEST(Sampler, SameSeedSameDrawsAndOtherSeedOtherDraws) {
  SamplingParams p;  // the defaults: temperature, top-k, top-p and min-p all on
  std::vector<float> logits(64);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(std::sin(i * 0.7) * 2);
  auto draws = [&](uint64_t seed) {
    p.seed = seed;
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 50; ++i) {
      std::vector<float> l = logits;
      out.push_back(s.sample(l, {}));
    }
    return out;
  };
  EXPECT_EQ(draws(7), draws(7));
  EXPECT_NE(draws(7), draws(8));
}

}  // namespace tps
