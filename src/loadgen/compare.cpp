#include "loadgen/compare.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include <fmt/format.h>

#include "loadgen/request_metrics.h"
#include "loadgen/results_file.h"

namespace tps::loadgen {
namespace {

constexpr double kZ95 = 1.959964;
constexpr int kThroughputSlices = 10;

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? kNaN : sum / double(v.size());
}

double standard_error(const std::vector<double>& v) {
  if (v.size() < 2) return kNaN;
  double m = mean_of(v), squares = 0;
  for (double x : v) squares += (x - m) * (x - m);
  return std::sqrt(squares / double(v.size() - 1) / double(v.size()));
}

double percentile_of(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  return percentile_sorted(v, q);
}

// The values of one sweep point that noise can be judged from: per-request latencies,
// pooled ITLs, and output tokens/s in equal slices of the measured window.
struct PointSamples {
  std::vector<double> ttft, tpot, itl, e2e, tok_per_s, req_per_s;
  nlohmann::json summary;
};

PointSamples samples_of(const nlohmann::json& point) {
  PointSamples s;
  s.summary = point.at("summary");
  double start = s.summary["window"]["start_s"].get<double>(), end = s.summary["window"]["end_s"].get<double>();
  double slice = (end - start) / kThroughputSlices;
  std::vector<double> tokens(kThroughputSlices, 0), completions(kThroughputSlices, 0);
  auto slice_of = [&](double t) { return slice > 0 && t >= start && t <= end ? std::min(int((t - start) / slice), kThroughputSlices - 1) : -1; };
  for (const auto& j : point.at("requests")) {
    RequestRecord r = record_from_json(j);
    if (!r.ok) continue;
    RequestMetrics m = compute_request_metrics(r);
    s.ttft.push_back(m.ttft);
    if (!std::isnan(m.tpot)) s.tpot.push_back(m.tpot);
    s.e2e.push_back(m.e2e);
    s.itl.insert(s.itl.end(), m.itl.begin(), m.itl.end());
    for (const auto& a : r.arrivals)
      if (int i = slice_of(a.time); i >= 0) tokens[size_t(i)] += double(a.tokens);
    if (int i = slice_of(r.end_time); i >= 0) completions[size_t(i)] += 1;
  }
  if (slice > 0) {
    for (int i = 0; i < kThroughputSlices; ++i) {
      s.tok_per_s.push_back(tokens[size_t(i)] / slice);
      s.req_per_s.push_back(completions[size_t(i)] / slice);
    }
  }
  return s;
}

struct Metric {
  std::string name;
  bool higher_is_better;
  double scale;  // for display: 1e3 turns seconds into ms
  std::function<double(const nlohmann::json& summary)> value;
  std::function<NoiseTest(const PointSamples& a, const PointSamples& b, uint64_t seed)> noise;
};

double number(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : kNaN; }

std::vector<Metric> metrics() {
  std::vector<Metric> out;
  out.push_back({"output tok/s", true, 1, [](const nlohmann::json& s) { return number(s["output_tok_per_s"]); },
                 [](const PointSamples& a, const PointSamples& b, uint64_t) { return compare_means(a.tok_per_s, b.tok_per_s); }});
  out.push_back({"request/s", true, 1, [](const nlohmann::json& s) { return number(s["request_per_s"]); },
                 [](const PointSamples& a, const PointSamples& b, uint64_t) { return compare_means(a.req_per_s, b.req_per_s); }});
  struct Latency {
    const char* name;
    const char* key;
    std::vector<double> PointSamples::*values;
  };
  for (auto [name, key, values] : {Latency{"TTFT", "ttft_s", &PointSamples::ttft}, Latency{"TPOT", "tpot_s", &PointSamples::tpot},
                                   Latency{"ITL", "itl_s", &PointSamples::itl}, Latency{"E2E", "e2e_s", &PointSamples::e2e}}) {
    std::string k = key;
    auto v = values;
    out.push_back({fmt::format("{} mean ms", name), false, 1e3, [k](const nlohmann::json& s) { return number(s[k]["mean"]); },
                   [v](const PointSamples& a, const PointSamples& b, uint64_t) { return compare_means(a.*v, b.*v); }});
    for (auto [q, label] : {std::pair{50.0, "p50"}, std::pair{99.0, "p99"}}) {
      std::string l = label;
      double qq = q;
      out.push_back({fmt::format("{} {} ms", name, label), false, 1e3, [k, l](const nlohmann::json& s) { return number(s[k][l]); },
                     [v, qq](const PointSamples& a, const PointSamples& b, uint64_t seed) {
                       return compare_percentiles(a.*v, b.*v, qq, seed);
                     }});
    }
  }
  return out;
}

const nlohmann::json* find_point(const nlohmann::json& run, const std::string& mode, double value) {
  for (const auto& p : run["points"])
    if (p.value("mode", "") == mode && p.value("value", 0.0) == value) return &p;
  return nullptr;
}

}  // namespace

