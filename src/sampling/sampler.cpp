#include "sampling/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

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

// e^x for x <= 0 to a few parts in a million, with no call into libm: the compiler
// vectorizes the loop over the vocabulary with it, and it gives the same number on every
// platform. Below -87 (float underflow, and -inf of masked tokens) it is exactly 0. The
// test for that compares bits (unsigned, larger for more negative floats): a float
// compare would keep the loop scalar under -ftrapping-math.
inline float exp_nonpositive(float x) {
  constexpr uint32_t kFloor = std::bit_cast<uint32_t>(-87.0f);
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t under = bits > kFloor ? ~0u : 0u;
  const float t = std::bit_cast<float>((bits & ~under) | (kFloor & under)) * 1.44269504f;  // x / ln 2
  const int32_t n = static_cast<int32_t>(t - 0.5f);                                         // round(t), t <= 0
  const float f = (t - static_cast<float>(n)) * 0.693147181f;                              // |f| <= ln 2 / 2
  // Taylor series of e^f to the 6th power: error below 2e-7 on |f| <= 0.35.
  float p = 1.0f / 720.0f;
  p = p * f + 1.0f / 120.0f;
  p = p * f + 1.0f / 24.0f;
  p = p * f + 1.0f / 6.0f;
  p = p * f + 0.5f;
  p = p * f + 1.0f;
  p = p * f + 1.0f;
  return std::bit_cast<float>((std::bit_cast<uint32_t>(p) + (static_cast<uint32_t>(n) << 23)) & ~under);  // p 2^n
}

constexpr size_t kDrawBlock = 256;

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

void Sampler::adjust(std::span<float> logits, std::span<const int32_t> history) {
  // A NaN logit (a fault in the model) counts as -inf: never drawn, and unable to turn
  // the softmax's sum, or the argmax, into nonsense.
  for (float& l : logits)
    if (std::isnan(l)) l = -std::numeric_limits<float>::infinity();
  for (const auto& [id, amount] : params_.logit_bias)
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits[id] += amount;
  apply_penalties(logits, history, params_, window_);
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history) {
  if (greedy()) {
    adjust(logits, history);
    return argmax(logits);
  }
  return draw(weigh(select(logits, history)));
}

float Sampler::select(std::span<float> logits, std::span<const int32_t> history) {
  adjust(logits, history);
  const size_t n = logits.size();
  const auto best = std::max_element(logits.begin(), logits.end());
  const float max_logit = *best;
  candidates_.clear();
  // Nothing finite to weigh (every token banned, or NaN) or an infinite logit the
  // softmax cannot weigh: the argmax alone, as greedy would pick.
  if (!std::isfinite(max_logit)) {
    candidates_.emplace_back(0.0f, static_cast<int32_t>(best - logits.begin()));
    return 0.0f;
  }
  // min-p keeps p_i >= min_p * p_max, i.e. logit_i >= max_logit + log(min_p), and always the best.
  const float min_p_floor = params_.min_p > 0.0f ? std::min(max_logit, max_logit + std::log(params_.min_p))
                                                 : -std::numeric_limits<float>::infinity();
  const bool top_k = params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n;
  if (top_k || params_.top_p < 1.0f) {
    for (size_t i = 0; i < n; ++i) candidates_.emplace_back(logits[i], static_cast<int32_t>(i));
    keep_top_k_and_top_p(max_logit, top_k ? static_cast<size_t>(params_.top_k) : n);
    // Sorted best first: min-p cuts a tail.
    size_t i = 1;
    while (i < candidates_.size() && candidates_[i].first >= min_p_floor) ++i;
    candidates_.resize(i);
  } else {
    // Nothing needs an order: the draw walks the vocabulary as it is. Sorting 32000
    // candidates here cost milliseconds per token, on the engine thread every step.
    for (size_t i = 0; i < n; ++i)
      if (logits[i] >= min_p_floor) candidates_.emplace_back(logits[i], static_cast<int32_t>(i));
  }
  return max_logit;
}

void Sampler::distribution(std::span<float> logits, std::span<const int32_t> history, TokenDistribution& out) {
  out.ids.clear();
  out.probs.clear();
  if (greedy()) {
    adjust(logits, history);
    out.ids.push_back(argmax(logits));
    out.probs.push_back(1.0f);
    return;
  }
  const double total = weigh(select(logits, history));
  for (size_t i = 0; i < candidates_.size(); ++i) {
    if (probs_[i] <= 0.0f) continue;
    out.ids.push_back(candidates_[i].second);
    out.probs.push_back(static_cast<float>(probs_[i] / total));
  }
}

float TokenDistribution::prob_of(int32_t id) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == id) return probs[i];
  return 0.0f;
}

