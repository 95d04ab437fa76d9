#pragma once
// Times bench cases on a loaded model through the engine every command uses
// (engine/engine.h): random prompt token ids, greedy continuations, as llama-bench
// measures prefill and decode; the scheduler, paged blocks and prefix cache are those
// of `tps serve`.
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_plan.h"
#include "model/model.h"

namespace tps {

struct Spread {
  std::vector<double> samples;  // tokens/s per repetition
  double mean = 0;
  double std = 0;  // sample standard deviation; 0 for one repetition
};
Spread spread_of(std::vector<double> samples);

struct BenchMeasurement {
  BenchCase bench_case;
  Spread tokens_per_s;          // pp: prompt tokens/s; tg and batched: generated tokens/s
  Spread prefill_tokens_per_s;  // batched only: the B prompts' prefill
  // Decode and batched: GB/s of a plain streaming read of the model's weights, timed
  // before each repetition and after the last, so decode has a baseline measured under
  // the same conditions (on a shared machine, bandwidth moves minute to minute).
  Spread stream_gbps;
  // With --breakdown: the timed repetitions' measured phase, op by op.
  std::optional<ForwardTrace> breakdown;
};

class BenchRunner {
 public:
  BenchRunner(Model& model, uint64_t seed);

  // One warm-up run, then `repetitions` timed runs on `threads` threads. `progress`
  // gets a short status ("rep 2/5") before each run. `breakdown`: also time the
  // measured phase (the prefill of pp tests, the decode of the others) op by op.
  BenchMeasurement run(const BenchCase& c, int repetitions, int threads,
                       const std::function<void(const std::string&)>& progress, bool breakdown = false);

 private:
  Model& model_;
  std::mt19937_64 rng_;
};

}  // namespace tps
