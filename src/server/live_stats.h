#pragma once
// The numbers of serve's live page (GET /v1/stats/stream): rates over the interval
// since the previous snapshot (about a second), TTFT and ITL percentiles over the
// requests finished in a recent window, and the engine's gauges. docs/serve.md defines
// every field of a snapshot.
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"

namespace tps {

// Weight bytes read per second by `steps` forward passes taking `seconds` (GB/s): every
// step reads all weights once, whatever its batch size.
inline double weight_read_gbps(double weight_bytes, double steps, double seconds) {
  return weight_bytes * steps / seconds / 1e9;
}

class LiveStats {
 public:
  static constexpr double kLatencyWindowSeconds = 10;
  static constexpr size_t kMaxLatencySamples = 16384;  // of each kind; the oldest leave first

  // weight_bytes: bytes read per forward pass; bandwidth_gbps: the profile's read
  // bandwidth for them (0: no profile, no MBU).
  LiveStats(double weight_bytes, double bandwidth_gbps);
  // Both called by whoever records them (the engine's thread, request handlers); each
  // holds the lock for a few additions.
  void record_step(const StepInfo& step);
  void record_request(const RequestTimes& times);
  // Ends the current interval at `now` (now_seconds()) and describes it. One caller.
  nlohmann::json snapshot(const EngineStats& engine, const EngineConfig& config, double now);

 private:
  struct Interval {
    int64_t steps = 0, rows = 0, prefill_rows = 0, emitted = 0;
    double sequence_seconds = 0;  // sum over steps of sequences x step seconds
    int64_t decode_steps = 0;     // steps made only of decode rows
    double decode_seconds = 0;
  };
  struct Sample {
    double at, seconds;
  };
  static void add_sample(std::deque<Sample>& samples, double at, double seconds);
  // Drops the samples recorded before `since`; returns the values of the others.
  static std::vector<double> recent(std::deque<Sample>& samples, double since);

  const double weight_bytes_, bandwidth_gbps_;
  std::mutex mutex_;  // guards the interval, the totals and the samples
  Interval interval_;
  int64_t output_tokens_ = 0, prefill_tokens_ = 0;  // since the start
  std::deque<Sample> ttft_, itl_;
  // The snapshot's side: where the previous interval ended, and how many came before.
  double interval_start_;
  EngineStats previous_;
  int64_t snapshots_ = 0;
};

}  // namespace tps