int32_t Sampler::verify(std::span<float> logits, std::span<const int32_t> history, int32_t draft,
                        const TokenDistribution* q, bool* kept) {
  distribution(logits, history, p_);
  *kept = false;
  if (greedy()) {
    *kept = p_.ids[0] == draft;
    return p_.ids[0];
  }
  const double p_draft = p_.prob_of(draft);
  const double q_draft = q != nullptr ? q->prob_of(draft) : 1.0;
  if (q_draft > 0 && uniform() * q_draft < p_draft) {
    *kept = true;
    return draft;
  }
  // The residual max(0, p - q); where it is all zero (p == q) the draft would always
  // have been kept, so rounding alone brings us here: draw from p.
  dense_q_.assign(logits.size(), 0.0f);  // q by token id, so the residual is one pass
  if (q != nullptr) {
    for (size_t i = 0; i < q->ids.size(); ++i) dense_q_[q->ids[i]] = q->probs[i];
  } else {
    dense_q_[draft] = 1.0f;
  }
  double total = 0;
  for (size_t i = 0; i < p_.ids.size(); ++i) {
    p_.probs[i] = std::max(0.0f, p_.probs[i] - dense_q_[p_.ids[i]]);
    total += p_.probs[i];
  }
  if (total <= 0) {
    // p == q to rounding: the draft would have been kept; any draw from p will do.
    for (size_t i = 0; i < p_.ids.size(); ++i) p_.probs[i] = 1.0f;
  }
  return draw_from(p_);
}

int32_t Sampler::draw_from(const TokenDistribution& d) {
  double total = 0;
  for (float p : d.probs) total += p;
  const double target = uniform() * total;
  double cumulative = 0;
  for (size_t i = 0; i < d.ids.size(); ++i) {
    cumulative += d.probs[i];
    if (target < cumulative && d.probs[i] > 0.0f) return d.ids[i];
  }
  for (size_t i = d.ids.size(); i-- > 0;)
    if (d.probs[i] > 0.0f) return d.ids[i];
  return d.ids.empty() ? 0 : d.ids[0];
}

void Sampler::keep_top_k_and_top_p(float max_logit, size_t k) {
  // Best first; equal logits by id, so the order is the same on every platform.
  auto better = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  auto first = candidates_.begin();
  size_t sorted = 0;
  if (k < candidates_.size()) {
    std::partial_sort(first, first + static_cast<std::ptrdiff_t>(k), candidates_.end(), better);
    candidates_.resize(k);
    sorted = k;
  }
  if (params_.top_p >= 1.0f) return;
  // top-p looks at the distribution left by top-k, before temperature (llama.cpp's
  // chain: top-k, top-p, min-p, then temperature).
  double sum = 0.0;
  for (const auto& c : candidates_) sum += std::exp(static_cast<double>(c.first - max_logit));
  // The smallest best-first prefix reaching top_p: sorted in growing pieces, since it is
  // usually far shorter than the vocabulary.
  double cumulative = 0.0;
  const size_t n = candidates_.size();
  for (size_t i = 0; i < n; ++i) {
    if (i == sorted) {
      size_t next = std::min(n, std::max<size_t>(64, sorted * 4));
      std::nth_element(first + static_cast<std::ptrdiff_t>(sorted), first + static_cast<std::ptrdiff_t>(next - 1),
                       candidates_.end(), better);
      std::sort(first + static_cast<std::ptrdiff_t>(sorted), first + static_cast<std::ptrdiff_t>(next), better);
      sorted = next;
    }
    cumulative += std::exp(static_cast<double>(candidates_[i].first - max_logit)) / sum;
    if (cumulative >= params_.top_p) {
      candidates_.resize(i + 1);
      return;
    }
  }
}

double Sampler::weigh(float max_logit) {
  // The whole vocabulary goes through here on plain sampling, on the engine thread every
  // step: a vectorized exp, and a sum per block of candidates so that the draw walks the
  // block sums and then one block instead of every candidate again.
  const size_t n = candidates_.size();
  probs_.resize(n);
  block_sums_.clear();
  const float inv_temperature = 1.0f / params_.temperature;
  double total = 0.0;
  for (size_t begin = 0; begin < n; begin += kDrawBlock) {
    const size_t end = std::min(n, begin + kDrawBlock);
    for (size_t i = begin; i < end; ++i) probs_[i] = exp_nonpositive((candidates_[i].first - max_logit) * inv_temperature);
    float sum = 0.0f;
    for (size_t i = begin; i < end; ++i) sum += probs_[i];
    block_sums_.push_back(sum);
    total += sum;
  }
  return total;
}

int32_t Sampler::draw(double total) {
  constexpr size_t kBlock = kDrawBlock;
  const size_t n = candidates_.size();
  const double target = uniform() * total;
  double cumulative = 0.0;
  size_t block = 0;
  while (block + 1 < block_sums_.size() && cumulative + block_sums_[block] <= target) cumulative += block_sums_[block++];
  for (size_t i = block * kBlock; i < std::min(n, (block + 1) * kBlock); ++i) {
    cumulative += probs_[i];
    if (target < cumulative && probs_[i] > 0.0f) return candidates_[i].second;
  }
  // Rounding left the target just past the block's own sum: the last candidate up to
  // there that can be drawn.
  for (size_t i = std::min(n, (block + 1) * kBlock); i-- > 0;)
    if (probs_[i] > 0.0f) return candidates_[i].second;
  return candidates_.front().second;
}

}  // namespace tps
