// tps run: generate text from a GGUF model, streaming, then report TTFT, prefill and
// decode speed and inter-token latency. One request on the same engine as tps serve.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/model_session.h"
#include "cli/text_file.h"
#include "core/error.h"
#include "engine/generation.h"
#include "engine/model_runner.h"
#include "cli/speculative_options.h"

namespace tps::cli {

namespace {

struct RunArgs {
  std::string model;
  std::string prompt;
  std::string prompt_file;
  int32_t n_predict = 128;
  int threads = 0;
  int64_t context = 0;
  SamplingParams sampling;
  std::vector<std::string> stop;
  std::vector<std::string> logit_bias;
  bool json = false;
  bool no_stream = false;
  bool ignore_eos = false;
  bool hide_prompt = false;
  SpeculativeArgs speculative;
  int tp = 1;
};

void print_summary(const GenerationResult& r) {
  std::fprintf(stderr,
               "prompt %lld tokens, TTFT %.2f ms, prefill %.1f tok/s | generated %zu tokens, decode %.1f tok/s, "
               "ITL p50 %.2f ms p99 %.2f ms | finish: %s\n",
               static_cast<long long>(r.prompt_tokens), r.ttft_s * 1e3, r.prefill_tokens_per_s(), r.tokens.size(),
               r.decode_tokens_per_s(), percentile(r.itl_s, 50) * 1e3, percentile(r.itl_s, 99) * 1e3,
               r.finish_reason.c_str());
  const SpeculativeCounts& s = r.speculative;
  if (s.verify_steps > 0)
    std::fprintf(stderr,
                 "speculative: %lld drafted, %lld accepted, acceptance rate %.3f, mean accepted length %.2f over %lld "
                 "verify steps\n",
                 static_cast<long long>(s.drafted_tokens), static_cast<long long>(s.accepted_tokens),
                 s.acceptance_rate(), s.mean_accepted_length(), static_cast<long long>(s.verify_steps));
}

nlohmann::json summary_json(const GenerationResult& r, int threads, int64_t context) {
  return {{"text", r.text},
          {"finish_reason", r.finish_reason},
          {"prompt_tokens", r.prompt_tokens},
          {"generated_tokens", r.tokens.size()},
          {"ttft_ms", r.ttft_s * 1e3},
          {"prefill_tokens_per_s", r.prefill_tokens_per_s()},
          {"decode_tokens_per_s", r.decode_tokens_per_s()},
          {"itl_p50_ms", percentile(r.itl_s, 50) * 1e3},
          {"itl_p99_ms", percentile(r.itl_s, 99) * 1e3},
          {"threads", threads},
          {"speculative",
           {{"verify_steps", r.speculative.verify_steps},
            {"drafted_tokens", r.speculative.drafted_tokens},
            {"accepted_tokens", r.speculative.accepted_tokens},
            {"acceptance_rate", r.speculative.acceptance_rate()},
            {"mean_accepted_length", r.speculative.mean_accepted_length()}}},
          {"context", context},
          {"tokens", r.tokens}};
}

// llama.cpp's form: TOKEN_ID+BIAS or TOKEN_ID-BIAS (e.g. 15043+1, 2-inf).
std::pair<int32_t, float> parse_logit_bias(const std::string& text, int64_t vocab_size) {
  const size_t sign = text.find_first_of("+-");
  char* end = nullptr;
  const long id = sign == 0 || sign == std::string::npos ? -1 : std::strtol(text.c_str(), &end, 10);
  if (id < 0 || end != text.c_str() + sign)
    fail("--logit-bias '{}': expected TOKEN_ID+BIAS or TOKEN_ID-BIAS, e.g. 15043+1 or 2-inf", text);
  const float bias = std::strtof(text.c_str() + sign, &end);
  if (end != text.c_str() + text.size() || end == text.c_str() + sign + 1 || std::isnan(bias))
    fail("--logit-bias '{}': expected TOKEN_ID+BIAS or TOKEN_ID-BIAS, e.g. 15043+1 or 2-inf", text);
  // -inf bans a token; an infinite or overflowing push up would leave no finite best
  // logit to weigh the others against.
  if (bias == std::numeric_limits<float>::infinity())
    fail("--logit-bias '{}': the bias must be finite (or -inf, which bans the token)", text);
  if (id >= vocab_size) fail("--logit-bias '{}': token {} is outside the vocabulary of {}", text, id, vocab_size);
  return {static_cast<int32_t>(id), bias};
}

int run(RunArgs a) {
  if (!a.prompt_file.empty()) a.prompt = read_text_file(a.prompt_file);
  ModelSession session(a.model, a.tp);
  if (session.follower()) return session.follow();
  Model* model = &session.model();
  const int threads = a.threads > 0 ? a.threads : ThreadPool::default_threads();
  std::string note;
  const KvGeometry kv = plan_kv_geometry(model->config(), {a.context, 0, KvCache::kDefaultBlockTokens, 1}, &note);
  if (!note.empty()) std::fprintf(stderr, "tps run: %s\n", note.c_str());
  ModelRunner runner(*model, kv, threads);
  EngineConfig config;
  config.max_seqs = 1;
  config.max_batch_tokens = static_cast<int32_t>(kv.context);  // the prompt in one forward pass
  const Tokenizer& tokenizer = model->tokenizer();
  config.is_eog = [&tokenizer](int32_t id) { return tokenizer.is_eog(id); };
  Drafter drafter = make_drafter(a.speculative, runner);
  drafter.apply(config);
  Engine engine(runner, config);
  const std::vector<int32_t> prompt = tokenizer.encode(a.prompt, true, true);
  // Asked for tokens that cannot fit: say so now rather than stop short.
  if (static_cast<int64_t>(prompt.size()) + a.n_predict > kv.context)
    fail("prompt of {} tokens plus {} to generate exceeds the context of {}", prompt.size(), a.n_predict, kv.context);
  GenerationOptions options;
  options.max_tokens = a.n_predict;
  options.sampling = a.sampling;
  for (const std::string& b : a.logit_bias) options.sampling.logit_bias.push_back(parse_logit_bias(b, model->config().vocab_size));
  options.stop = a.stop;
  options.stop_at_eog = !a.ignore_eos;
  const bool stream = !a.json && !a.no_stream;
  // The prompt is echoed before its continuation, as llama-cli and llama2.c do.
  const std::string echo = a.hide_prompt ? "" : a.prompt;
  if (stream) std::fwrite(echo.data(), 1, echo.size(), stdout);
  GenerationResult result = generate(engine, tokenizer, prompt, options, [&](std::string_view text) {
    if (!stream) return;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  if (a.json) {
    std::printf("%s\n", summary_json(result, threads, kv.context).dump(2).c_str());
    return 0;
  }
  if (!stream) std::printf("%s%s", echo.c_str(), result.text.c_str());
  std::printf("\n");
  std::fflush(stdout);
  print_summary(result);
  return 0;
}

CommandRegistration registration{
    "run", "generate text from a GGUF model and report TTFT, prefill and decode tokens/s", [](CLI::App& sub) {
      auto a = std::make_shared<RunArgs>();
      sub.add_option("-m,--model", a->model, "GGUF model file")->required();
      auto* prompt = sub.add_option("-p,--prompt", a->prompt, "prompt text (BOS is added as the vocabulary asks)");
      sub.add_option("-f,--file", a->prompt_file, "read the prompt from this file")->excludes(prompt);
      sub.add_option("-n,--n-predict", a->n_predict, "tokens to generate")->check(CLI::NonNegativeNumber);
      sub.add_option("-t,--threads", a->threads, "threads (default: the cores available)");
      sub.add_option("-c,--ctx-size", a->context, "context length (default: the model's, at most 4096)");
      sub.add_option("--temp", a->sampling.temperature, "temperature; <= 0 is greedy")->capture_default_str();
      sub.add_option("--top-k", a->sampling.top_k, "top-k; <= 0 is off")->capture_default_str();
      sub.add_option("--top-p", a->sampling.top_p, "top-p; 1 is off")->capture_default_str();
      sub.add_option("--min-p", a->sampling.min_p, "min-p; 0 is off")->capture_default_str();
      sub.add_option("--repeat-penalty", a->sampling.repeat_penalty, "repetition penalty; 1 is off")->capture_default_str();
      sub.add_option("--repeat-last-n", a->sampling.repeat_last_n, "tokens the penalties look back over; -1: all")
          ->capture_default_str();
      sub.add_option("--presence-penalty", a->sampling.presence_penalty, "presence penalty")->capture_default_str();
      sub.add_option("--frequency-penalty", a->sampling.frequency_penalty, "frequency penalty")->capture_default_str();
      sub.add_option("-s,--seed", a->sampling.seed, "sampling seed")->capture_default_str();
      sub.add_option("-l,--logit-bias", a->logit_bias,
                     "TOKEN_ID+BIAS or TOKEN_ID-BIAS added to that token's logit, e.g. 15043+1, 2-inf (repeatable)");
      sub.add_option("--stop", a->stop, "stop before this string (repeatable)");
      sub.add_flag("--ignore-eos", a->ignore_eos, "keep generating past end-of-generation tokens");
      sub.add_flag("--no-display-prompt", a->hide_prompt, "print only the generated text, not the prompt first");
      sub.add_flag("--no-stream", a->no_stream, "print the text at the end instead of as it is generated");
      sub.add_flag("--json", a->json, "print the text and the summary as one JSON object");
      add_speculative_options(sub, a->speculative);
      add_tensor_parallel_option(sub, a->tp);
      return [a] { return run(*a); };
    }};

}  // namespace

}  // namespace tps::cli
