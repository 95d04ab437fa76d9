#pragma once
// Measured runs the roofline reads (--measured, --calibrate): the result JSON of
// `tps bench` (schema "tps.bench/1", docs/bench-format.md) and of `tps load -o`.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roofline/probe.h"
#include "roofline/roofline_model.h"
#include "roofline/speculative_run.h"

namespace tps {

struct MeasuredRun {
  std::string test;          // "pp512", "tg128", "batched", "load"
  std::string kind;          // "pp", "tg", "batched" or "load" (from test)
  std::string model_label;   // the preset name or file
  RooflineModel model;
  std::string weight_type;   // a weight format name (number_formats.h)
  double bits_per_weight = 0;  // step_weight_bytes', else weight_bytes * 8 / params when both are given, else the format's
  int64_t weight_bytes = 0;
  int64_t params = 0;
  std::string kv_type = "f16";
  int threads = 0;
  std::string compute_path;    // the kernels' (tps bench rows); empty: not known
  int64_t batch = 1;
  int64_t prompt_tokens = 0;
  int64_t gen_tokens = 0;
  int64_t depth = 0;
  double tokens_per_s = 0;
  double std = 0;
  double bytes_per_token = 0;  // 0: not reported
  std::optional<SpeculativeRun> speculative;  // a tps bench row run with a drafter
};

struct BenchResults {
  std::vector<MeasuredRun> rows;
  std::optional<HardwareProfile> profile;  // the probe profile embedded by `tps bench`, if any
};

// Throws tps::Error naming the file, the row and the field.
BenchResults parse_bench_results(const nlohmann::json& j, const std::string& where);
BenchResults load_bench_results(const std::string& path);

// `tps load -o` results (format "tps-load-results/1") name no model shape: each sweep
// point becomes a "load" row copied from `model_row` (model, weight and KV type, threads),
// with batch = concurrency (closed loop) or request rate x mean E2E (Little's law).
bool is_load_results(const nlohmann::json& j);
BenchResults bench_results_from_load(const nlohmann::json& j, const std::string& where, const MeasuredRun& model_row);
nlohmann::json read_results_json(const std::string& path);

}  // namespace tps
