#include "engine/draft_length.h"

#include <algorithm>
#include <cmath>

namespace tps {

namespace {

constexpr double kDecay = 0.97;  // per step: the fit follows a machine whose load changes

// Expected tokens from one verify step of k drafts at per-token acceptance alpha: the
// accepted run's expected length plus the bonus token.
double expected_tokens(double alpha, int32_t k) {
  double sum = 1, power = 1;
  for (int32_t j = 0; j < k; ++j) sum += (power *= alpha);
  return sum;
}

}  // namespace

void DraftLength::record_step(int32_t rows, double forward_s, int32_t draft_rounds, double draft_s) {
  if (w_ == 0) {
    // A prior worth two steps, which data soon outweighs: each row costs 5 % of a
    // one-row step (bandwidth-bound decode, where a few more rows' compute hides
    // under the weights' streaming).
    const double one = forward_s / (1 + 0.05 * (rows - 1));
    for (double x : {1.0, 9.0}) {
      const double y = one * (1 + 0.05 * (x - 1));
      w_ += 1, wx_ += x, wy_ += y, wxx_ += x * x, wxy_ += x * y;
    }
  }
  w_ = w_ * kDecay + 1;
  wx_ = wx_ * kDecay + rows;
  wy_ = wy_ * kDecay + forward_s;
  wxx_ = wxx_ * kDecay + double(rows) * rows;
  wxy_ = wxy_ * kDecay + rows * forward_s;
  if (draft_rounds > 0) {
    const double per_round = draft_s / draft_rounds;
    draft_round_s_ = draft_round_s_ == 0 ? per_round : 0.9 * draft_round_s_ + 0.1 * per_round;
  }
  ++steps_;
}

double DraftLength::forward_seconds(double rows) const {
  if (w_ == 0) return 0;
  const double var = wxx_ * w_ - wx_ * wx_;
  double slope = var > 1e-12 ? (wxy_ * w_ - wx_ * wy_) / var : 0;
  slope = std::max(0.0, slope);
  const double intercept = (wy_ - slope * wx_) / w_;
  return std::max(1e-9, intercept + slope * rows);
}

int32_t DraftLength::choose(int32_t base_rows, std::span<const double> acceptance) {
  if (acceptance.empty()) return 0;
  // --draft-min equal to --draft-max pins the length (measuring a fixed k).
  if (config_.draft_min == config_.draft_max) return config_.draft_max;
  if (w_ == 0) return config_.draft_min;  // no cost known yet: the cheapest probe measures
  const auto n = static_cast<double>(acceptance.size());
  auto rate = [&](int32_t k) {
    double tokens = 0;
    for (double a : acceptance) tokens += expected_tokens(a, k);
    return tokens / (forward_seconds(base_rows + n * k) + draft_round_s_ * k);
  };
  int32_t best = 0;
  double best_rate = rate(0) * 1.02;  // drafting must win by a margin over its noise
  for (int32_t k = config_.draft_min; k <= config_.draft_max; ++k) {
    const double r = rate(k);
    if (r > best_rate) best = k, best_rate = r;
  }
  if (best == 0) {
    // Probe with draft_min drafts, as often as keeps the probes' extra cost near
    // kProbeCost of the time, and at least every kProbeEvery steps when they are cheap.
    const int32_t k = config_.draft_min;
    const double base = forward_seconds(base_rows);
    const double extra = (forward_seconds(base_rows + n * k) - base + draft_round_s_ * k) / base;
    const auto every = static_cast<int64_t>(std::max<double>(kProbeEvery, std::ceil(extra / kProbeCost)));
    if (++since_probe_ >= every) best = k;
  }
  if (best > 0) since_probe_ = 0;
  return best;
}

void AcceptanceEstimate::record(int32_t drafted, int32_t accepted_now) {
  constexpr double kKeep = 0.9;
  accepted = accepted * kKeep + accepted_now;
  // Trials: each accepted draft, and the first rejected one.
  tried = tried * kKeep + accepted_now + (accepted_now < drafted ? 1 : 0);
}

}  // namespace tps
