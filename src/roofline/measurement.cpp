#include "roofline/measurement.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "core/error.h"

namespace tps {

Hardware HardwareSource::for_threads(int threads, const std::string& kernel_path) const {
  if (profile) return hardware_from_profile(*profile, threads, kernel_path);
  if (fixed) return *fixed;
  fail("no hardware for the measured runs: pass --profile probe.json or --hardware NAME, "
       "or embed a profile in the results");
}

Estimator estimator_for_row(const MeasuredRun& row, const Hardware& hw, const Efficiency& eff) {
  Deployment dep = make_deployment(row.weight_type, row.kv_type, 1, 1);
  dep.bits_per_weight = row.bits_per_weight;
  dep.compute_path = row.compute_path;
  return Estimator(row.model, hw, dep, eff);
}

namespace {

// Context a decode step sees on average over the generated tokens.
double mean_decode_context(const MeasuredRun& row) {
  return static_cast<double>(row.depth + row.prompt_tokens) + row.gen_tokens / 2.0;
}

struct RowWork {
  double seconds = 0;  // predicted
  double tokens = 0;   // tokens the measured tokens/s counts in that time
  double bytes = 0;
  double flops = 0;
  std::string bound;
};

RowWork row_work(const MeasuredRun& row, const Estimator& est) {
  RowWork w;
  auto add = [&](const PassCost& c, double times) {
    PassTime t = est.time(c);
    w.seconds += t.seconds * times;
    w.bytes += c.bytes() * times;
    w.flops += c.flops() * times;
    if (w.bound.empty()) w.bound = t.bound;
  };
  auto add_prefill = [&](int64_t sequences, int64_t prompt, double times) {
    for (const PassCost& pass : est.prefill_passes(sequences, prompt, row.depth)) add(pass, times);
  };
  if (row.kind == "pp") {
    add_prefill(row.batch, row.prompt_tokens, 1);
    w.tokens = static_cast<double>(row.batch * row.prompt_tokens);
  } else if (row.kind == "load") {
    // Each client's prompt is prefilled on its own, then the clients decode together.
    add(est.decode_cost(row.batch, mean_decode_context(row)), static_cast<double>(row.gen_tokens));
    if (row.prompt_tokens > 0) add_prefill(1, row.prompt_tokens, static_cast<double>(row.batch));
    w.bound = est.time(est.decode_cost(row.batch, mean_decode_context(row))).bound;
    w.tokens = static_cast<double>(row.batch * row.gen_tokens);
  } else {  // tg and batched: decode steps of `batch` sequences
    add(est.decode_cost(row.batch, mean_decode_context(row)), 1);
    w.tokens = static_cast<double>(row.batch);
  }
  return w;
}

}  // namespace

double predict_tokens_per_s(const MeasuredRun& row, const HardwareSource& hw, const Efficiency& eff) {
  Estimator est = estimator_for_row(row, hw.for_row(row), eff);
  RowWork w = row_work(row, est);
  return w.tokens / w.seconds;
}

RowAnalysis analyze_row(const MeasuredRun& row, const HardwareSource& hw, const Efficiency& eff) {
  Estimator est = estimator_for_row(row, hw.for_row(row), eff);
  RowWork w = row_work(row, est);
  RowAnalysis a;
  a.predicted_tokens_per_s = w.tokens / w.seconds;
  a.predicted_bound = w.bound;
  a.bytes_per_token = w.bytes / w.tokens;
  a.flops_per_token = w.flops / w.tokens;
  double measured_seconds = w.tokens / row.tokens_per_s;  // wall time of the same work, measured
  double bytes = w.bytes;
  if (row.bytes_per_token > 0 && (row.kind == "tg" || row.kind == "batched"))
    bytes = row.bytes_per_token * w.tokens;  // the engine's own count wins
  a.achieved_bytes_per_s = bytes / measured_seconds;
  a.achieved_flops_per_s = w.flops / measured_seconds;
  a.peak_bytes_per_s = est.hardware().bandwidth_for(bytes);
  a.compute_path = est.weight_path();
  a.peak_flops_per_s = est.hardware().peaks.at(a.compute_path);
  a.mbu = a.achieved_bytes_per_s / a.peak_bytes_per_s;
  a.mfu = a.achieved_flops_per_s / a.peak_flops_per_s;
  // The roof the run came closest to limited it; far from both, time went elsewhere.
  constexpr double kFarFromRoofs = 0.1;
  a.bound = std::max(a.mbu, a.mfu) < kFarFromRoofs ? "overhead" : a.mbu >= a.mfu ? "memory" : "compute";
  return a;
}

Efficiency roofs_only() {
  Efficiency e;
  e.bandwidth = 1;
  e.compute = 1;
  e.layer_latency = 0;
  return e;
}

RowAnalysis bound_of_row(const MeasuredRun& row, const HardwareSource& hw) { return analyze_row(row, hw, roofs_only()); }

namespace {

double loss(const std::vector<MeasuredRun>& rows, const HardwareSource& hw, const Efficiency& eff) {
  double s = 0;
  for (const auto& r : rows) {
    double e = std::log(predict_tokens_per_s(r, hw, eff) / r.tokens_per_s);
    s += e * e;
  }
  return s;
}

// Nelder-Mead on the logarithms of the parameters (all positive, spanning decades), from
// a start point; a few restarts shake it out of flat valleys.
std::vector<double> minimize_log(const std::function<double(const std::vector<double>&)>& f,
                                 std::vector<double> x0, const std::vector<double>& lo,
                                 const std::vector<double>& hi) {
  size_t n = x0.size();
  auto clamp = [&](std::vector<double> v) {
    for (size_t i = 0; i < n; ++i) v[i] = std::clamp(v[i], std::log(lo[i]), std::log(hi[i]));
    return v;
  };
  auto value = [&](const std::vector<double>& v) {
    std::vector<double> e(n);
    for (size_t i = 0; i < n; ++i) e[i] = std::exp(v[i]);
    return f(e);
  };
  std::vector<double> best(n);
  for (size_t i = 0; i < n; ++i) best[i] = std::log(x0[i]);
  best = clamp(best);
  for (int restart = 0; restart < 4; ++restart) {
    std::vector<std::vector<double>> pts(n + 1, best);
    for (size_t i = 0; i < n; ++i) pts[i + 1][i] += 0.7;  // a factor of 2 up each axis
    for (auto& p : pts) p = clamp(p);
    std::vector<double> vals(n + 1);
    for (size_t i = 0; i <= n; ++i) vals[i] = value(pts[i]);
    for (int it = 0; it < 300; ++it) {
      std::vector<size_t> order(n + 1);
      for (size_t i = 0; i <= n; ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return vals[a] < vals[b]; });
      size_t w = order[n];
      std::vector<double> c(n, 0.0);
      for (size_t i = 0; i < n; ++i)
        for (size_t k = 0; k <= n; ++k)
          if (k != w) c[i] += pts[k][i] / n;
      auto along = [&](double t) {
        std::vector<double> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = c[i] + t * (pts[w][i] - c[i]);
        return clamp(v);
      };
      std::vector<double> r = along(-1);
      double fr = value(r);
      if (fr < vals[order[0]]) {
        std::vector<double> e = along(-2);
        double fe = value(e);
        if (fe < fr) { pts[w] = e; vals[w] = fe; } else { pts[w] = r; vals[w] = fr; }
      } else if (fr < vals[order[n - 1]]) {
        pts[w] = r;
        vals[w] = fr;
      } else {
        std::vector<double> k = along(0.5);
        double fk = value(k);
        if (fk < vals[w]) {
          pts[w] = k;
          vals[w] = fk;
        } else {  // shrink toward the best point
          for (size_t j = 0; j <= n; ++j)
            if (j != order[0]) {
              for (size_t i = 0; i < n; ++i) pts[j][i] = 0.5 * (pts[j][i] + pts[order[0]][i]);
              vals[j] = value(pts[j]);
            }
        }
      }
    }
    size_t bi = std::min_element(vals.begin(), vals.end()) - vals.begin();
    best = pts[bi];
  }
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = std::exp(best[i]);
  return out;
}

}  // namespace

