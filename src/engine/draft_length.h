#pragma once
// How many tokens to draft in a step, so that speculation never costs more than it
// saves: a step's time is fitted online as a + b x rows (the target's forward pass)
// plus the drafter's time per round, and each drafting sequence's per-token acceptance
// is estimated from its verify steps. The length chosen maximizes expected tokens per
// second over the whole batch; with a large batch (rows cost more) or a poor drafter
// it is 0. Then some steps still draft draft_min tokens, so the estimates follow the
// text: every kProbeEvery-th step, or fewer where a probe costs more than kProbeCost
// of the time. A draft model's probe includes catching the draft up on every token
// since the last one (prefill, compute-bound), so a draft that does not pay is probed
// ever less often: keeping it in step would cost more than the bound. With draft_min == draft_max the length is fixed: every step drafts it.
#include <cstdint>
#include <span>

#include "engine/speculative.h"

namespace tps {

class DraftLength {
 public:
  static constexpr int kProbeEvery = 8;
  static constexpr double kProbeCost = 0.02;

  explicit DraftLength(const SpeculativeConfig& config) : config_(config) {}

  // One decode step's target forward pass (decode rows and drafts only: prefill rows are
  // compute-bound and would overstate what a few more rows cost): rows and seconds;
  // draft rounds and their seconds.
  void record_step(int32_t rows, double forward_s, int32_t draft_rounds, double draft_s);
  // Drafts per sequence for a step whose rows without drafts are base_rows, where
  // sequences with these per-token acceptance estimates may draft.
  int32_t choose(int32_t base_rows, std::span<const double> acceptance);
  // The fitted time of a forward pass of `rows` rows (0 before any step).
  double forward_seconds(double rows) const;

 private:
  SpeculativeConfig config_;
  // Exponentially weighted sums for the least-squares line of seconds against rows.
  double w_ = 0, wx_ = 0, wy_ = 0, wxx_ = 0, wxy_ = 0;
  double draft_round_s_ = 0;
  int64_t steps_ = 0, since_probe_ = 0;
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
