#include "server/live_stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/timer.h"

namespace tps {

using nlohmann::json;

namespace {

json ratio(double part, double whole) { return whole > 0 ? json(part / whole) : json(nullptr); }

// Nearest-rank percentiles (p50, p90, p99) in milliseconds; null without samples.
json percentiles_ms(std::vector<double> seconds) {
  json out = json::object();
  std::sort(seconds.begin(), seconds.end());
  for (auto [name, p] : {std::pair{"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}}) {
    if (seconds.empty()) {
      out[name] = nullptr;
      continue;
    }
    auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(seconds.size())));
    out[name] = seconds[std::max<size_t>(rank, 1) - 1] * 1000.0;
  }
  return out;
}

}  // namespace

LiveStats::LiveStats(double weight_bytes, double bandwidth_gbps)
    : weight_bytes_(weight_bytes), bandwidth_gbps_(bandwidth_gbps), interval_start_(now_seconds()) {}

void LiveStats::record_step(const StepInfo& step) {
  std::lock_guard lock(mutex_);
  interval_.steps++;
  interval_.rows += step.rows;
  interval_.prefill_rows += step.prefill_rows;
  interval_.emitted += step.emitted;
  interval_.sequence_seconds += step.sequences * step.seconds;
  if (step.decode_rows == step.rows) {
    interval_.decode_steps++;
    interval_.decode_seconds += step.seconds;
  }
  output_tokens_ += step.emitted;
  prefill_tokens_ += step.prefill_rows;
}

void LiveStats::add_sample(std::deque<Sample>& samples, double at, double seconds) {
  samples.push_back({at, seconds});
  if (samples.size() > kMaxLatencySamples) samples.pop_front();
}

std::vector<double> LiveStats::recent(std::deque<Sample>& samples, double since) {
  while (!samples.empty() && samples.front().at < since) samples.pop_front();
  std::vector<double> out;
  out.reserve(samples.size());
  for (const Sample& s : samples) out.push_back(s.seconds);
  return out;
}

void LiveStats::record_request(const RequestTimes& t) {
  const double at = now_seconds();
  // The gaps are worked out before taking the lock, which the engine's thread also takes.
  std::vector<double> gaps;
  gaps.reserve(t.token_times.size());
  for (size_t i = 1; i < t.token_times.size(); ++i) gaps.push_back(t.token_times[i] - t.token_times[i - 1]);
  std::lock_guard lock(mutex_);
  if (t.first_token > 0) add_sample(ttft_, at, t.first_token - t.arrived);
  for (double gap : gaps) add_sample(itl_, at, gap);
}

json LiveStats::snapshot(const EngineStats& engine, const EngineConfig& config, double now) {
  Interval iv;
  int64_t output_total = 0, prefill_total = 0;
  std::vector<double> ttft, itl;
  {
    std::lock_guard lock(mutex_);
    iv = interval_;
    interval_ = {};
    output_total = output_tokens_;
    prefill_total = prefill_tokens_;
    ttft = recent(ttft_, now - kLatencyWindowSeconds);
    itl = recent(itl_, now - kLatencyWindowSeconds);
  }
  const double seconds = std::max(now - interval_start_, 1e-9);
  interval_start_ = now;

  const SpeculativeCounts& spec = engine.speculative;
  const bool speculative = config.speculative.mode != SpecMode::kOff;
  json mbu = nullptr, decode_gbps = nullptr;
  if (iv.decode_steps > 0) {
    double gbps = weight_read_gbps(weight_bytes_, static_cast<double>(iv.decode_steps), iv.decode_seconds);
    decode_gbps = gbps;
    if (bandwidth_gbps_ > 0) mbu = gbps / bandwidth_gbps_;
  }
  json j = {
      {"sequence", ++snapshots_},
      {"time", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()},
      {"interval_s", seconds},
      {"output_tokens_per_s", static_cast<double>(iv.emitted) / seconds},
      {"output_tokens_per_s_per_seq", ratio(static_cast<double>(iv.emitted), iv.sequence_seconds)},
      {"prefill_tokens_per_s", static_cast<double>(iv.prefill_rows) / seconds},
      {"output_tokens_total", output_total},
      {"prefill_tokens_total", prefill_total},
      {"latency_window_s", kLatencyWindowSeconds},
      {"latency_requests", ttft.size()},
      {"ttft_ms", percentiles_ms(std::move(ttft))},
      {"itl_ms", percentiles_ms(std::move(itl))},
      {"running", engine.running},
      {"waiting", engine.waiting},
      {"kv_blocks_used", engine.blocks_used},
      {"kv_blocks_cached", engine.blocks_cached},
      {"kv_blocks_total", engine.blocks_used + engine.blocks_free},
      {"prefix_cache_hit_rate",
       ratio(static_cast<double>(engine.prefix_hit_tokens - previous_.prefix_hit_tokens),
             static_cast<double>(engine.prefix_lookup_tokens - previous_.prefix_lookup_tokens))},
      {"steps", iv.steps},
      {"batch_tokens", config.max_batch_tokens},
      {"batch_utilization",
       ratio(static_cast<double>(iv.rows), static_cast<double>(iv.steps) * config.max_batch_tokens)},
      {"decode_bandwidth_gbps", decode_gbps},
      {"profile_bandwidth_gbps", bandwidth_gbps_ > 0 ? json(bandwidth_gbps_) : json(nullptr)},
      {"mbu", mbu},
      {"speculative", speculative},
      {"spec_acceptance_rate",
       speculative ? ratio(static_cast<double>(spec.accepted_tokens - previous_.speculative.accepted_tokens),
                           static_cast<double>(spec.drafted_tokens - previous_.speculative.drafted_tokens))
                   : json(nullptr)},
  };
  previous_ = engine;
  return j;
}

}  // namespace tps
