// Per-token cost of the sampler over a 32000-entry vocabulary (TinyLlama's): it runs on
// the engine thread between forward passes, so every microsecond here is added to the
// inter-token latency of every running request.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "sampling/sampler.h"

namespace {

using tps::Sampler;
using tps::SamplingParams;

std::vector<float> random_logits(size_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> logits(n);
  for (float& l : logits) l = dist(rng);
  return logits;
}

void run(benchmark::State& state, const SamplingParams& params) {
  const std::vector<float> logits = random_logits(32000);
  std::vector<float> scratch;
  const std::vector<int32_t> history(128, 7);
  Sampler sampler(params);
  for (auto _ : state) {
    scratch = logits;
    benchmark::DoNotOptimize(sampler.sample(scratch, history));
  }
}

// OpenAI's defaults, which the server uses: temperature 1, no truncation.
void BM_SampleOpenAiDefaults(benchmark::State& state) { run(state, SamplingParams::untruncated(1.0f)); }
void BM_SampleGreedy(benchmark::State& state) { run(state, SamplingParams::untruncated(0.0f)); }
// llama.cpp's default chain: top-k 40, top-p 0.95, min-p 0.05, temperature 0.8.
void BM_SampleLlamaDefaults(benchmark::State& state) { run(state, SamplingParams{}); }
void BM_SampleTopPOnly(benchmark::State& state) {
  SamplingParams p = SamplingParams::untruncated(1.0f);
  p.top_p = 0.9f;
  run(state, p);
}
void BM_SampleMinPOnly(benchmark::State& state) {
  SamplingParams p = SamplingParams::untruncated(1.0f);
  p.min_p = 0.05f;
  run(state, p);
}

BENCHMARK(BM_SampleOpenAiDefaults)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleGreedy)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleLlamaDefaults)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleTopPOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleMinPOnly)->Unit(benchmark::kMicrosecond);

}  // namespace
