#pragma once
// How many tokens to draft in a step, so that speculation never costs more than it
// saves: the target's forward pass and a draft model's are each fitted online as
// a + b x rows, an n-gram lookup by its mean time, and each drafting sequence's
// per-token acceptance is estimated from its verify steps. The length chosen maximizes
// expected tokens per second over the whole batch; with a large batch (rows cost more)
// or a poor drafter it is 0. Then some steps still draft draft_min tokens, so the
// estimates follow the text: every kProbeEvery-th step, or fewer where a probe costs more
// than kProbeCost of the time. A draft model's probe also catches the draft up on every
// token since it last ran, at b a row: that costs the same share of the time however
// rarely it probes, so where that share alone exceeds kProbeCost it does not probe.
// With draft_min == draft_max the length is fixed: every step drafts it.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "engine/speculative.h"

namespace tps {

// Seconds against rows: a least-squares line whose older samples weigh less, so it
// follows a machine whose load changes. Two light pseudo-samples, a row either side of
// the samples' mean, hold a prior for when every sample has the same row count: each row
// beyond the first costs `prior_growth` of a one-row pass, as in a bandwidth-bound
// decode, where a few more rows' compute hides under the weights' streaming. They follow
// the samples' level, so one slow first pass does not set the slope; samples at other
// row counts outweigh them until they have decayed for a few hundred samples.
class DecayingLine {
 public:
  DecayingLine(double decay, double prior_growth) : decay_(decay), prior_growth_(prior_growth) {}
  void add(double rows, double seconds);
  bool empty() const { return w_ == 0; }
  double slope() const { return fit().second; }
  double at(double rows) const;  // 0 while empty

 private:
  std::pair<double, double> fit() const;  // intercept, slope (never below 0)

  double decay_, prior_growth_;
  double w_ = 0, wx_ = 0, wy_ = 0, wxx_ = 0, wxy_ = 0;
};

class DraftLength {
 public:
  static constexpr int kProbeEvery = 8;
  static constexpr double kProbeCost = 0.02;

  explicit DraftLength(const SpeculativeConfig& config) : config_(config) {}

  // The drafter's work in one step.
  struct DraftWork {
    int32_t rounds = 0;  // proposal rounds: a draft model's forward passes; an n-gram lookup is one
    double seconds = 0;  // all of the drafter's time
    std::vector<std::pair<int32_t, double>> forwards;  // a draft model's passes: rows, seconds
  };

  // One decode step's target forward pass (decode rows and drafts only: prefill rows are
  // compute-bound and would overstate what a few more rows cost): rows and seconds, and
  // the drafter's work.
  void record_step(int32_t rows, double forward_s, const DraftWork& draft);
  // Drafts per sequence for a step whose rows without drafts are base_rows, where
  // sequences with these per-token acceptance estimates may draft.
  int32_t choose(int32_t base_rows, std::span<const double> acceptance);
  // The fitted time of a forward pass of `rows` rows (0 before any step).
  double forward_seconds(double rows) const { return target_.at(rows); }

 private:
  // One round proposing a token for each of n sequences.
  double draft_round_seconds(double n) const;

  static constexpr double kDecay = 0.97;         // per sample
  static constexpr double kPriorRowGrowth = 0.05;

  SpeculativeConfig config_;
  DecayingLine target_{kDecay, kPriorRowGrowth};  // a step's forward pass
  DecayingLine draft_{kDecay, kPriorRowGrowth};   // a draft model's forward pass
  double lookup_s_ = 0;        // an n-gram round
  int64_t since_probe_ = 0;
};

// A per-token acceptance estimate from verify steps, older ones weighing less; before
// any, 1/2 worth two drafts.
struct AcceptanceEstimate {
  double accepted = 1, tried = 2;
  void record(int32_t drafted, int32_t accepted_now);
  double rate() const { return accepted / tried; }
  // This estimate's rate, worth two drafts: where a new sequence starts.
  AcceptanceEstimate prior() const { return {2 * rate(), 2}; }
};

}  // namespace tps
