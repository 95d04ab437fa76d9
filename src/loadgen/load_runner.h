#pragma once
// Drives the load: closed loop (a fixed number of clients, each sending its next request
// when the last one ends) or open loop (requests sent at Poisson or gamma arrival times),
// for each value of a sweep, with a warm-up that is left out of the results.
#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/openai_client.h"
#include "loadgen/request_metrics.h"
#include "loadgen/token_counter.h"

namespace tps::loadgen {

struct RunSettings {
  Endpoint endpoint;
  std::string mode = "concurrency";  // or "rate" (requests per second; inf sends all at once)
  std::vector<double> values{1};
  double burstiness = 1.0;           // gamma shape of inter-arrival times; 1 is Poisson
  int64_t requests = 0;              // per sweep value; 0 when a duration is given
  double duration_s = 0;             // per sweep value
  int64_t warmup = 0;                // requests sent and discarded before each sweep value
  Slo slo;
  uint64_t seed = 1;
  bool progress = true;              // live progress line on `progress_out`
  // When set (Ctrl-C), no new request is sent; in-flight ones finish and are kept.
  const std::atomic<bool>* cancel = nullptr;
};

struct SweepPoint {
  std::string mode;
  double value = 0;
  double started_unix = 0;           // wall clock of the measured phase's start
  double origin = 0;                 // now_seconds() at the measured phase's start
  std::vector<RequestRecord> records;  // times in seconds since the measured phase's start
  double ramp_end = 0;
  int64_t warmup_failed = 0;
  nlohmann::json metrics_before, metrics_after;  // parsed /metrics, null when absent
  SweepSummary summary;
};

struct RunResult {
  std::vector<SweepPoint> points;
  std::string stopped;  // why the run ended early; empty when it ran to the end
};

// Runs every sweep value in turn. Prompts are taken in order and never reused across sweep
// values while they last (so a prefix cache cannot serve one value from another's prompts).
// `output_counter` recounts outputs the server sent no usage for; it may be null.
RunResult run_load(const RunSettings& settings, const std::vector<Prompt>& prompts,
                   TokenCounter* output_counter, std::ostream& progress_out);

// How many prompts a run needs: every warm-up and measured request of every sweep value,
// or `pool` per value when the run is bounded by duration.
size_t prompts_needed(const RunSettings& settings, size_t pool);

}  // namespace tps::loadgen
