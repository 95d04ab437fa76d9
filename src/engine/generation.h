#pragma once
// One request run to its end on the engine, as `tps run` and the tests use it: the
// prompt goes in, text comes out through TextOutput (streamed to a callback as it
// becomes printable), and the request's timings become TTFT, prefill and decode speed
// and inter-token latencies. The server drives the engine's streams itself.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

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
  std::string finish_reason;    // "eog", "stop" or "length" (the token limit or the context)
  int64_t prompt_tokens = 0;
  double ttft_s = 0;            // submission to the first generated token
  double prefill_s = 0;         // scheduled to the first generated token: the prompt's forward passes
  double decode_s = 0;          // first generated token to the last
  std::vector<double> itl_s;    // time between consecutive generated tokens (0 within one verify step's tokens)
  SpeculativeCounts speculative;

  double prefill_tokens_per_s() const { return prefill_s > 0 ? prompt_tokens / prefill_s : 0; }
  double decode_tokens_per_s() const { return decode_s > 0 ? itl_s.size() / decode_s : 0; }
};

// Throws tps::Error for an empty prompt, one that leaves no room in the engine's
// context, or a full queue. Generation also ends (finish "length") at the context.
GenerationResult generate(Engine& engine, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                          const GenerationOptions& options, const std::function<void(std::string_view)>& on_text = {});

// Percentile (0..100) of values by nearest rank; 0 for none.
double percentile(std::vector<double> values, double pct);

}  // namespace tps
