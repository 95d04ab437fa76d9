#include "engine/generator.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/timer.h"
#include "engine/stop_strings.h"

namespace tps {

namespace {

int64_t resolve_context(const Model& model, int64_t context) {
  const int64_t trained = model.config().context_length;
  if (context <= 0) return std::min(trained, Generator::kDefaultContext);
  if (context > trained) fail("a context of {} exceeds the model's context length of {}", context, trained);
  return context;
}

int64_t blocks_for(int64_t tokens) { return (tokens + KvCache::kDefaultBlockTokens - 1) / KvCache::kDefaultBlockTokens; }

}  // namespace

Generator::Generator(Model& model, ThreadPool& pool, int64_t context)
    : model_(model),
      pool_(pool),
      context_(resolve_context(model, context)) {
  logits_.resize(model.config().vocab_size);
}

void Generator::reserve(int64_t tokens) {
  const int64_t have = kv_ ? kv_->n_blocks() : 0;
  const int64_t need = blocks_for(std::min(tokens, context_));
  if (need <= have) return;
  // Doubling keeps the copies amortized when a caller steps past the reservation.
  const int64_t blocks = std::min(std::max(need, 2 * have), blocks_for(context_));
  auto grown = std::make_unique<KvCache>(model_.config(), blocks);
  if (kv_) grown->copy_blocks_from(*kv_, have);
  kv_ = std::move(grown);
  // The one sequence owns every block, in order.
  block_table_.resize(blocks);
  for (int64_t i = 0; i < blocks; ++i) block_table_[i] = static_cast<int32_t>(i);
}

std::span<float> Generator::prefill(std::span<const int32_t> tokens) {
  if (tokens.empty()) fail("nothing to run: no tokens");
  if (position_ + static_cast<int64_t>(tokens.size()) > context_)
    fail("{} tokens after {} exceed the context of {}", tokens.size(), position_, context_);
  reserve(position_ + static_cast<int64_t>(tokens.size()));
  batch_.clear();
  batch_.sequences.push_back({block_table_.data(), static_cast<int64_t>(block_table_.size())});
  for (size_t i = 0; i < tokens.size(); ++i)
    batch_.add(tokens[i], static_cast<int32_t>(position_ + i), 0, i + 1 == tokens.size());
  model_.forward(batch_, *kv_, logits_.data(), pool_);
  position_ += static_cast<int64_t>(tokens.size());
  return logits_;
}

GenerationResult Generator::generate(std::span<const int32_t> prompt, const GenerationOptions& options,
                                     const std::function<void(std::string_view)>& on_text) {
  if (prompt.empty()) fail("the prompt has no tokens");
  if (options.max_tokens < 0) fail("the number of tokens to generate must not be negative, got {}", options.max_tokens);
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt + options.max_tokens > context_)
    fail("prompt of {} tokens plus {} to generate exceeds the context of {}", n_prompt, options.max_tokens, context_);

  GenerationResult result;
  result.prompt_tokens = n_prompt;
  result.finish_reason = "length";
  const Tokenizer& tokenizer = model_.tokenizer();
  Sampler sampler(options.sampling);
  StreamingDecoder decoder(tokenizer);
  StopStringFilter filter(options.stop);
  auto emit = [&](const std::string& text) {
    if (text.empty()) return;
    result.text += text;
    if (on_text) on_text(text);
  };
  std::vector<int32_t> history(prompt.begin(), prompt.end());
  // The decoder tracks the previous token (the leading space after BOS goes).
  for (int32_t id : prompt) decoder.push(id);

  reset();
  reserve(n_prompt + options.max_tokens);
  const double start = now_seconds();
  std::span<float> logits = prefill(prompt);
  result.prefill_s = now_seconds() - start;
  double last = start;
  for (int32_t i = 0; i < options.max_tokens; ++i) {
    if (i > 0) logits = step(history.back());
    const int32_t id = sampler.sample(logits, history);
    const double now = now_seconds();
    if (i == 0)
      result.ttft_s = now - start;
    else
      result.itl_s.push_back(now - last);
    last = now;
    if (options.stop_at_eog && tokenizer.is_eog(id)) {
      result.finish_reason = "eog";
      break;
    }
    history.push_back(id);
    result.tokens.push_back(id);
    emit(filter.push(decoder.push(id)));
    if (filter.stopped()) {
      result.finish_reason = "stop";
      break;
    }
  }
  if (!filter.stopped()) {
    emit(filter.push(decoder.flush()));
    if (filter.stopped()) result.finish_reason = "stop";
    emit(filter.finish());
  }
  result.decode_s = result.tokens.empty() ? 0 : last - start - result.ttft_s;
  return result;
}

double percentile(std::vector<double> values, double pct) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(pct / 100.0 * values.size()));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

}  // namespace tps
