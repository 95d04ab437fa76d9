#include "engine/draft_length.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  const double a = (wy - b * wx) / w;
  // A pass of r rows never costs more than r passes of one: where a few slow multi-row
  // samples say otherwise, the line goes through the origin.
  if (a < 0) return {0, wxy / wxx};
  return {a, b};
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

double DraftLength::draft_seconds(int32_t k, double n, double behind) const {
  if (config_.mode != SpecMode::kDraftModel) return lookup_s_;
  return draft_.at(behind) + (k - 1) * draft_.at(n);
}

DraftChoice DraftLength::choose(int32_t base_rows, std::span<const DraftCandidate> candidates) {
  constexpr int32_t kAll = std::numeric_limits<int32_t>::max();
  if (candidates.empty()) return {};
  // --draft-min equal to --draft-max pins the length (measuring a fixed k).
  if (config_.draft_min == config_.draft_max) return {config_.draft_max, kAll};
  if (target_.empty()) return {config_.draft_min, kAll};  // no cost known yet: the cheapest probe measures
  const auto n = static_cast<double>(candidates.size());
  // In steady drafting each draft model is a token behind, the last step's bonus.
  auto rate = [&](int32_t k) {
    double tokens = 0;
    for (const DraftCandidate& c : candidates) tokens += expected_tokens(c.acceptance, k);
    return tokens / (forward_seconds(base_rows + n * k) + (k > 0 ? draft_seconds(k, n, n) : 0));
  };
  int32_t best = 0;
  double best_rate = rate(0) * 1.02;  // drafting must win by a margin over its noise
  for (int32_t k = config_.draft_min; k <= config_.draft_max; ++k) {
    const double r = rate(k);
    if (r > best_rate) best = k, best_rate = r;
  }
  if (best > 0) return {best, kAll};
  const double base = forward_seconds(base_rows);
  const double most = kCreditSteps * kProbeCost * base;
  // An engine knows least about its drafter before its first probes: it starts with the
  // most credit it keeps.
  credit_s_ = started_ ? std::min(credit_s_ + kProbeCost * base, most) : most;
  started_ = true;
  return probe(config_.draft_min, base_rows, candidates);
}

DraftChoice DraftLength::probe(int32_t k, int32_t base_rows, std::span<const DraftCandidate> candidates) {
  std::vector<int32_t> behind;
  for (const DraftCandidate& c : candidates) behind.push_back(c.behind);
  std::sort(behind.begin(), behind.end());
  const double base = forward_seconds(base_rows);
  DraftChoice choice;
  double fed = 0, spend = 0;
  for (size_t m = 1; m <= behind.size(); ++m) {
    fed += behind[m - 1];
    const auto rows = static_cast<double>(m);
    const double cost = forward_seconds(base_rows + rows * k) - base + draft_seconds(k, rows, fed);
    if (cost > credit_s_) break;
    // Sequences equally behind go together: max_behind cannot take some of them.
    if (m < behind.size() && behind[m] == behind[m - 1]) continue;
    choice = {k, behind[m - 1]};
    spend = cost;
  }
  credit_s_ -= spend;
  return choice;
}

void AcceptanceEstimate::record(int32_t drafted, int32_t accepted_now) {
  constexpr double kKeep = 0.9;
  accepted = accepted * kKeep + accepted_now;
  // Trials: each accepted draft, and the first rejected one.
  tried = tried * kKeep + accepted_now + (accepted_now < drafted ? 1 : 0);
}

}  // namespace tps
