#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>

namespace tps {

namespace {

// Penalties over the last repeat_last_n tokens, as llama.cpp applies them: the repeat
// penalty divides positive logits and multiplies negative ones; presence and frequency
// penalties subtract once per distinct token and once per occurrence.
// `window` is scratch, reused across calls.
void apply_penalties(std::span<float> logits, std::span<const int32_t> history, const SamplingParams& p,
                     std::vector<int32_t>& window) {
  if (p.repeat_penalty == 1.0f && p.presence_penalty == 0.0f && p.frequency_penalty == 0.0f) return;
  if (p.repeat_last_n == 0) return;
  const size_t n = p.repeat_last_n < 0 ? history.size() : std::min(history.size(), static_cast<size_t>(p.repeat_last_n));
  // Sorted, equal ids are adjacent: each run is one distinct token and its count.
  window.assign(history.end() - n, history.end());
  std::sort(window.begin(), window.end());
  for (size_t i = 0; i < window.size();) {
    size_t j = i;
    while (j < window.size() && window[j] == window[i]) ++j;
    const int32_t id = window[i];
    const auto count = static_cast<float>(j - i);
    i = j;
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    float& l = logits[id];
    l = l > 0 ? l / p.repeat_penalty : l * p.repeat_penalty;
    l -= count * p.frequency_penalty + p.presence_penalty;
  }
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

double Sampler::uniform() {
  // 53 random bits: the same number on every standard library, unlike
  // std::uniform_real_distribution.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  apply_penalties(logits, history, params_, window_);
  if (params_.temperature <= 0.0f) return argmax(logits);

  // Candidates sorted by logit, best first; top-k trims before the full sort.
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) candidates_.emplace_back(logits[i], static_cast<int32_t>(i));
  auto better = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) keep = params_.top_k;
  std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), better);
  candidates_.resize(keep);

  // top-p and min-p look at the distribution before temperature (llama.cpp's chain:
  // top-k, top-p, min-p, then temperature).
  const float max_logit = candidates_.front().first;
  probs_.resize(candidates_.size());
  double sum = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    probs_[i] = std::exp(static_cast<double>(candidates_[i].first - max_logit));
    sum += probs_[i];
  }
  if (params_.top_p < 1.0f) {
    double cumulative = 0.0;
    size_t i = 0;
    while (i < candidates_.size()) {
      cumulative += probs_[i] / sum;
      ++i;
      if (cumulative >= params_.top_p) break;
    }
    candidates_.resize(i);
  }
  if (params_.min_p > 0.0f) {
    // p_i >= min_p * p_max, i.e. logit_i >= max_logit + log(min_p).
    const float threshold = max_logit + std::log(params_.min_p);
    size_t i = 1;
    while (i < candidates_.size() && candidates_[i].first >= threshold) ++i;
    candidates_.resize(i);
  }

  sum = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    probs_[i] = std::exp(static_cast<double>(candidates_[i].first - max_logit) / params_.temperature);
    sum += probs_[i];
  }
  const double target = uniform() * sum;
  double cumulative = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cumulative += probs_[i];
    if (target < cumulative) return candidates_[i].second;
  }
  return candidates_.back().second;
}

}  // namespace tps
