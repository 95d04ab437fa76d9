#pragma once
// What `tps load` prints at the end, and its per-request CSV.
#include <string>
#include <vector>

#include "loadgen/load_runner.h"

namespace tps::loadgen {

// One block per sweep value: counts, window, throughput, goodput, latency percentiles.
std::string format_summary(const SweepSummary& s, const Slo& slo);

// One line per sweep value, for reading a sweep at a glance.
std::string format_overview(const std::vector<SweepSummary>& summaries);

// One row per request: sweep value, timings, counts, error.
std::string per_request_csv(const std::vector<SweepPoint>& points);

}  // namespace tps::loadgen
