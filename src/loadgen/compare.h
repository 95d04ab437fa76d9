#pragma once
// `tps compare`: runs side by side, the change of each metric against the first run, and
// whether that change is larger than the run-to-run noise the raw timings show.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tps::loadgen {

struct NoiseTest {
  double difference = 0;  // b - a
  double low = 0, high = 0;  // 95% interval of the difference
  bool significant() const { return low > 0 || high < 0; }
};

// Mean of b minus mean of a with a Welch (normal) 95% interval from their standard errors.
NoiseTest compare_means(const std::vector<double>& a, const std::vector<double>& b);

// Percentile q of b minus that of a, with a seeded bootstrap 95% interval.
NoiseTest compare_percentiles(const std::vector<double>& a, const std::vector<double>& b, double q,
                              uint64_t seed, int resamples = 400);

// The table for results documents `runs` (as `tps load -o` writes them), named `names`.
// Sweep values are matched by mode and value; ones missing from a run are shown as such.
std::string compare_results(const std::vector<nlohmann::json>& runs, const std::vector<std::string>& names);

}  // namespace tps::loadgen
