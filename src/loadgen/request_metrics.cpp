#include "loadgen/request_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/error.h"

namespace tps::loadgen {

RequestMetrics compute_request_metrics(const RequestRecord& record) {
  RequestMetrics m;
  const auto& arrivals = record.arrivals;
  if (arrivals.empty()) return m;
  m.ttft = arrivals.front().time - record.send_time;
  m.e2e = arrivals.back().time - record.send_time;
  if (record.output_tokens >= 2) m.tpot = (m.e2e - m.ttft) / double(record.output_tokens - 1);
  // Tokens of the first event arrive together with it: they are part of TTFT. Each later
  // event's gap is shared evenly by the k tokens it carries; an event carrying text but no
  // new token lends its gap to the next one that does.
  double previous = arrivals.front().time;
  for (size_t i = 1; i < arrivals.size(); ++i) {
    int64_t k = arrivals[i].tokens;
    if (k <= 0) continue;
    double share = (arrivals[i].time - previous) / double(k);
    m.itl.insert(m.itl.end(), size_t(k), share);
    previous = arrivals[i].time;
  }
  return m;
}

double percentile_sorted(const std::vector<double>& sorted, double q) {
  double rank = q / 100.0 * double(sorted.size() - 1);
  size_t lo = size_t(std::floor(rank));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

Distribution describe(std::vector<double> values) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  Distribution d;
  d.count = int64_t(values.size());
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / double(values.size());
  double squares = 0;
  for (double v : values) squares += (v - d.mean) * (v - d.mean);
  d.stddev = values.size() > 1 ? std::sqrt(squares / double(values.size() - 1)) : 0.0;
  d.min = values.front();
  d.max = values.back();
  d.p50 = percentile_sorted(values, 50);
  d.p90 = percentile_sorted(values, 90);
  d.p99 = percentile_sorted(values, 99);
  return d;
}

namespace {

nlohmann::json number_or_null(double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); }

double parse_duration(const std::string& key, const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    fail("--slo {}: '{}' is not a duration (expected e.g. 500ms, 0.5s, 800us)", key, text);
  }
  std::string unit = text.substr(used);
  if (unit == "ms" || unit.empty()) return value / 1e3;
  if (unit == "s") return value;
  if (unit == "us") return value / 1e6;
  fail("--slo {}: unknown unit '{}' (expected ms, s or us)", key, unit);
}

// Names the source of a count: the one every request used, or how they were mixed.
std::string combine_sources(const std::map<std::string, int64_t>& counts) {
  if (counts.size() == 1) return counts.begin()->first;
  std::string out = "mixed:";
  for (const auto& [source, n] : counts) out += fmt::format(" {} {}", source, n);
  return out;
}

}  // namespace

nlohmann::json to_json(const Distribution& d) {
  return {{"count", d.count},           {"mean", number_or_null(d.mean)},
          {"stddev", number_or_null(d.stddev)}, {"min", number_or_null(d.min)},
          {"p50", number_or_null(d.p50)}, {"p90", number_or_null(d.p90)},
          {"p99", number_or_null(d.p99)}, {"max", number_or_null(d.max)}};
}

Slo parse_slo(const std::string& spec) {
  Slo slo;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    std::string item = spec.substr(start, end - start);
    start = end + 1;
    size_t eq = item.find('=');
    if (eq == std::string::npos) fail("--slo: '{}' is not key=duration (e.g. ttft=500ms)", item);
    std::string key = item.substr(0, eq);
    double seconds = parse_duration(key, item.substr(eq + 1));
    if (key == "ttft") slo.ttft = seconds;
    else if (key == "tpot") slo.tpot = seconds;
    else if (key == "e2e") slo.e2e = seconds;
    else fail("--slo: unknown metric '{}' (expected ttft, tpot or e2e)", key);
  }
  return slo;
}

bool meets_slo(const RequestMetrics& m, const Slo& slo) {
  // A metric the request has no value for (TPOT of a one-token answer) cannot fail it.
  auto within = [](double value, const std::optional<double>& limit) {
    return !limit || std::isnan(value) || value <= *limit;
  };
  return within(m.ttft, slo.ttft) && within(m.tpot, slo.tpot) && within(m.e2e, slo.e2e);
}

nlohmann::json to_json(const Slo& slo) {
  nlohmann::json j = nlohmann::json::object();
  if (slo.ttft) j["ttft"] = *slo.ttft;
  if (slo.tpot) j["tpot"] = *slo.tpot;
  if (slo.e2e) j["e2e"] = *slo.e2e;
  return j;
}