Efficiency calibrate(const std::vector<MeasuredRun>& rows, const HardwareSource& hw, const Efficiency& start) {
  if (rows.empty()) fail("calibrate: no measured rows");
  Efficiency eff = start;
  std::set<std::string> paths;
  for (const auto& r : rows) {
    Estimator est = estimator_for_row(r, hw.for_row(r), eff);
    paths.insert(est.weight_path());
    paths.insert(est.attention_path());
  }
  for (const auto& p : paths) eff.compute_by_path.emplace(p, eff.compute_for(p));
  // Parameters: bandwidth fraction, per-layer latency (its floor of 0.1 us stands for
  // "no fixed cost"), then one compute fraction per path.
  std::vector<std::string> order(paths.begin(), paths.end());
  std::vector<double> x0 = {eff.bandwidth, std::max(eff.layer_latency, 1e-7)};
  std::vector<double> lo = {0.05, 1e-7}, hi = {1.2, 2e-3};
  for (const auto& p : order) {
    x0.push_back(eff.compute_by_path[p]);
    lo.push_back(1e-3);
    hi.push_back(1.5);
  }
  auto apply = [&](const std::vector<double>& x) {
    eff.bandwidth = x[0];
    eff.layer_latency = x[1];
    for (size_t i = 0; i < order.size(); ++i) eff.compute_by_path[order[i]] = x[2 + i];
  };
  apply(minimize_log([&](const std::vector<double>& x) {
    apply(x);
    return loss(rows, hw, eff);
  }, x0, lo, hi));
  return eff;
}

}  // namespace tps
