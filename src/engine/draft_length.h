#pragma once
// How many tokens to draft in a step, so that speculation never costs more than it
// saves: the target's forward pass and a draft model's are each fitted online as
// a + b x rows, an n-gram lookup by its mean time, and each drafting sequence's
// per-token acceptance is estimated from its verify steps. The length chosen maximizes
// expected tokens per second over the whole batch; with a large batch (rows cost more)
// or a poor drafter it is 0. Then some steps still draft draft_min tokens, so the
// estimates follow the text: probes, paid from a credit that every such step adds
// kProbeCost of its time to. A draft model's probe first catches the draft up on every
// token since it last ran, so it costs more the further its sequences have moved on: a
// probe takes the sequences least behind that the credit pays for, and probes come in
// runs, each next one a token behind. A request's first steps are where a draft model's
// probes are cheapest.
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
  std::pair<double, double> fit() const;  // intercept, slope (neither below 0)

  double decay_, prior_growth_;
  double w_ = 0, wx_ = 0, wy_ = 0, wxx_ = 0, wxy_ = 0;
};

// A sequence that may draft this step.
struct DraftCandidate {
  double acceptance;  // its per-token estimate
  int32_t behind;     // tokens its draft model must be fed before it proposes (n-gram: 0)
};

// What a step drafts: k tokens for each candidate whose drafter is at most max_behind
// tokens behind.
struct DraftChoice {
  int32_t k = 0;
  int32_t max_behind = 0;
};

class DraftLength {
 public:
  static constexpr double kProbeCost = 0.02;
  static constexpr int kCreditSteps = 256;  // the most steps' credit kept, so a long stretch does not buy a burst

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
  // Drafts for a step whose rows without drafts are base_rows, where these sequences may
  // draft.
  DraftChoice choose(int32_t base_rows, std::span<const DraftCandidate> candidates);
  // The fitted time of a forward pass of `rows` rows (0 before any step).
  double forward_seconds(double rows) const { return target_.at(rows); }

 private:
  // The drafter's time to propose k tokens for each of n sequences whose drafts are
  // `behind` tokens behind in all (a draft model's first pass feeds those, its next ones
  // a row each; an n-gram lookup is one round).
  double draft_seconds(int32_t k, double n, double behind) const;
  // The largest set of sequences, least behind first, whose probe of k drafts the credit
  // pays for.
  DraftChoice probe(int32_t k, int32_t base_rows, std::span<const DraftCandidate> candidates);

  static constexpr double kDecay = 0.97;         // per sample
  static constexpr double kPriorRowGrowth = 0.05;

  SpeculativeConfig config_;
  DecayingLine target_{kDecay, kPriorRowGrowth};  // a step's forward pass
  DecayingLine draft_{kDecay, kPriorRowGrowth};   // a draft model's forward pass
  double lookup_s_ = 0;        // an n-gram round
  double credit_s_ = 0;        // what probes may still spend
  bool started_ = false;       // credit_s_ has been set
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
