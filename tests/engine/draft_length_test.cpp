// How many tokens to draft: the cost fits, the choice, and the probes' budget.
#include "engine/draft_length.h"

#include <gtest/gtest.h>

#include <vector>

namespace tps {
namespace {

TEST(DecayingLine, HoldsItsPriorUntilTheSamplesSpreadOverRows) {
  DecayingLine line(0.97, 0.05);
  EXPECT_EQ(line.at(1), 0);
  line.add(1, 0.500);  // a cold first pass
  for (int i = 0; i < 100; ++i) line.add(1, 0.010);
  // One-row samples only: each row more costs 5 % of a one-row pass, at the samples'
  // level, not the cold pass's.
  EXPECT_NEAR(line.at(1), 0.010, 0.001);
  EXPECT_NEAR(line.at(2) - line.at(1), 0.0005, 0.0002);
  // Rows that cost in proportion soon outweigh the prior.
  for (int i = 0; i < 50; ++i) line.add(4, 0.040), line.add(1, 0.010);
  EXPECT_NEAR(line.slope(), 0.010, 0.001);
}

// Steps of `rows` rows costing `seconds`, n-gram lookups of 1 us.
void record(DraftLength& d, std::vector<std::pair<int32_t, double>> steps) {
  for (auto [rows, seconds] : steps) d.record_step(rows, seconds, {1, 1e-6, {}});
}

SpeculativeConfig ngram(int32_t draft_max) {
  SpeculativeConfig c;
  c.mode = SpecMode::kNgram;
  c.draft_min = 1;
  c.draft_max = draft_max;
  return c;
}

TEST(DraftLength, DraftsWhereVerifyingIsCheapAndDraftsAreGood) {
  DraftLength d(ngram(8));
  for (int i = 0; i < 20; ++i) record(d, {{1, 0.010}, {5, 0.0105}});  // bandwidth-bound
  const std::vector<double> good = {0.8};
  EXPECT_GT(d.choose(1, good), 1);
}

TEST(DraftLength, ProbesWithinItsBudgetWhereRowsCostInProportion) {
  DraftLength d(ngram(8));
  for (int i = 0; i < 20; ++i) record(d, {{1, 0.010}, {2, 0.020}, {5, 0.050}});  // compute-bound
  const std::vector<double> fair = {0.5};
  int probes = 0;
  for (int step = 0; step < 1000; ++step) probes += d.choose(1, fair) > 0;
  // A probe of one draft costs a whole step more: at most kProbeCost of the steps.
  EXPECT_GT(probes, 0);
  EXPECT_LE(probes, 1000 * DraftLength::kProbeCost + 1);
}

TEST(DraftLength, ADraftModelCostlierToKeepInStepThanTheBudgetIsNotProbed) {
  SpeculativeConfig c;
  c.mode = SpecMode::kDraftModel;
  c.draft_min = 1;
  c.draft_max = 8;
  const std::vector<double> poor = {0.05};
  // The target decodes in 10 ms a step, more rows nearly free; the draft decodes in 3 ms.
  auto run = [&](double catch_up_row_s) {
    DraftLength d(c);
    for (int i = 0; i < 20; ++i) {
      d.record_step(1, 0.010, {1, 0.003, {{1, 0.003}}});
      d.record_step(2, 0.0105, {1, 0.003 + 32 * catch_up_row_s, {{33, 0.003 + 32 * catch_up_row_s}}});
    }
    int probes = 0;
    for (int step = 0; step < 1000; ++step) probes += d.choose(1, poor) > 0;
    return probes;
  };
  // Catching up at 1 ms a token is 10 % of every step's time, however rarely it probes.
  EXPECT_EQ(run(0.001), 0);
  // At 0.05 ms a token it is 0.5 %: probes go on, within the budget.
  const int probes = run(0.00005);
  EXPECT_GT(probes, 0);
  EXPECT_LE(probes, 1000 / DraftLength::kProbeEvery);
}

}  // namespace
}  // namespace tps
