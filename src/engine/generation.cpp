#include "engine/generation.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/timer.h"
#include "engine/text_output.h"

namespace tps {

GenerationResult generate(Engine& engine, const Tokenizer& tokenizer, std::span<const int32_t> prompt,
                          const GenerationOptions& options, const std::function<void(std::string_view)>& on_text) {
  if (prompt.empty()) fail("the prompt has no tokens");
  if (options.max_tokens < 0) fail("the number of tokens to generate must not be negative, got {}", options.max_tokens);
  if (static_cast<int64_t>(prompt.size()) >= engine.context())
    fail("the prompt is {} tokens; the context holds {}, so it must be shorter", prompt.size(), engine.context());
  GenerationResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  result.finish_reason = "length";
  if (options.max_tokens == 0) return result;

  GenerationRequest request;
  request.prompt.assign(prompt.begin(), prompt.end());
  request.sampling = options.sampling;
  request.max_tokens = options.max_tokens;
  request.ignore_eos = !options.stop_at_eog;
  std::shared_ptr<RequestStream> stream = engine.submit(std::move(request));
  if (!stream) fail("the engine's queue is full");

  TextOutput output(tokenizer, options.stop, prompt.back());
  auto emit = [&](const std::string& text) {
    if (text.empty()) return;
    result.text += text;
    if (on_text) on_text(text);
  };
  std::vector<GeneratedToken> tokens;
  while (!output.stopped()) {
    tokens.clear();
    stream->wait(tokens, now_seconds() + 60);  // wakes at each token or the end
    for (const GeneratedToken& t : tokens) {
      result.tokens.push_back(t.id);
      emit(output.push(t.id));
      if (output.stopped()) {
        stream->cancel();  // the engine frees the sequence at its next step
        break;
      }
    }
    if (stream->finished()) break;
  }
  if (!output.stopped()) emit(output.finish());
  if (output.stopped()) result.finish_reason = "stop";
  else if (stream->finish_reason() == FinishReason::kStop) result.finish_reason = "eog";

  result.speculative = stream->speculative();
  const RequestTimes times = stream->times();
  const size_t n = result.tokens.size();  // tokens made after a stop string are not the user's
  if (n > 0) {
    result.ttft_s = times.first_token - times.arrived;
    result.prefill_s = times.first_token - times.scheduled;
    result.decode_s = times.token_times[n - 1] - times.first_token;
    for (size_t i = 1; i < n; ++i) result.itl_s.push_back(times.token_times[i] - times.token_times[i - 1]);
  }
  return result;
}

double percentile(std::vector<double> values, double pct) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(pct / 100.0 * values.size()));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

}  // namespace tps
