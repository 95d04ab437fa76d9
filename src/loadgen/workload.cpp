#include "loadgen/workload.h"

#include <cmath>
#include <fstream>
#include <random>

#include "core/error.h"

namespace tps::loadgen {
namespace {

// Three-letter words: one token each (with their leading space) in common vocabularies,
// and exactly one token for the 4-bytes-per-token estimate, so lengths converge at once.
constexpr const char* kWords[] = {
    "the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had", "her", "was",
    "one", "our", "out", "day", "get", "has", "him", "his", "how", "man", "new", "now", "old",
    "see", "two", "way", "who", "boy", "did", "its", "let", "put", "say", "she", "too", "use",
    "big", "end", "far", "few", "got", "low", "may", "own", "run", "set", "top", "why", "yes"};
constexpr size_t kWordCount = sizeof(kWords) / sizeof(kWords[0]);

int64_t draw_length(const LengthSpec& spec, std::mt19937_64& rng) {
  if (spec.stddev <= 0) return spec.mean;
  std::normal_distribution<double> normal(double(spec.mean), spec.stddev);
  return std::max<int64_t>(1, std::llround(normal(rng)));
}

struct Fitted {
  std::string text;
  int64_t tokens = 0;
};

// Grows or trims random words after `head` until the whole text counts `target` tokens.
// Token merges at word edges can make a length unreachable; then the closest is kept.
Fitted fit_text(const std::string& head, int64_t target, std::mt19937_64& rng, TokenCounter& counter) {
  std::vector<const char*> words;
  auto render = [&] {
    std::string text = head;
    for (const char* w : words) {
      if (!text.empty()) text += ' ';
      text += w;
    }
    return text;
  };
  auto add_words = [&](int64_t n) {
    for (int64_t i = 0; i < n; ++i) words.push_back(kWords[rng() % kWordCount]);
  };
  int64_t head_tokens = head.empty() ? 0 : counter.count(head);
  add_words(std::max<int64_t>(target - head_tokens, 0));
  Fitted best;
  int64_t best_error = -1;
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string text = render();
    int64_t tokens = counter.count(text);
    int64_t error = std::llabs(tokens - target);
    if (best_error < 0 || error < best_error) {
      best = {text, tokens};
      best_error = error;
    }
    if (error == 0) break;
    if (tokens < target) {
      add_words(target - tokens);
    } else {
      int64_t remove = std::min<int64_t>(std::max<int64_t>((tokens - target) / 2, 1), int64_t(words.size()));
      if (remove == 0) break;
      words.resize(words.size() - size_t(remove));
    }
  }
  return best;
}

std::vector<Prompt> read_dataset(const std::string& path, const std::string& endpoint_kind) {
  std::ifstream in(path);
  if (!in) fail("--dataset {}: cannot open the file", path);
  std::vector<Prompt> prompts;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto json = nlohmann::json::parse(line, nullptr, false);
    if (json.is_discarded() || !json.is_object())
      fail("--dataset {}:{}: not a JSON object", path, line_number);
    Prompt p;
    p.output_tokens = -1;
    if (json.contains("prompt") && json["prompt"].is_string()) {
      p.text = json["prompt"].get<std::string>();
    } else if (json.contains("messages") && json["messages"].is_array()) {
      if (endpoint_kind != "chat")
        fail("--dataset {}:{}: chat messages need --endpoint chat", path, line_number);
      p.messages = json["messages"];
      for (const auto& m : p.messages)
        if (m.is_object() && m.contains("content") && m["content"].is_string())
          p.text += m["content"].get<std::string>() + "\n";
    } else {
      fail("--dataset {}:{}: expected a \"prompt\" string or a \"messages\" array", path, line_number);
    }
    for (const char* key : {"output_tokens", "max_tokens"})
      if (json.contains(key) && json[key].is_number_integer()) p.output_tokens = json[key].get<int64_t>();
    prompts.push_back(std::move(p));
  }
  if (prompts.empty()) fail("--dataset {}: no prompts in the file", path);
  return prompts;
}

nlohmann::json to_json(const LengthSpec& s) { return {{"mean", s.mean}, {"stddev", s.stddev}}; }

}  // namespace

LengthSpec parse_length_spec(const std::string& flag, const std::string& text) {
  LengthSpec spec;
  size_t colon = text.find(':');
  try {
    size_t used = 0;
    spec.mean = std::stoll(text.substr(0, colon), &used);
    if (used != text.substr(0, colon).size()) throw std::invalid_argument(text);
    if (colon != std::string::npos) spec.stddev = std::stod(text.substr(colon + 1));
  } catch (const std::exception&) {
    fail("{} '{}': expected TOKENS or TOKENS:STDDEV, e.g. 512 or 512:64", flag, text);
  }
  if (spec.mean < 1 || spec.stddev < 0) fail("{} '{}': the length must be >= 1 and the stddev >= 0", flag, text);
  return spec;
}

Workload build_workload(const WorkloadSpec& spec, size_t count, const std::string& endpoint_kind,
                        TokenCounter& counter) {
  Workload w;
  w.input_tokens_source = counter.name();
  std::mt19937_64 rng(spec.seed);
  if (!spec.dataset.empty()) {
    std::vector<Prompt> lines = read_dataset(spec.dataset, endpoint_kind);
    for (auto& p : lines) {
      p.input_tokens = counter.count(p.text);
      if (p.output_tokens < 1) p.output_tokens = draw_length(spec.output, rng);
    }
    for (size_t i = 0; i < count; ++i) w.prompts.push_back(lines[i % lines.size()]);
    w.description = {{"kind", "dataset"}, {"path", spec.dataset}, {"lines", lines.size()},
                     {"output_tokens_default", to_json(spec.output)}};
  } else {
    if (spec.shared_prefix >= spec.input.mean)
      fail("--shared-prefix {} must be shorter than --input-tokens {}", spec.shared_prefix, spec.input.mean);
    std::string prefix;
    if (spec.shared_prefix > 0) prefix = fit_text("", spec.shared_prefix, rng, counter).text;
    for (size_t i = 0; i < count; ++i) {
      int64_t target = std::max(draw_length(spec.input, rng), spec.shared_prefix + 1);
      Fitted fitted = fit_text(prefix, target, rng, counter);
      if (fitted.tokens == target) ++w.exact_inputs;
      Prompt p;
      p.text = std::move(fitted.text);
      p.input_tokens = fitted.tokens;
      p.output_tokens = draw_length(spec.output, rng);
      w.prompts.push_back(std::move(p));
    }
    w.description = {{"kind", "synthetic"}, {"input_tokens", to_json(spec.input)},
                     {"output_tokens", to_json(spec.output)}, {"shared_prefix_tokens", spec.shared_prefix},
                     {"prompts_with_exact_input_length", w.exact_inputs}};
  }
  w.description["input_tokens_counted_by"] = counter.name();
  w.description["input_tokens_exact"] = counter.exact();
  w.description["seed"] = spec.seed;
  w.description["prompts"] = count;
  return w;
}

}  // namespace tps::loadgen
