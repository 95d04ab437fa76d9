#pragma once
// Times bench cases on a loaded model through the engine every command uses
// (engine/engine.h): random prompt token ids, greedy continuations, as llama-bench
// measures prefill and decode; the scheduler, paged blocks and prefix cache are those
// of `tps serve`.
#include <functional>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_plan.h"
#include "engine/speculative.h"
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
  // The measured decode steps (tg and batched): the target's forward passes and the
  // drafter's time, and the speculative counts over the timed repetitions.
  double decode_seconds = 0, forward_seconds = 0, draft_seconds = 0;
  int64_t plain_steps = 0, verify_steps = 0;           // steps without and with drafts
  double plain_step_seconds = 0, verify_step_seconds = 0;  // their forward passes' total
  int64_t verify_rows = 0;                              // rows of the steps with drafts
  SpeculativeCounts speculative;
  // The first sequence's prompt and generated tokens in the last run.
  std::vector<int32_t> prompt, generated;
  // Split over a tensor-parallel group: the ranks, and the timed repetitions' seconds in
  // collectives (sums, gathers, the step broadcasts), wall seconds and counted tokens.
  int ranks = 1;
  double collective_seconds = 0, timed_seconds = 0;
  int64_t timed_tokens = 0;
};

// How a bench case drafts: the engine's settings and, for a draft model, the model.
struct BenchSpeculation {
  SpeculativeConfig config;
  Model* draft = nullptr;
};

// A case timed without and with drafts, repetition by repetition: the samples of
// `plain` and `drafting` at one index come from the same round.
struct SpeculativePair {
  BenchMeasurement plain, drafting;
};

class BenchRunner {
 public:
  BenchRunner(Model& model, uint64_t seed);

  // One warm-up run, then `repetitions` timed runs on `threads` threads. `progress`
  // gets a short status ("rep 2/5") before each run. `breakdown`: also time the
  // measured phase (the prefill of pp tests, the decode of the others) op by op.
  BenchMeasurement run(const BenchCase& c, int repetitions, int threads,
                       const std::function<void(const std::string&)>& progress, bool breakdown = false);
  // The case on one engine that drafts, each round timing a run without drafts (the
  // request turns them off, as `"speculative": false` does) and one with, the order
  // swapped every round: on a shared machine, drift falls on both alike.
  // `breakdown` traces the runs without drafts.
  SpeculativePair run_speculative(const BenchCase& c, int repetitions, int threads,
                                  const std::function<void(const std::string&)>& progress, bool breakdown,
                                  const BenchSpeculation& speculation);
  // Decode (tg) cases continue this text greedily instead of one random token.
  void set_text_prompt(std::vector<int32_t> tokens) { text_prompt_ = std::move(tokens); }

 private:
  // Each round runs every variant (true: the requests draft) once.
  std::vector<BenchMeasurement> run_variants(const BenchCase& c, int repetitions, int threads,
                                             const std::function<void(const std::string&)>& progress,
                                             bool breakdown, const BenchSpeculation& speculation,
                                             std::initializer_list<bool> drafts);
  Model& model_;
  std::mt19937_64 rng_;
  std::vector<int32_t> text_prompt_;
};

}  // namespace tps
