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

TEST(DecayingLine, NeverPricesARowAboveAOneRowPass) {
  DecayingLine line(0.97, 0.05);
  for (int i = 0; i < 10; ++i) line.add(1, 0.017);
  line.add(2, 0.070);  // one pass slowed by something else on the machine
  // A least-squares line would put a row at 53 ms and a pass of none at -36 ms.
  EXPECT_GE(line.at(0), 0);
  EXPECT_LE(line.slope(), line.at(1) + 1e-9);
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
  const std::vector<DraftCandidate> good = {{0.8, 0}};
  EXPECT_GT(d.choose(1, good).k, 1);
}

// What probes may spend over `steps` steps of `step_s`: kProbeCost of their time, and the
// credit a new engine starts with.
double budget(int steps, double step_s) {
  return (steps + DraftLength::kCreditSteps) * step_s * DraftLength::kProbeCost;
}

TEST(DraftLength, ProbesWithinItsBudgetWhereRowsCostInProportion) {
  DraftLength d(ngram(8));
  for (int i = 0; i < 20; ++i) record(d, {{1, 0.010}, {2, 0.020}, {5, 0.050}});  // compute-bound
  const std::vector<DraftCandidate> fair = {{0.5, 0}};
  int probes = 0;
  for (int step = 0; step < 1000; ++step) probes += d.choose(1, fair).k > 0;
  // A probe of one draft costs a whole step more.
  EXPECT_GT(probes, 0);
  EXPECT_LE(probes * 0.010, budget(1000, 0.010));
}

SpeculativeConfig draft_model() {
  SpeculativeConfig c;
  c.mode = SpecMode::kDraftModel;
  c.draft_min = 1;
  c.draft_max = 8;
  return c;
}

// The target decodes in 10 ms a step, more rows nearly free; the draft decodes in 3 ms and
// catches up at catch_up_row_s a token.
void fit_draft_model(DraftLength& d, double catch_up_row_s) {
  for (int i = 0; i < 20; ++i) {
    d.record_step(1, 0.010, {1, 0.003, {{1, 0.003}}});
    d.record_step(2, 0.0105, {1, 0.003 + 32 * catch_up_row_s, {{33, 0.003 + 32 * catch_up_row_s}}});
  }
}

// One poor drafting sequence's steps: its draft falls a token further behind each step
// it does not draft. Returns the steps that probed.
std::vector<int> decode(DraftLength& d, int steps) {
  std::vector<int> probes;
  int behind = 1;
  for (int step = 0; step < steps; ++step) {
    const std::vector<DraftCandidate> poor = {{0.05, behind}};
    const DraftChoice c = d.choose(1, poor);
    const bool probed = c.k > 0 && behind <= c.max_behind;
    if (probed) probes.push_back(step);
    behind = probed ? 1 : behind + 1;
  }
  return probes;
}

TEST(DraftLength, ProbesADraftModelWithinItsBudgetCatchUpIncluded) {
  {
    // Catching up at 0.05 ms a token: probes go on through the request, each costing its
    // 3 ms draft pass, 0.5 ms of verify and the catch-up of every step since the last.
    DraftLength d(draft_model());
    fit_draft_model(d, 0.00005);
    const std::vector<int> probes = decode(d, 1000);
    ASSERT_FALSE(probes.empty());
    EXPECT_GT(probes.back(), 900);
    double spent = 0;
    for (size_t i = 0; i < probes.size(); ++i) spent += 0.0035 + 0.00005 * (i == 0 ? 1 : probes[i] - probes[i - 1]);
    EXPECT_LE(spent, 1.02 * budget(1000, 0.010));  // these costs are the fits' within 1 %
  }
  {
    // At 1 ms a token, 10 % of each step: the credit grows by 0.2 ms a step and a
    // probe's cost by 1 ms, so after the run the starting credit pays for, a sequence
    // that keeps decoding is not probed.
    DraftLength d(draft_model());
    fit_draft_model(d, 0.001);
    const std::vector<int> probes = decode(d, 1000);
    ASSERT_FALSE(probes.empty());
    EXPECT_LT(probes.back(), 50);
    EXPECT_LE(probes.size() * 0.0035, budget(50, 0.010));  // each a token behind
  }
}

TEST(DraftLength, ANewSequenceIsProbedWhereItsDraftIsCheapToCatchUp) {
  DraftLength d(draft_model());
  fit_draft_model(d, 0.001);
  decode(d, 1000);  // a long request: its draft is now far behind, the credit saved
  // The new sequence's draft has only its prompt's last token to feed: it is probed on
  // its own, and the old one, 300 tokens behind, is not.
  const std::vector<DraftCandidate> both = {{0.05, 300}, {0.05, 1}};
  const DraftChoice c = d.choose(2, both);
  EXPECT_EQ(c.k, 1);
  EXPECT_EQ(c.max_behind, 1);
  // Its probes go on in a run while the saved credit lasts: each next one is a token
  // behind and costs 3.5 ms, against the 54 ms saved (256 steps' 2 % of 10.5 ms).
  int run = 1;
  while (run < 100 && d.choose(2, std::vector<DraftCandidate>{{0.05, 301 + run}, {0.05, 1}}).k > 0) ++run;
  EXPECT_GE(run, 13);
  EXPECT_LE(run, 17);
}

}  // namespace
}  // namespace tps