NoiseTest compare_means(const std::vector<double>& a, const std::vector<double>& b) {
  NoiseTest t;
  t.difference = mean_of(b) - mean_of(a);
  double se = std::hypot(standard_error(a), standard_error(b));
  t.low = std::isnan(se) ? kNaN : t.difference - kZ95 * se;
  t.high = std::isnan(se) ? kNaN : t.difference + kZ95 * se;
  return t;
}

NoiseTest compare_percentiles(const std::vector<double>& a, const std::vector<double>& b, double q,
                              uint64_t seed, int resamples) {
  NoiseTest t;
  if (a.size() < 2 || b.size() < 2) {
    t.low = t.high = kNaN;
    return t;
  }
  std::vector<double> sa = a, sb = b;
  t.difference = percentile_of(sb, q) - percentile_of(sa, q);
  std::mt19937_64 rng(seed);
  std::vector<double> diffs, ra(a.size()), rb(b.size());
  for (int i = 0; i < resamples; ++i) {
    for (auto& x : ra) x = a[rng() % a.size()];
    for (auto& x : rb) x = b[rng() % b.size()];
    diffs.push_back(percentile_of(rb, q) - percentile_of(ra, q));
  }
  std::sort(diffs.begin(), diffs.end());
  t.low = percentile_sorted(diffs, 2.5);
  t.high = percentile_sorted(diffs, 97.5);
  return t;
}

std::string compare_results(const std::vector<nlohmann::json>& runs, const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < runs.size(); ++i) out += fmt::format("run {}: {}\n", char('A' + i), names[i]);
  out += "change: against run A; '*' marks a change beyond run-to-run noise (95% interval of the "
         "difference excludes 0: Welch for means and throughput, bootstrap for percentiles), "
         "'~' one within it\n";
  const auto all = metrics();
  for (const auto& base_point : runs[0]["points"]) {
    std::string mode = base_point.value("mode", "");
    double value = base_point.value("value", 0.0);
    PointSamples base = samples_of(base_point);
    out += fmt::format("\n== {} {} ==\n{:<16}{:>12}", mode, value, "metric", "A");
    for (size_t i = 1; i < runs.size(); ++i) out += fmt::format("{:>12}{:>12}", std::string(1, char('A' + i)), "change");
    out += "\n";
    std::vector<std::optional<PointSamples>> others;
    for (size_t i = 1; i < runs.size(); ++i) {
      const nlohmann::json* p = find_point(runs[i], mode, value);
      others.push_back(p ? std::optional(samples_of(*p)) : std::nullopt);
    }
    for (size_t m = 0; m < all.size(); ++m) {
      const Metric& metric = all[m];
      double a = metric.value(base.summary);
      out += fmt::format("{:<16}{:>12}", metric.name, std::isnan(a) ? "-" : fmt::format("{:.2f}", a * metric.scale));
      for (const auto& other : others) {
        if (!other) {
          out += fmt::format("{:>12}{:>12}", "absent", "");
          continue;
        }
        double b = metric.value(other->summary);
        NoiseTest noise = metric.noise(base, *other, 1000 + m);
        std::string change = std::isnan(a) || std::isnan(b) || a == 0 ? "-" : fmt::format("{:+.1f}%", (b - a) / a * 100);
        bool known = !std::isnan(noise.low);
        bool better = (b > a) == metric.higher_is_better;
        std::string mark = !known ? " ?" : !noise.significant() ? " ~" : " *";
        std::string direction = known && noise.significant() && change != "-" ? (better ? "better" : "worse") : "";
        out += fmt::format("{:>12}{:>12}", std::isnan(b) ? "-" : fmt::format("{:.2f}", b * metric.scale),
                           change + mark);
        if (!direction.empty()) out += " " + direction;
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace tps::loadgen