MeasureWindow steady_window(const std::vector<RequestRecord>& records, double ramp_end) {
  MeasureWindow w;
  if (records.empty()) return w;
  double first_send = records.front().send_time, last_send = first_send, last_end = 0;
  for (const auto& r : records) {
    first_send = std::min(first_send, r.send_time);
    last_send = std::max(last_send, r.send_time);
    last_end = std::max(last_end, r.end_time);
  }
  int64_t completions = 0;
  for (const auto& r : records)
    if (r.ok && r.end_time >= ramp_end && r.end_time <= last_send) ++completions;
  if (completions >= 2 && last_send > ramp_end) {
    w = {ramp_end, last_send, "steady state: from the end of ramp-up (all clients sending) "
                              "to the start of drain (last request sent)"};
  } else {
    w = {first_send, last_end, "whole run: too few requests completed between ramp-up and "
                               "drain for a steady-state window"};
  }
  return w;
}

SweepSummary summarize(const std::string& mode, double value,
                       const std::vector<RequestRecord>& records, double ramp_end,
                       const Slo& slo) {
  SweepSummary s;
  s.mode = mode;
  s.value = value;
  s.window = steady_window(records, ramp_end);
  double length = s.window.end - s.window.start;
  auto in_window = [&](double t) { return t >= s.window.start && t <= s.window.end; };

  std::vector<double> ttft, tpot, itl, e2e;
  std::map<std::string, int64_t> output_sources, event_sources, errors;
  double first_send = records.empty() ? 0 : records.front().send_time, last_end = first_send;
  double window_output = 0, window_input = 0;
  int64_t good_in_window = 0;
  for (const auto& r : records) {
    first_send = std::min(first_send, r.send_time);
    last_end = std::max(last_end, r.end_time);
    if (!r.ok) {
      ++s.requests_failed;
      ++errors[r.error];
      continue;
    }
    ++s.requests_ok;
    RequestMetrics m = compute_request_metrics(r);
    ttft.push_back(m.ttft);
    tpot.push_back(m.tpot);
    e2e.push_back(m.e2e);
    itl.insert(itl.end(), m.itl.begin(), m.itl.end());
    int64_t input = r.prompt_tokens >= 0 ? r.prompt_tokens : std::max<int64_t>(r.input_tokens, 0);
    s.input_tokens += input;
    s.output_tokens += r.output_tokens;
    ++output_sources[r.output_tokens_source];
    ++event_sources[r.event_tokens_source];
    if (r.requested_output_tokens > 0 && r.output_tokens < r.requested_output_tokens) ++s.short_outputs;
    // Token arrivals inside the window, scaled so a request's arrivals add up to its
    // output token count when per-event counts were only assumed.
    int64_t event_total = 0, event_in_window = 0;
    for (const auto& a : r.arrivals) {
      event_total += a.tokens;
      if (in_window(a.time)) event_in_window += a.tokens;
    }
    if (event_total > 0) window_output += double(r.output_tokens) * double(event_in_window) / double(event_total);
    if (!r.arrivals.empty() && in_window(r.arrivals.front().time)) window_input += double(input);
    if (in_window(r.end_time)) {
      ++s.completed_in_window;
      if (!slo.empty() && meets_slo(m, slo)) ++good_in_window;
    }
  }
  s.duration = records.empty() ? 0 : last_end - first_send;
  if (length > 0) {
    s.request_per_s = double(s.completed_in_window) / length;
    s.output_tok_per_s = window_output / length;
    s.total_tok_per_s = (window_output + window_input) / length;
    if (!slo.empty()) s.goodput = double(good_in_window) / length;
  }
  s.output_tokens_source = combine_sources(output_sources);
  s.event_tokens_source = combine_sources(event_sources);
  s.ttft = describe(ttft);
  s.tpot = describe(tpot);
  s.itl = describe(itl);
  s.e2e = describe(e2e);
  for (const auto& [message, n] : errors) s.errors.push_back(fmt::format("{} x {}", n, message));
  return s;
}

nlohmann::json to_json(const SweepSummary& s) {
  return {{"mode", s.mode},
          {"value", s.value},
          {"requests_ok", s.requests_ok},
          {"requests_failed", s.requests_failed},
          {"short_outputs", s.short_outputs},
          {"duration_s", s.duration},
          {"window", {{"start_s", s.window.start}, {"end_s", s.window.end}, {"rule", s.window.rule}}},
          {"completed_in_window", s.completed_in_window},
          {"request_per_s", s.request_per_s},
          {"output_tok_per_s", s.output_tok_per_s},
          {"total_tok_per_s", s.total_tok_per_s},
          {"goodput_request_per_s", number_or_null(s.goodput)},
          {"input_tokens", s.input_tokens},
          {"output_tokens", s.output_tokens},
          {"output_tokens_source", s.output_tokens_source},
          {"event_tokens_source", s.event_tokens_source},
          {"ttft_s", to_json(s.ttft)},
          {"tpot_s", to_json(s.tpot)},
          {"itl_s", to_json(s.itl)},
          {"e2e_s", to_json(s.e2e)},
          {"errors", s.errors}};
}

}  // namespace tps::loadgen
