#pragma once
// Turns logits into the next token as llama.cpp's default chain does: logit bias,
// penalties, then top-k, top-p, min-p, temperature, and a draw from a seeded generator (greedy when
// temperature <= 0). Reproducible for a given seed on any platform.
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace tps {

struct SamplingParams {
  float temperature = 0.8f;
  int32_t top_k = 40;          // <= 0: off
  float top_p = 0.95f;         // >= 1: off
  float min_p = 0.05f;         // <= 0: off
  float repeat_penalty = 1.0f; // 1: off (llama.cpp semantics over the last repeat_last_n)
  int32_t repeat_last_n = 64;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // (token id, amount) added to those tokens' logits before anything else (OpenAI's
  // logit_bias); -100 as good as bans a token, +100 as good as forces it.
  std::vector<std::pair<int32_t, float>> logit_bias;
  uint64_t seed = 0;

  // A draw from softmax(logits / temperature) with no top-k, top-p or min-p
  // truncation: OpenAI's defaults (at temperature 1).
  static SamplingParams untruncated(float temperature) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    return p;
  }
};

// Tokens and their probabilities (summing to 1); tokens not listed have none.
struct TokenDistribution {
  std::vector<int32_t> ids;
  std::vector<float> probs;
  float prob_of(int32_t id) const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  bool greedy() const { return params_.temperature <= 0.0f; }
  // `history` is the sequence so far (prompt and generated) for the penalties.
  // Modifies `logits` in place.
  int32_t sample(std::span<float> logits, std::span<const int32_t> history);
  // What sample() draws from, after penalties and truncation (greedy: the argmax with
  // probability 1). Modifies `logits` in place.
  void distribution(std::span<float> logits, std::span<const int32_t> history, TokenDistribution& out);
  // Speculative verification, lossless: a draft token proposed with probability q(draft)
  // (q: the drafter's distribution; nullptr for a deterministic proposal, q = 1 on it)
  // is kept with probability min(1, p / q); otherwise the token is drawn from
  // normalize(max(0, p - q)). Greedy: the argmax, whatever the draft. So the returned
  // token has the distribution sample() would give.
  // *kept says whether the draft was kept (a resampled token may equal it).
  int32_t verify(std::span<float> logits, std::span<const int32_t> history, int32_t draft,
                 const TokenDistribution* q, bool* kept);
  // A draw from d with this sampler's generator.
  int32_t draw_from(const TokenDistribution& d);

 private:
  double uniform();  // in [0, 1)
  // NaN to -inf, the logit bias, then the penalties: what every path does to the logits first.
  void adjust(std::span<float> logits, std::span<const int32_t> history);
  // Penalties, then candidates_ cut by top-k, top-p and min-p; returns the best logit
  // (the logit weigh() measures from). With no finite best, the argmax alone, at 0.
  float select(std::span<float> logits, std::span<const int32_t> history);
  // Leaves candidates_ (the whole vocabulary on entry) sorted best first and cut to the
  // top k, then to the smallest prefix whose probability reaches top_p.
  void keep_top_k_and_top_p(float max_logit, size_t k);
  // probs_ (unnormalized) and block_sums_ of candidates_ at the temperature; their total.
  double weigh(float max_logit);
  // Draws one of candidates_ by probs_.
  int32_t draw(double total);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;
  std::vector<float> probs_;
  std::vector<float> block_sums_;  // of probs_, per block of the draw
  std::vector<int32_t> window_;  // the penalties' look-back, sorted
  TokenDistribution p_;          // verify's scratch
  std::vector<float> dense_q_;
};

}  // namespace tps
