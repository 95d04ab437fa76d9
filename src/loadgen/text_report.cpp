#include "loadgen/text_report.h"

#include <cmath>

#include <fmt/format.h>

#include "loadgen/request_metrics.h"

namespace tps::loadgen {
namespace {

std::string ms(double seconds) { return std::isnan(seconds) ? "-" : fmt::format("{:.2f}", seconds * 1e3); }

std::string value_name(const SweepSummary& s) {
  return s.mode == "concurrency" ? fmt::format("concurrency {}", s.value)
                                 : fmt::format("rate {} req/s", s.value);
}

std::string slo_text(const Slo& slo) {
  std::string out;
  auto add = [&](const char* name, const std::optional<double>& v) {
    if (v) out += fmt::format("{}{}<={}ms", out.empty() ? "" : " ", name, *v * 1e3);
  };
  add("ttft", slo.ttft);
  add("tpot", slo.tpot);
  add("e2e", slo.e2e);
  return out;
}

// CSV quoting for error messages, which may hold commas and quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return out + "\"";
}

}  // namespace

std::string format_summary(const SweepSummary& s, const Slo& slo) {
  std::string out = fmt::format("== {} ==\n", value_name(s));
  out += fmt::format("  requests      {} ok, {} failed", s.requests_ok, s.requests_failed);
  if (s.short_outputs > 0) out += fmt::format(", {} ok but shorter than requested", s.short_outputs);
  out += fmt::format("\n  duration      {:.3f} s; measured window {:.3f}-{:.3f} s ({})\n", s.duration,
                     s.window.start, s.window.end, s.window.rule);
  out += fmt::format("  throughput    {:.2f} req/s, {:.1f} output tok/s, {:.1f} total tok/s ({} completed in window)\n",
                     s.request_per_s, s.output_tok_per_s, s.total_tok_per_s, s.completed_in_window);
  if (!std::isnan(s.goodput)) out += fmt::format("  goodput       {:.2f} req/s meeting {}\n", s.goodput, slo_text(slo));
  out += fmt::format("  tokens        {} in, {} out (output counted by: {}; tokens per event: {})\n",
                     s.input_tokens, s.output_tokens, s.output_tokens_source, s.event_tokens_source);
  out += fmt::format("  {:<12}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}\n", "latency ms", "mean", "p50", "p90",
                     "p99", "max", "n");
  auto row = [&](const char* name, const Distribution& d) {
    out += fmt::format("  {:<12}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}\n", name, ms(d.mean), ms(d.p50), ms(d.p90),
                       ms(d.p99), ms(d.max), d.count);
  };
  row("TTFT", s.ttft);
  row("TPOT", s.tpot);
  row("ITL", s.itl);
  row("E2E", s.e2e);
  for (const auto& e : s.errors) out += fmt::format("  error: {}\n", e);
  return out;
}

std::string format_overview(const std::vector<SweepSummary>& summaries) {
  std::string out = fmt::format("{:<14}{:>6}{:>7}{:>9}{:>12}{:>12}{:>9}{:>10}{:>10}{:>10}{:>10}\n",
                                summaries.empty() ? "" : summaries.front().mode, "ok", "failed", "req/s",
                                "out tok/s", "total tok/s", "goodput", "TTFT p50", "TPOT p50", "ITL p50",
                                "E2E p50");
  for (const auto& s : summaries) {
    out += fmt::format("{:<14}{:>6}{:>7}{:>9.2f}{:>12.1f}{:>12.1f}{:>9}{:>10}{:>10}{:>10}{:>10}\n",
                       fmt::format("{}", s.value), s.requests_ok, s.requests_failed, s.request_per_s,
                       s.output_tok_per_s, s.total_tok_per_s,
                       std::isnan(s.goodput) ? "-" : fmt::format("{:.2f}", s.goodput), ms(s.ttft.p50),
                       ms(s.tpot.p50), ms(s.itl.p50), ms(s.e2e.p50));
  }
  return out + "(latencies in ms)\n";
}

std::string per_request_csv(const std::vector<SweepPoint>& points) {
  std::string out =
      "mode,value,id,ok,http_status,send_s,ttft_s,tpot_s,e2e_s,end_s,events,input_tokens,prompt_tokens,"
      "requested_output_tokens,output_tokens,output_tokens_source,finish_reason,error\n";
  auto num = [](double v) { return std::isnan(v) ? std::string() : fmt::format("{:.6f}", v); };
  for (const auto& p : points) {
    for (const auto& r : p.records) {
      RequestMetrics m = compute_request_metrics(r);
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", p.mode, p.value, r.id,
                         r.ok ? 1 : 0, r.http_status, num(r.send_time), num(m.ttft), num(m.tpot), num(m.e2e),
                         num(r.end_time), r.arrivals.size(), r.input_tokens, r.prompt_tokens,
                         r.requested_output_tokens, r.output_tokens, r.output_tokens_source,
                         csv_field(r.finish_reason), csv_field(r.error));
    }
  }
  return out;
}

}  // namespace tps::loadgen
