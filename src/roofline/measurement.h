#pragma once
// Measured runs against the roofline: predicted tokens/s of a bench row, its bandwidth and
// compute utilization (MBU, MFU), the bound that limited it, and the efficiency fractions
// fitted to a set of runs (--calibrate).
#include <optional>
#include <string>
#include <vector>

#include "roofline/bench_results.h"
#include "roofline/estimator.h"

namespace tps {

// The device rows ran on: a probe profile (roofs depend on the row's thread count) or a
// database entry.
struct HardwareSource {
  std::optional<HardwareProfile> profile;
  std::optional<Hardware> fixed;
  // Throws tps::Error when neither is set. `kernel_path`: hardware_from_profile's.
  Hardware for_threads(int threads, const std::string& kernel_path = "") const;
  Hardware for_row(const MeasuredRun& row) const { return for_threads(row.threads, row.compute_path); }
};

Estimator estimator_for_row(const MeasuredRun& row, const Hardware& hw, const Efficiency& eff);
double predict_tokens_per_s(const MeasuredRun& row, const HardwareSource& hw, const Efficiency& eff);

// Bandwidth and peak compute only: no efficiency fractions, no fixed costs.
Efficiency roofs_only();

struct RowAnalysis {
  double predicted_tokens_per_s = 0;
  double bytes_per_token = 0;    // of the row's work, as the roofline counts it
  double flops_per_token = 0;
  double achieved_bytes_per_s = 0;
  double achieved_flops_per_s = 0;
  double peak_bytes_per_s = 0;
  double peak_flops_per_s = 0;   // on the weights' compute path
  std::string compute_path;
  double mbu = 0;                // model bandwidth utilization
  double mfu = 0;                // model FLOPs utilization
  std::string bound;             // "memory", "compute" or "overhead" (under 10 % of both roofs)
  std::string predicted_bound;   // what the roofline expects to dominate
};
RowAnalysis analyze_row(const MeasuredRun& row, const HardwareSource& hw, const Efficiency& eff);

// tps bench's figures of a row: the analysis with roofs_only(), whose prediction is the
// roofline's bound.
RowAnalysis bound_of_row(const MeasuredRun& row, const HardwareSource& hw);

// Fits the bandwidth fraction, the per-layer latency and a compute fraction per compute
// path to minimize the squared log error of predicted against measured tokens/s.
Efficiency calibrate(const std::vector<MeasuredRun>& rows, const HardwareSource& hw, const Efficiency& start);

}  // namespace tps
