#pragma once
// Times bench cases on a loaded model, in process: random token ids go straight into
// Model::forward (no tokenizer, no sampler), as llama-bench does.
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_plan.h"
#include "core/thread_pool.h"
#include "model/kv_cache.h"
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

  // One warm-up run, then `repetitions` timed runs. `progress` gets a short status
  // ("rep 2/5") before each run. `breakdown`: also time the measured phase (the prefill
  // of pp tests, the decode of the others) op by op.
  BenchMeasurement run(const BenchCase& c, int repetitions, ThreadPool& pool,
                       const std::function<void(const std::string&)>& progress, bool breakdown = false);

 private:
  struct Timing {
    double prefill_seconds = 0;
    double decode_seconds = 0;
  };
  // `trace` (nullptr: none) gets the phase timings of the measured part.
  Timing run_once(const BenchCase& c, int64_t gen, ThreadPool& pool, ForwardTrace* trace = nullptr);
  void ensure_cache(const BenchCase& c);
  void fill_depth(const BenchCase& c, ThreadPool& pool);
  // Prefill positions [from, to) of every sequence in chunks of kPrefillChunkRows rows.
  void prefill(int64_t n_seq, int64_t from, int64_t to, bool want_logits, ThreadPool& pool);
  ForwardBatch& start_batch(int64_t n_seq);
  int32_t random_token();

  Model& model_;
  std::mt19937_64 rng_;
  std::unique_ptr<KvCache> kv_;
  int64_t blocks_per_seq_ = 0;
  std::vector<int32_t> block_table_;
  ForwardBatch batch_;
  std::vector<float> logits_;
};

}  // namespace tps
