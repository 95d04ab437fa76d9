#include "engine/logit_check.h"

#include "kernels/matmul.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/engine.h"
#include "engine/model_runner.h"

namespace tps {

GoldenLogits read_golden_logits(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open the reference logits", path);
  GoldenLogits g;
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    g.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    for (const auto& step : j.at("steps")) {
      g.step_ids.push_back(step.at("id").get<int32_t>());
      g.logits.push_back(step.at("logits").get<std::vector<float>>());
    }
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not a reference logits dump (prompt_ids, steps[].id, steps[].logits): {}", path, e.what());
  }
  if (g.prompt_ids.empty() || g.step_ids.empty()) fail("{}: the reference has no prompt or no steps", path);
  return g;
}

void write_golden_logits(const std::string& path, const GoldenLogits& g) {
  nlohmann::json steps = nlohmann::json::array();
  for (size_t i = 0; i < g.step_ids.size(); ++i) steps.push_back({{"id", g.step_ids[i]}, {"logits", g.logits[i]}});
  std::ofstream out(path);
  out << nlohmann::json{{"prompt_ids", g.prompt_ids}, {"steps", steps}}.dump() << "\n";
  if (!out) fail("{}: cannot write the logits", path);
}

StepComparison compare_logits(const float* ours, const std::vector<float>& reference) {
  const size_t n = reference.size();
  double mean = 0;
  for (float r : reference) mean += r;
  mean /= n;
  double var = 0, err = 0;
  StepComparison s;
  for (size_t i = 0; i < n; ++i) {
    var += (reference[i] - mean) * (reference[i] - mean);
    const double d = static_cast<double>(ours[i]) - reference[i];
    err += d * d;
    s.max_abs = std::max(s.max_abs, std::abs(d));
  }
  s.rms_rel = var > 0 ? std::sqrt(err / n) / std::sqrt(var / n) : std::sqrt(err / n);
  s.top1 = static_cast<int32_t>(std::max_element(ours, ours + n) - ours);
  s.reference_top1 = static_cast<int32_t>(std::max_element(reference.begin(), reference.end()) - reference.begin());
  return s;
}

LogitsComparison compare_with_golden(Model& model, const GoldenLogits& golden, int threads) {
  const int64_t vocab = model.config().vocab_size;
  for (const auto& l : golden.logits)
    if (static_cast<int64_t>(l.size()) != vocab)
      fail("the reference has {} logits per step, the model a vocabulary of {}", l.size(), vocab);
  if (golden.prompt_ids.empty() || golden.step_ids.empty()) fail("the reference has no prompt or no steps");
  const int64_t tokens = static_cast<int64_t>(golden.prompt_ids.size() + golden.step_ids.size());
  ModelRunner runner(model, plan_kv_geometry(model.config(), {tokens, 0, KvCache::kDefaultBlockTokens, 1}, nullptr),
                     threads);
  EngineConfig config;
  config.max_seqs = 1;
  config.max_batch_tokens = static_cast<int32_t>(tokens);  // the prompt in one forward pass
  Engine engine(runner, config);
  GenerationRequest request;
  request.prompt = golden.prompt_ids;
  request.forced = golden.step_ids;
  request.max_tokens = static_cast<int32_t>(golden.step_ids.size());
  request.ignore_eos = true;
  LogitsComparison c;
  size_t agree = 0;
  request.on_logits = [&](std::span<const float> logits) {
    if (c.steps.size() >= golden.logits.size()) return;
    StepComparison s = compare_logits(logits.data(), golden.logits[c.steps.size()]);
    c.mean_rms_rel += s.rms_rel;
    c.max_abs = std::max(c.max_abs, s.max_abs);
    agree += s.top1 == s.reference_top1;
    c.steps.push_back(s);
    c.logits.emplace_back(logits.begin(), logits.end());
  };
  engine.submit(std::move(request))->wait_finished();
  if (c.steps.size() != golden.step_ids.size())
    fail("the engine ran {} of the reference's {} steps", c.steps.size(), golden.step_ids.size());
  c.mean_rms_rel /= c.steps.size();
  c.top1_agreement = static_cast<double>(agree) / c.steps.size();
  return c;
}

LogitsTolerance default_tolerance(const Model& model) {
  LogitsTolerance t{0.002, 0.95};
  // FloatMath::kBf16 rounds float weights and their activations to bf16: BF16's tolerance.
  if (active_float_math() == FloatMath::kBf16) t = {0.02, 0.80};
  for (const GgufTensor& tensor : model.gguf().tensors()) {
    if (tensor.type == GgmlType::kF32) continue;
    if (tensor.type == GgmlType::kF16) {
      t.max_rms_rel = std::max(t.max_rms_rel, 0.005);
    } else if (tensor.type == GgmlType::kBF16) {
      t.max_rms_rel = std::max(t.max_rms_rel, 0.02);
      t.min_top1 = std::min(t.min_top1, 0.80);
    } else {
      t.max_rms_rel = std::max(t.max_rms_rel, 0.06);
      t.min_top1 = std::min(t.min_top1, 0.80);
    }
  }
  return t;
}

}  // namespace tps
