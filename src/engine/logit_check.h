#pragma once
// Teacher-forced comparison of a model's logits with a reference dump (llama.cpp's, in
// the fixtures' golden/llama.cpp/*.json format), through the engine every command uses:
// the prompt in one batched prefill, then each reference token step by step (forced
// instead of sampled), so both forward paths are checked.
#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace tps {

struct GoldenLogits {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> step_ids;             // the token chosen at each step
  std::vector<std::vector<float>> logits;    // the reference logits at each step
};

// Throws tps::Error naming the file and field when it is not such a dump.
GoldenLogits read_golden_logits(const std::string& path);
// Writes `g` in the same format: this run's logits as a reference for another run (a
// model split over ranks against the whole one, one build against another).
void write_golden_logits(const std::string& path, const GoldenLogits& g);

struct StepComparison {
  double rms_rel = 0;  // RMS(ours - reference) / std(reference)
  double max_abs = 0;
  int32_t top1 = -1, reference_top1 = -1;
};

struct LogitsComparison {
  std::vector<StepComparison> steps;
  double mean_rms_rel = 0;
  double max_abs = 0;
  double top1_agreement = 0;  // fraction of steps whose argmax matches
  std::vector<std::vector<float>> logits;  // ours, step by step
};

LogitsComparison compare_with_golden(Model& model, const GoldenLogits& golden, int threads);
StepComparison compare_logits(const float* ours, const std::vector<float>& reference);

// The fixtures' tolerances for the model's most lossy weight type: F32 0.002 / 95 %,
// F16 0.005 / 95 %, BF16 0.02 / 80 %, quantized 0.06 / 80 %.
struct LogitsTolerance {
  double max_rms_rel = 0;
  double min_top1 = 0;
};
LogitsTolerance default_tolerance(const Model& model);

}  // namespace tps
