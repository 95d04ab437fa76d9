#pragma once
// One sequence, start to finish: prefill the prompt in one forward pass, then decode a
// token per step with a Sampler, streaming text as it becomes printable, stopping at
// end-of-generation tokens, stop strings or the token limit, and timing every step.
// Used by `tps run`, `tps logits` and the offline bench.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/thread_pool.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "sampling/sampler.h"

namespace tps {

struct GenerationOptions {
  int32_t max_tokens = 128;
  SamplingParams sampling;
  std::vector<std::string> stop;  // generation ends before the first of these strings
  bool stop_at_eog = true;        // end at EOS / EOT tokens
};

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated ids, an ending EOG token excluded
  std::string text;             // what was streamed, a stop string excluded
  std::string finish_reason;    // "eog", "stop" or "length"
  int64_t prompt_tokens = 0;
  double ttft_s = 0;            // start to first generated token (prefill + sampling)
  double prefill_s = 0;         // the prompt's forward pass
  double decode_s = 0;          // first generated token to the last
  std::vector<double> itl_s;    // time between consecutive generated tokens

  double prefill_tokens_per_s() const { return prefill_s > 0 ? prompt_tokens / prefill_s : 0; }
  double decode_tokens_per_s() const { return decode_s > 0 ? itl_s.size() / decode_s : 0; }
};

class Generator {
 public:
  static constexpr int64_t kDefaultContext = 4096;
  // context <= 0: the model's context length, at most kDefaultContext. A context longer
  // than the model's is refused. The KV cache grows with the sequence, up to the context.
  Generator(Model& model, ThreadPool& pool, int64_t context = 0);

  int64_t context() const { return context_; }
  int64_t position() const { return position_; }  // tokens in the sequence so far
  void reset() { position_ = 0; }
  // Makes room for `tokens` positions in the KV cache now (at most the context), so
  // that later steps never pause to grow it.
  void reserve(int64_t tokens);

  // Appends tokens to the sequence in one forward pass and returns the logits after the
  // last one (valid until the next call). Throws tps::Error past the context.
  std::span<float> prefill(std::span<const int32_t> tokens);
  std::span<float> step(int32_t token) { return prefill({&token, 1}); }

  // Generates from `prompt` (a fresh sequence); on_text receives text as it becomes
  // printable (complete UTF-8, stop strings held back until ruled out).
  GenerationResult generate(std::span<const int32_t> prompt, const GenerationOptions& options,
                            const std::function<void(std::string_view)>& on_text = {});

 private:
  Model& model_;
  ThreadPool& pool_;
  int64_t context_;
  std::unique_ptr<KvCache> kv_;  // blocks 0..n-1 in position order
  std::vector<int32_t> block_table_;
  int64_t position_ = 0;
  ForwardBatch batch_;
  std::vector<float> logits_;
};

// Percentile (0..100) of values by nearest rank; 0 for none.
double percentile(std::vector<double> values, double pct);

}  // namespace tps
