#include "loadgen/results_file.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "loadgen/prometheus_text.h"

namespace tps::loadgen {

nlohmann::json record_to_json(const RequestRecord& r) {
  nlohmann::json times = nlohmann::json::array(), tokens = nlohmann::json::array();
  for (const auto& a : r.arrivals) {
    times.push_back(a.time);
    tokens.push_back(a.tokens);
  }
  return {{"id", r.id},
          {"ok", r.ok},
          {"error", r.error},
          {"http_status", r.http_status},
          {"send_s", r.send_time},
          {"end_s", r.end_time},
          {"token_times_s", std::move(times)},
          {"token_counts", std::move(tokens)},
          {"input_tokens", r.input_tokens},
          {"prompt_tokens", r.prompt_tokens},
          {"requested_output_tokens", r.requested_output_tokens},
          {"output_tokens", r.output_tokens},
          {"output_tokens_source", r.output_tokens_source},
          {"event_tokens_source", r.event_tokens_source},
          {"finish_reason", r.finish_reason}};
}

RequestRecord record_from_json(const nlohmann::json& j) {
  RequestRecord r;
  r.id = j.value("id", int64_t(0));
  r.ok = j.value("ok", false);
  r.error = j.value("error", std::string());
  r.http_status = j.value("http_status", 0);
  r.send_time = j.value("send_s", 0.0);
  r.end_time = j.value("end_s", 0.0);
  const auto& times = j.at("token_times_s");
  const auto& tokens = j.at("token_counts");
  if (!times.is_array() || !tokens.is_array() || times.size() != tokens.size())
    fail("request {}: token_times_s and token_counts must be arrays of one length", r.id);
  for (size_t i = 0; i < times.size(); ++i) r.arrivals.push_back({times[i].get<double>(), tokens[i].get<int64_t>()});
  r.input_tokens = j.value("input_tokens", int64_t(-1));
  r.prompt_tokens = j.value("prompt_tokens", int64_t(-1));
  r.requested_output_tokens = j.value("requested_output_tokens", int64_t(-1));
  r.output_tokens = j.value("output_tokens", int64_t(0));
  r.output_tokens_source = j.value("output_tokens_source", std::string());
  r.event_tokens_source = j.value("event_tokens_source", std::string());
  r.finish_reason = j.value("finish_reason", std::string());
  return r;
}

nlohmann::json settings_to_json(const RunSettings& s) {
  return {{"url", s.endpoint.origin + s.endpoint.api_base},
          {"endpoint", s.endpoint.kind},
          {"model", s.endpoint.model},
          {"api_key_given", !s.endpoint.api_key.empty()},
          {"timeout_s", s.endpoint.timeout_s},
          {"ignore_eos", s.endpoint.ignore_eos},
          {"extra_body", s.endpoint.extra_body},
          {"mode", s.mode},
          {"values", s.values},
          {"burstiness", s.burstiness},
          {"requests", s.requests},
          {"duration_s", s.duration_s},
          {"warmup", s.warmup},
          {"slo_s", to_json(s.slo)},
          {"seed", s.seed}};
}

nlohmann::json environment_json() {
  utsname u{};
  uname(&u);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  auto now = std::chrono::system_clock::now();
  return {{"tool", "tps load"},
          {"tps_version", "0.1.0"},
          {"host", host},
          {"os", std::string(u.sysname) + " " + u.release + " " + u.machine},
          {"client_cpus", std::thread::hardware_concurrency()},
          {"started_unix_s",
           double(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count()) / 1e3}};
}

nlohmann::json results_to_json(const RunSettings& settings, const Workload& workload,
                               const RunResult& result, const nlohmann::json& environment) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : result.points) {
    nlohmann::json requests = nlohmann::json::array();
    for (const auto& r : p.records) requests.push_back(record_to_json(r));
    points.push_back({{"mode", p.mode},
                      {"value", p.value},
                      {"started_unix_s", p.started_unix},
                      {"ramp_end_s", p.ramp_end},
                      {"warmup_failed", p.warmup_failed},
                      {"summary", to_json(p.summary)},
                      {"server_metrics",
                       {{"before", p.metrics_before},
                        {"after", p.metrics_after},
                        {"delta", prometheus_delta(p.metrics_before, p.metrics_after)}}},
                      {"requests", std::move(requests)}});
  }
  return {{"format", "tps-load-results/1"},
          {"settings", settings_to_json(settings)},
          {"environment", environment},
          {"workload", workload.description},
          {"stopped_early", result.stopped},
          {"points", std::move(points)}};
}

nlohmann::json read_results_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open the results file", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto json = nlohmann::json::parse(buffer.str(), nullptr, false);
  if (json.is_discarded() || !json.is_object() || json.value("format", "") != "tps-load-results/1" ||
      !json.contains("points") || !json["points"].is_array())
    fail("{}: not a results file of `tps load -o` (format tps-load-results/1)", path);
  return json;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) fail("{}: cannot write the file", path);
  out << text;
  if (!out.flush()) fail("{}: write failed", path);
}

}  // namespace tps::loadgen
