#pragma once
// `tps bench` results: one row per measured phase, with the roofline figures, written as
// a Markdown table, CSV, or JSON / JSON Lines (schema "tps.bench/1", which
// `tps roofline --measured` reads; docs/bench-format.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_runner.h"
#include "model/model_config.h"
#include "roofline/measurement.h"

namespace tps {

struct BenchModelInfo {
  std::string preset;       // when synthesized from a preset
  float output_skew = 1.0f; // the synthesized model's (tps synth --output-skew)
  std::string file;         // the GGUF measured
  std::string weight_type;  // "q4_0", "q4_k_m", ...
  int64_t weight_bytes = 0; // all tensor data
  int64_t step_weight_bytes = 0;  // the tensors a forward pass reads (not the embedding table unless tied)
  int64_t params = 0;
  ModelConfig config;

  std::string label() const;  // the preset (and its skew), else the file name
};

struct PhaseResult {
  Spread tokens_per_s;
  // The roofline's analysis against the roofs alone (roofs_only()): its prediction is the
  // bound, with bytes and ops per token, MBU and MFU; the same figures `tps roofline
  // --measured` gives for the JSON row.
  RowAnalysis figures;
  Spread stream_gbps;      // the in-run read baseline (decode phases; else empty)
  double mbu_stream = 0;   // achieved bytes/s over stream_gbps.mean
};

// Where the measured phase's time went (`tps bench --breakdown`), per token of it.
struct BreakdownStep {
  std::string step;         // a forward-pass step (model/forward_trace.h), or "other": the bench loop
  double seconds = 0;       // per token
  double share = 0;         // of the measured wall time
  double wait_share = 0;    // of the measured wall time: the calling thread waiting for the others
  double weight_bytes = 0;  // weights streamed, per token
  double gbps = 0;          // weight bytes / time (0: no weights)
};

struct Breakdown {
  double seconds_per_token = 0;
  std::vector<BreakdownStep> steps;
};

// A speculative row against the same case without speculation, in the same run.
struct SpeculativeFigures {
  std::string drafter;          // "ngram" or the draft model's file name
  SpeculativeCounts counts;     // over the timed repetitions
  double mean_draft_length = 0; // drafted tokens per verify step
  double draft_share = 0;       // of the decode time: drafting
  double verify_share = 0;      // of the decode time: the target's passes of steps with drafts
  double verify_cost_ratio = 0; // a verify step's forward pass over a one-token step's (of the plain run)
  // Each round's tokens/s over the plain run's of the same round (bench runs them in
  // turns), and their median.
  std::vector<double> speedup_rounds;
  double speedup = 0;
  // n-gram drafting: the most lookup could give on the text generated (its first
  // sequence's, in the last run).
  std::optional<NgramCeiling> ngram_ceiling;
};
SpeculativeFigures speculative_figures(const BenchMeasurement& spec, const BenchMeasurement& plain,
                                       const std::string& drafter, const SpeculativeConfig& config);

// A row run split over a tensor-parallel group: the leader's time in collectives.
struct CollectiveFigures {
  int ranks = 1;
  double seconds_per_token = 0;  // over the tokens the row counts (pp: prompt; else generated)
  double share = 0;              // of the timed repetitions' wall time
};

struct BenchRow {
  std::string test;  // "pp512", "tg128", "batched"
  BenchCase bench_case;
  std::string compute_path;            // the kernels' (kernels/matmul.h compute_path)
  PhaseResult result;                  // pp: the prefill; tg and batched: the decode
  std::optional<PhaseResult> prefill;  // batched: the B prompts' prefill
  std::optional<Breakdown> breakdown;  // of `result`
  std::optional<SpeculativeFigures> speculative;
  std::optional<CollectiveFigures> collective;
};

// A phase of a bench case as the roofline sees a measured run; `ranks`: a tensor-parallel
// group's size (the roofs are those of every rank's threads together).
MeasuredRun measured_run(const BenchCase& c, const BenchModelInfo& model, int ranks, const std::string& compute_path,
                         double tokens_per_s);
BenchRow bench_row(const BenchMeasurement& m, const BenchModelInfo& model, const HardwareSource& hw,
                   const std::string& compute_path);

enum class BenchFormat { kMarkdown, kCsv, kJson, kJsonl };
std::optional<BenchFormat> parse_bench_format(const std::string& name);

struct BenchReport {
  BenchModelInfo model;
  std::vector<BenchRow> rows;
  int repetitions = 0;
  std::string created;                    // UTC, ISO 8601
  std::string roofs_source;               // where bandwidth and peaks came from
  std::string kernels;                    // the matmul kernels' instruction set (isa_name)
  std::optional<nlohmann::json> profile;  // the hardware profile, embedded in JSON output
};

nlohmann::json bench_row_json(const BenchRow& row, const BenchReport& report);
nlohmann::json bench_report_json(const BenchReport& report);
std::string format_bench_report(const BenchReport& report, BenchFormat format);

}  // namespace tps
