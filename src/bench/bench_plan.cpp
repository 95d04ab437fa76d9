#include "bench/bench_plan.h"

#include <charconv>

#include <fmt/format.h>

#include "core/error.h"

namespace tps {

std::string BenchCase::test_name() const {
  switch (kind) {
    case BenchKind::kPrefill: return fmt::format("pp{}", prompt);
    case BenchKind::kDecode: return fmt::format("tg{}", gen);
    case BenchKind::kBatched: return "batched";
  }
  return "";
}

std::string BenchCase::label() const {
  std::string s = kind == BenchKind::kBatched ? fmt::format("B{} pp{}+tg{}", batch, prompt, gen) : test_name();
  if (depth > 0) s += fmt::format(" @ d{}", depth);
  return s;
}

int64_t BenchCase::tokens() const {
  switch (kind) {
    case BenchKind::kPrefill: return prompt * batch;
    case BenchKind::kDecode: return gen;
    case BenchKind::kBatched: return gen * batch;
  }
  return 0;
}

int64_t BenchCase::step_rows() const {
  switch (kind) {
    case BenchKind::kPrefill: return prompt * batch;
    case BenchKind::kDecode: return 1;
    case BenchKind::kBatched: return batch;
  }
  return 0;
}

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      fail("{}: '{}' is not a comma-separated list of integers", flag, text);
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<BenchCase> expand_bench_plan(const BenchPlanOptions& o) {
  auto check = [](const std::vector<int64_t>& v, const char* flag, int64_t min) {
    for (int64_t x : v)
      if (x < min) fail("{} values must be at least {}, got {}", flag, min, x);
  };
  check(o.prompts, "-p", 0);
  check(o.gens, "-n", 0);
  check(o.batches, "-B", 1);
  check(o.depths, "-d", 0);
  for (int t : o.threads)
    if (t < 1) fail("-t values must be at least 1, got {}", t);
  if (o.batch_gen < 1) fail("--batch-gen must be at least 1, got {}", o.batch_gen);
  if (o.batch_prompt < 0) fail("--batch-prompt must be at least 0, got {}", o.batch_prompt);
  int64_t batch_prompt = o.batch_prompt;
  if (batch_prompt == 0) batch_prompt = !o.prompts.empty() && o.prompts[0] > 0 ? o.prompts[0] : 128;

  std::vector<BenchCase> cases;
  for (int t : o.threads) {
    for (int64_t d : o.depths) {
      for (int64_t p : o.prompts)
        if (p > 0) cases.push_back({BenchKind::kPrefill, p, 0, 1, d, t});
      for (int64_t n : o.gens)
        if (n > 0) cases.push_back({BenchKind::kDecode, 0, n, 1, d, t});
      for (int64_t b : o.batches) cases.push_back({BenchKind::kBatched, batch_prompt, o.batch_gen, b, d, t});
    }
  }
  if (cases.empty()) fail("nothing to run: every -p and -n is 0, and no -B was given");
  return cases;
}

}  // namespace tps
