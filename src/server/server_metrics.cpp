#include "server/server_metrics.h"

#include <fmt/format.h>

namespace tps {

ServerMetrics::ServerMetrics(double weight_bytes, double bandwidth_gbps)
    : weight_bytes_(weight_bytes),
      bandwidth_gbps_(bandwidth_gbps),
      ttft_(exponential_buckets(0.005, 2, 14)),
      itl_(exponential_buckets(0.001, 2, 14)),
      e2e_(exponential_buckets(0.01, 2, 14)),
      queue_(exponential_buckets(0.001, 2, 16)),
      batch_rows_(exponential_buckets(1, 2, 10)),
      step_seconds_(exponential_buckets(0.0005, 2, 14)),
      live_(weight_bytes, bandwidth_gbps) {}

void ServerMetrics::record_request(const RequestRecord& r) {
  live_.record_request(r.times);
  std::lock_guard lock(mutex_);
  requests_by_outcome_[r.outcome]++;
  prompt_tokens_ += r.prompt_tokens;
  cached_tokens_ += r.cached_tokens;
  generated_tokens_ += r.completion_tokens;
  const RequestTimes& t = r.times;
  if (t.scheduled > 0) queue_.observe(t.scheduled - t.arrived);
  if (t.first_token > 0) ttft_.observe(t.first_token - t.arrived);
  for (size_t i = 1; i < t.token_times.size(); ++i) itl_.observe(t.token_times[i] - t.token_times[i - 1]);
  if (t.finished > 0) e2e_.observe(t.finished - t.arrived);
}

void ServerMetrics::record_error(int status) {
  std::lock_guard lock(mutex_);
  errors_by_status_[status]++;
}

void ServerMetrics::record_step(const StepInfo& step) {
  live_.record_step(step);
  std::lock_guard lock(mutex_);
  batch_rows_.observe(step.rows);
  step_seconds_.observe(step.seconds);
  if (step.decode_rows == step.rows) {
    decode_seconds_ += step.seconds;
    decode_steps_++;
  }
}

std::string ServerMetrics::render(const EngineStats& engine) const {
  std::lock_guard lock(mutex_);
  std::string out;
  std::vector<std::string> outcomes;
  std::vector<double> counts;
  uint64_t total = 0;
  for (const auto& [k, v] : requests_by_outcome_) {
    outcomes.push_back(k);
    counts.push_back(static_cast<double>(v));
    total += v;
  }
  prom_counter(out, "tps_requests_total", "Generation requests finished.", static_cast<double>(total));
  prom_labelled(out, "tps_requests_finished_total", "counter", "Generation requests finished, by finish reason.",
                "reason", outcomes, counts);
  std::vector<std::string> statuses;
  std::vector<double> errors;
  for (const auto& [k, v] : errors_by_status_) {
    statuses.push_back(std::to_string(k));
    errors.push_back(static_cast<double>(v));
  }
  prom_labelled(out, "tps_request_errors_total", "counter", "Requests refused with an HTTP error, by status.",
                "status", statuses, errors);
  prom_counter(out, "tps_prompt_tokens_total", "Prompt tokens of finished requests.", static_cast<double>(prompt_tokens_));
  prom_counter(out, "tps_prompt_cached_tokens_total", "Prompt tokens served from the prefix cache.",
               static_cast<double>(cached_tokens_));
  prom_counter(out, "tps_generated_tokens_total", "Tokens generated for finished requests.",
               static_cast<double>(generated_tokens_));
  ttft_.render(out, "tps_ttft_seconds", "Time from arrival to the first generated token.");
  itl_.render(out, "tps_itl_seconds", "Time between consecutive generated tokens of a request.");
  e2e_.render(out, "tps_e2e_seconds", "Time from arrival to the end of a request.");
  queue_.render(out, "tps_queue_seconds", "Time from arrival to the first scheduled step.");
  batch_rows_.render(out, "tps_batch_size", "Token rows per forward pass (decode tokens plus prefill chunks).");
  step_seconds_.render(out, "tps_step_seconds", "Duration of one scheduler step.");
  prom_gauge(out, "tps_requests_running", "Sequences in the running batch.", engine.running);
  prom_gauge(out, "tps_requests_waiting", "Requests waiting for admission.", engine.waiting);
  prom_gauge(out, "tps_kv_blocks_used", "KV blocks referenced by sequences.", engine.blocks_used);
  prom_gauge(out, "tps_kv_blocks_free", "KV blocks free or holding evictable cached prefixes.", engine.blocks_free);
  prom_gauge(out, "tps_kv_blocks_cached", "KV blocks registered in the prefix cache.", engine.blocks_cached);
  double hit_rate = engine.prefix_lookup_tokens > 0
                        ? static_cast<double>(engine.prefix_hit_tokens) / static_cast<double>(engine.prefix_lookup_tokens)
                        : 0.0;
  prom_gauge(out, "tps_prefix_cache_hit_rate", "Prompt tokens found in the prefix cache / prompt tokens looked up.",
             hit_rate);
  prom_counter(out, "tps_prefix_cache_hit_tokens_total", "Prompt tokens found in the prefix cache.",
               static_cast<double>(engine.prefix_hit_tokens));
  prom_counter(out, "tps_preemptions_total", "Sequences preempted (blocks freed, recomputed later).",
               static_cast<double>(engine.preemptions));
  prom_counter(out, "tps_steps_total", "Scheduler steps (forward passes).", static_cast<double>(engine.steps));
  // Speculative decoding, as vLLM names its counters (docs/serve.md has the terms).
  const SpeculativeCounts& spec = engine.speculative;
  prom_counter(out, "tps_spec_decode_num_drafts_total", "Verify steps: a sequence's last token with at least one draft.",
               static_cast<double>(spec.verify_steps));
  prom_counter(out, "tps_spec_decode_num_draft_tokens_total", "Draft tokens verified.",
               static_cast<double>(spec.drafted_tokens));
  prom_counter(out, "tps_spec_decode_num_accepted_tokens_total", "Draft tokens accepted.",
               static_cast<double>(spec.accepted_tokens));
  std::vector<std::string> positions;
  std::vector<double> accepted_at;
  for (size_t i = 0; i < spec.accepted_at.size(); ++i) {
    positions.push_back(std::to_string(i));
    accepted_at.push_back(static_cast<double>(spec.accepted_at[i]));
  }
  prom_labelled(out, "tps_spec_decode_num_accepted_tokens_per_pos_total", "counter",
                "Draft tokens accepted, by position in the draft (0: the first).", "position", positions, accepted_at);
  if (bandwidth_gbps_ > 0 && decode_steps_ > 0) {
    double achieved = weight_read_gbps(weight_bytes_, static_cast<double>(decode_steps_), decode_seconds_);
    prom_gauge(out, "tps_decode_bandwidth_gbps", "Weight bytes read per second in decode-only steps.", achieved);
    prom_gauge(out, "tps_decode_bandwidth_utilization",
               "Decode weight-read bandwidth over the probed profile's read bandwidth.", achieved / bandwidth_gbps_);
  }
  return out;
}

}  // namespace tps
