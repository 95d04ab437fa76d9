#include "engine/draft_length.h"

#include <algorithm>
#include <cmath>

namespace tps {

namespace {

// Expected tokens from one verify step of k drafts at per-token acceptance alpha: the
// accepted run's expected length plus the bonus token.
double expected_tokens(double alpha, int32_t k) {
  double sum = 1, power = 1;
  for (int32_t j = 0; j < k; ++j) sum += (power *= alpha);
  return sum;
}

}  // namespace

void DecayingLine::add(double rows, double seconds) {
  w_ = w_ * decay_ + 1;
  wx_ = wx_ * decay_ + rows;
  wy_ = wy_ * decay_ + seconds;
  wxx_ = wxx_ * decay_ + rows * rows;
  wxy_ = wxy_ * decay_ + rows * seconds;
}

std::pair<double, double> DecayingLine::fit() const {
  if (w_ == 0) return {0, 0};
  double w = w_, wx = wx_, wy = wy_, wxx = wxx_, wxy = wxy_;
  // The pseudo-samples sit a row either side of the samples' mean, so they add a slope
  // and leave the level where the samples put it.
  const double mean_x = wx_ / w_, mean_y = wy_ / w_;
  const double per_row = prior_growth_ * mean_y / (1 + prior_growth_ * (mean_x - 1));
  constexpr double kWeight = 0.01;  // each: any sample at another row count, even long decayed, outweighs them
  for (double side : {-1.0, 1.0}) {
    const double x = mean_x + side, y = mean_y + side * per_row;
    w += kWeight, wx += kWeight * x, wy += kWeight * y, wxx += kWeight * x * x, wxy += kWeight * x * y;
  }
  const double var = wxx * w - wx * wx;
  const double b = var > 1e-12 ? std::max(0.0, (wxy * w - wx * wy) / var) : 0;
  return {(wy - b * wx) / w, b};
}

double DecayingLine::at(double rows) const {
  if (w_ == 0) return 0;
  const auto [a, b] = fit();
  return std::max(1e-9, a + b * rows);
}

void DraftLength::record_step(int32_t rows, double forward_s, const DraftWork& draft) {
  target_.add(rows, forward_s);
  for (auto [draft_rows, seconds] : draft.forwards) draft_.add(draft_rows, seconds);
  if (draft.forwards.empty() && draft.rounds > 0) {
    const double per_round = draft.seconds / draft.rounds;
    lookup_s_ = lookup_s_ == 0 ? per_round : 0.9 * lookup_s_ + 0.1 * per_round;
  }
}

double DraftLength::draft_round_seconds(double n) const {
  return draft_.empty() ? lookup_s_ : draft_.at(n);
}

int32_t DraftLength::choose(int32_t base_rows, std::span<const double> acceptance) {
  if (acceptance.empty()) return 0;
  // --draft-min equal to --draft-max pins the length (measuring a fixed k).
  if (config_.draft_min == config_.draft_max) return config_.draft_max;
  if (target_.empty()) return config_.draft_min;  // no cost known yet: the cheapest probe measures
  const auto n = static_cast<double>(acceptance.size());
  auto rate = [&](int32_t k) {
    double tokens = 0;
    for (double a : acceptance) tokens += expected_tokens(a, k);
    return tokens / (forward_seconds(base_rows + n * k) + draft_round_seconds(n) * k);
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
    // A draft model must also catch up on the n tokens each step makes: a share of the
    // time that probing less often does not shrink.
    const int32_t k = config_.draft_min;
    const double base = forward_seconds(base_rows);
    const double keep_up = n * draft_.slope() / base;
    const double extra = (forward_seconds(base_rows + n * k) - base + draft_round_seconds(n) * k) / base;
    if (keep_up < kProbeCost) {
      const auto every = static_cast<int64_t>(std::max<double>(kProbeEvery, std::ceil(extra / (kProbeCost - keep_up))));
      if (++since_probe_ >= every) best = k;
    }
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
