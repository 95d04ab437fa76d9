#pragma once
// The numbers /metrics exposes: request and token counters, latency histograms,
// per-step batch sizes, engine gauges, and decode bandwidth utilization against a
// probed hardware profile when one was given. What it records also feeds the live
// page's numbers (live()).
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "engine/engine.h"
#include "server/live_stats.h"
#include "server/prometheus.h"

namespace tps {

struct RequestRecord {
  std::string outcome;  // stop, length, cancelled, timeout
  int32_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  RequestTimes times;
};

class ServerMetrics {
 public:
  // weight_bytes: bytes read per forward pass; bandwidth_gbps: the profile's read
  // bandwidth for them (0: no profile, no utilization gauge).
  ServerMetrics(double weight_bytes, double bandwidth_gbps);
  void record_request(const RequestRecord& r);
  void record_error(int status);
  void record_step(const StepInfo& step);
  std::string render(const EngineStats& engine) const;
  LiveStats& live() { return live_; }

 private:
  mutable std::mutex mutex_;
  double weight_bytes_, bandwidth_gbps_;
  std::map<std::string, uint64_t> requests_by_outcome_;
  std::map<int, uint64_t> errors_by_status_;
  uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0;
  PromHistogram ttft_, itl_, e2e_, queue_, batch_rows_, step_seconds_;
  double decode_seconds_ = 0;  // over steps made only of decode rows
  uint64_t decode_steps_ = 0;
  LiveStats live_;
};

}  // namespace tps
