#pragma once
// Measured runs the roofline reads (--measured, --calibrate): the result JSON of
// `tps bench` and `tps load`, schema "tps.bench/1" in docs/bench-format.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roofline/probe.h"
#include "roofline/roofline_model.h"

namespace tps {

struct BenchRow {
  std::string test;          // "pp512", "tg128", "batched", "load"
  std::string kind;          // "pp", "tg", "batched" or "load" (from test)
  std::string model_label;   // the preset name or file
  RooflineModel model;
  std::string weight_type;   // a weight format name (number_formats.h)
  double bits_per_weight = 0;  // weight_bytes * 8 / params when both are given, else the format's
  int64_t weight_bytes = 0;
  int64_t params = 0;
  std::string kv_type = "f16";
  int threads = 0;
  int64_t batch = 1;
  int64_t prompt_tokens = 0;
  int64_t gen_tokens = 0;
  int64_t depth = 0;
  double tokens_per_s = 0;
  double std = 0;
  double bytes_per_token = 0;  // 0: not reported
};

struct BenchResults {
  std::vector<BenchRow> rows;
  std::optional<HardwareProfile> profile;  // the probe profile embedded by `tps bench`, if any
};

// Throws tps::Error naming the file, the row and the field.
BenchResults parse_bench_results(const nlohmann::json& j, const std::string& where);
BenchResults load_bench_results(const std::string& path);

}  // namespace tps
