#pragma once
// The exact metric definitions of docs/metrics.md, computed from raw request records.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/request_record.h"

namespace tps::loadgen {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct RequestMetrics {
  double ttft = kNaN;  // send -> first event carrying generated text
  double e2e = kNaN;   // send -> last event carrying generated text
  double tpot = kNaN;  // (e2e - ttft) / (output tokens - 1); NaN with fewer than 2 tokens
  std::vector<double> itl;  // one entry per token after the first event's
};

// Metrics of a successful request; ITL spreads each event's gap evenly over its tokens.
RequestMetrics compute_request_metrics(const RequestRecord& record);

// Percentile with linear interpolation between closest ranks (numpy's default);
// `sorted` must be ascending and non-empty, q in [0, 100].
double percentile_sorted(const std::vector<double>& sorted, double q);

struct Distribution {
  int64_t count = 0;
  double mean = kNaN, stddev = kNaN, min = kNaN, p50 = kNaN, p90 = kNaN, p99 = kNaN, max = kNaN;
};
Distribution describe(std::vector<double> values);  // NaNs are left out
nlohmann::json to_json(const Distribution& d);

// Service level objectives in seconds; a request meets them when it meets every one given.
struct Slo {
  std::optional<double> ttft, tpot, e2e;
  bool empty() const { return !ttft && !tpot && !e2e; }
};
Slo parse_slo(const std::string& spec);  // "ttft=500ms,tpot=50ms,e2e=2s"
bool meets_slo(const RequestMetrics& m, const Slo& slo);
nlohmann::json to_json(const Slo& slo);

// The stretch of time throughput is measured over: from the end of ramp-up (every
// client has sent its first request) to the start of drain (the last request is sent).
struct MeasureWindow {
  double start = 0, end = 0;
  std::string rule;
};
// `ramp_end` is when the last client sent its first request (closed loop) or the first
// send (open loop). Falls back to the whole run when the steady window holds < 2 completions.
MeasureWindow steady_window(const std::vector<RequestRecord>& records, double ramp_end);

struct SweepSummary {
  std::string mode;  // "concurrency" or "rate"
  double value = 0;
  int64_t requests_ok = 0, requests_failed = 0, short_outputs = 0;
  double duration = 0;  // first send to last response end
  MeasureWindow window;
  int64_t completed_in_window = 0;
  double request_per_s = 0, output_tok_per_s = 0, total_tok_per_s = 0;
  double goodput = kNaN;  // requests/s meeting every SLO; NaN when no SLO was given
  int64_t input_tokens = 0, output_tokens = 0;
  std::string output_tokens_source, event_tokens_source;
  Distribution ttft, tpot, itl, e2e;  // seconds
  std::vector<std::string> errors;    // distinct error messages with counts
};

SweepSummary summarize(const std::string& mode, double value,
                       const std::vector<RequestRecord>& records, double ramp_end,
                       const Slo& slo);
nlohmann::json to_json(const SweepSummary& s);

}  // namespace tps::loadgen
