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

// Logits with no finite value (every token banned, a model's NaN or infinity) still give
// a distribution of one token and a draw from the vocabulary, on every setting: the
// speculative paths read the distribution's first token.
TEST(Sampler, LogitsWithNothingFiniteStillGiveATokenOfTheVocabulary) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (float bad : {-inf, nan, inf}) {
    for (float temperature : {0.0f, 0.8f}) {
      for (bool truncated : {false, true}) {
        SCOPED_TRACE(testing::Message() << bad << " t" << temperature << (truncated ? " top-k/p" : ""));
        SamplingParams p = truncated ? SamplingParams{} : SamplingParams::untruncated(temperature);
        p.temperature = temperature;
        Sampler s(p);
        std::vector<float> logits(5, bad);
        TokenDistribution d;
        s.distribution(logits, {}, d);
        ASSERT_EQ(d.ids.size(), 1u);
        EXPECT_GE(d.ids[0], 0);
        EXPECT_LT(d.ids[0], 5);
        EXPECT_EQ(d.probs[0], 1.0f);
        logits.assign(5, bad);
        const int32_t id = s.sample(logits, {});
        EXPECT_GE(id, 0);
        EXPECT_LT(id, 5);
      }
    }
  }
}

// A NaN among finite logits (a fault in the model) is never drawn, and the others keep
// their softmax.
TEST(Sampler, ANanLogitIsNeverDrawn) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto h = histogram(SamplingParams::untruncated(1.0f), {0.0f, nan, std::log(3.0f)}, 4000);
  EXPECT_EQ(h.count(1), 0u);
  EXPECT_NEAR(h[2] / 4000.0, 0.75, 0.03);
  SamplingParams greedy;
  greedy.temperature = 0;
  std::vector<float> logits = {nan, 1.0f, 0.5f};
  EXPECT_EQ(Sampler(greedy).sample(logits, {}), 1);
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

TEST(Sampler, LogitBiasShiftsGreedyDrawsAndVerification) {
  SamplingParams greedy = SamplingParams::untruncated(0.0f);
  greedy.logit_bias = {{1, -100.0f}, {2, 0.5f}};
  Sampler s(greedy);
  std::vector<float> l = {1.0f, 3.0f, 2.0f};
  EXPECT_EQ(s.sample(l, {}), 2);
  // Applied before the penalties: token 2's logit 2.5 is divided by the repeat penalty.
  SamplingParams penalized = greedy;
  penalized.repeat_penalty = 2.0f;
  Sampler p(penalized);
  l = {1.6f, 3.0f, 2.0f};
  const std::vector<int32_t> history = {2};
  EXPECT_EQ(p.sample(l, history), 0);
  // Sampled: at temperature 1, +log(3) on token 0 of two equal tokens makes it 3 in 4.
  SamplingParams sampled = SamplingParams::untruncated(1.0f);
  sampled.logit_bias = {{0, static_cast<float>(std::log(3.0))}};
  auto h = histogram(sampled, logits_of({0.5, 0.5}), 20000);
  EXPECT_NEAR(h[0] / 20000.0, 0.75, 0.015);
  // A banned token is never drawn, nor kept when a drafter proposes it.
  sampled.logit_bias = {{1, -std::numeric_limits<float>::infinity()}};
  h = histogram(sampled, logits_of({0.1, 0.8, 0.1}), 5000);
  EXPECT_EQ(h.count(1), 0u);
  Sampler v(sampled);
  for (int i = 0; i < 200; ++i) {
    std::vector<float> logits = logits_of({0.1, 0.8, 0.1});
    bool kept = true;
    EXPECT_NE(v.verify(logits, {}, 1, nullptr, &kept), 1);
    EXPECT_FALSE(kept);
  }
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

namespace tps {
namespace {

// Pearson's chi-square of counts against probabilities.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n) {
  double x = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double expected = p[i] * static_cast<double>(n);
    x += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return x;
}

// Speculative verification keeps the target's distribution whatever the draft's: the
// tokens it returns, over draws of the draft from q, are distributed as p. 3 degrees
// of freedom: 16.27 is the 0.1 % critical value; a residual taken as p instead of
// max(0, p - q), or a draft kept with p alone, lands in the thousands.
TEST(SpeculativeVerify, KeepsTheTargetDistribution) {
  const std::vector<double> p = {0.5, 0.25, 0.15, 0.10};
  const std::vector<double> q = {0.1, 0.6, 0.1, 0.2};
  std::vector<float> logits_p;
  for (double v : p) logits_p.push_back(static_cast<float>(std::log(v)));
  TokenDistribution qd{{0, 1, 2, 3}, {0.1f, 0.6f, 0.1f, 0.2f}};
  Sampler target(SamplingParams::untruncated(1.0f));
  SamplingParams draft_params = SamplingParams::untruncated(1.0f);
  draft_params.seed = 99;
  Sampler draft(draft_params);
  constexpr int64_t kN = 200000;
  std::vector<int64_t> counts(4, 0), kept_counts(4, 0);
  int64_t kept_total = 0;
  for (int64_t i = 0; i < kN; ++i) {
    const int32_t d = draft.draw_from(qd);
    std::vector<float> logits = logits_p;
    bool kept = false;
    const int32_t t = target.verify(logits, {}, d, &qd, &kept);
    ++counts[static_cast<size_t>(t)];
    kept_total += kept;
  }
  EXPECT_LT(chi_square(counts, p, kN), 16.27);
  // Kept with probability sum over tokens of min(p, q) = 0.1 + 0.25 + 0.1 + 0.1.
  EXPECT_NEAR(static_cast<double>(kept_total) / kN, 0.55, 0.005);

  // An n-gram draft is one token with q = 1 on it.
  std::vector<int64_t> ngram(4, 0);
  for (int64_t i = 0; i < kN; ++i) {
    std::vector<float> logits = logits_p;
    bool kept = false;
    ++ngram[static_cast<size_t>(target.verify(logits, {}, 1, nullptr, &kept))];
  }
  EXPECT_LT(chi_square(ngram, p, kN), 16.27);
}

TEST(SpeculativeVerify, GreedyKeepsOnlyTheArgmax) {
  SamplingParams g;
  g.temperature = 0;
  Sampler s(g);
  std::vector<float> logits = {0.1f, 2.0f, 0.3f};
  bool kept = true;
  EXPECT_EQ(s.verify(logits, {}, 0, nullptr, &kept), 1);
  EXPECT_FALSE(kept);
  logits = {0.1f, 2.0f, 0.3f};
  EXPECT_EQ(s.verify(logits, {}, 1, nullptr, &kept), 1);
  EXPECT_TRUE(kept);
}

}  // namespace
}  // namespace tps
