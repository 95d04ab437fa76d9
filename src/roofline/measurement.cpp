#include "roofline/measurement.h"

#include <cmath>
#include <functional>
#include <set>

#include "core/error.h"

namespace tps {

Hardware HardwareSource::for_threads(int threads) const {
  if (profile) return hardware_from_profile(*profile, threads);
  if (fixed) return *fixed;
  fail("no hardware for the measured runs: pass --profile probe.json or --hardware NAME, "
       "or embed a profile in the results");
}

Estimator estimator_for_row(const BenchRow& row, const Hardware& hw, const Efficiency& eff) {
  Deployment dep = make_deployment(row.weight_type, row.kv_type, 1, 1);
  dep.bits_per_weight = row.bits_per_weight;
  return Estimator(row.model, hw, dep, eff);
}

namespace {

// Context a decode step sees on average over the generated tokens.
double mean_decode_context(const BenchRow& row) {
  return static_cast<double>(row.depth + row.prompt_tokens) + row.gen_tokens / 2.0;
}

struct RowWork {
  double seconds = 0;  // predicted
  double tokens = 0;   // tokens the measured tokens/s counts in that time
  double bytes = 0;
  double flops = 0;
  std::string bound;
};

RowWork row_work(const BenchRow& row, const Estimator& est) {
  RowWork w;
  auto add = [&](const PassCost& c, double times) {
    PassTime t = est.time(c);
    w.seconds += t.seconds * times;
    w.bytes += c.bytes() * times;
    w.flops += c.flops() * times;
    if (w.bound.empty()) w.bound = t.bound;
  };
  int64_t ub = est.deployment().ubatch;
  auto add_prefill = [&](int64_t prompt, double times) {
    for (int64_t done = 0; done < prompt; done += ub) {
      int64_t n = std::min(ub, prompt - done);
      add(est.prefill_cost(n, row.depth + done, done + n == prompt ? 1 : 0), times);
    }
  };
  if (row.kind == "pp") {
    add_prefill(row.prompt_tokens, 1);
    w.tokens = static_cast<double>(row.prompt_tokens);
  } else if (row.kind == "load") {
    // Each client's prompt is prefilled on its own, then the clients decode together.
    add(est.decode_cost(row.batch, mean_decode_context(row)), static_cast<double>(row.gen_tokens));
    if (row.prompt_tokens > 0) add_prefill(row.prompt_tokens, static_cast<double>(row.batch));
    w.bound = est.time(est.decode_cost(row.batch, mean_decode_context(row))).bound;
    w.tokens = static_cast<double>(row.batch * row.gen_tokens);
  } else {  // tg and batched: decode steps of `batch` sequences
    add(est.decode_cost(row.batch, mean_decode_context(row)), 1);
    w.tokens = static_cast<double>(row.batch);
  }
  return w;
}

}  // namespace

double predict_tokens_per_s(const BenchRow& row, const HardwareSource& hw, const Efficiency& eff) {
  Estimator est = estimator_for_row(row, hw.for_threads(row.threads), eff);
  RowWork w = row_work(row, est);
  return w.tokens / w.seconds;
}

RowAnalysis analyze_row(const BenchRow& row, const HardwareSource& hw, const Efficiency& eff) {
  Estimator est = estimator_for_row(row, hw.for_threads(row.threads), eff);
  RowWork w = row_work(row, est);
  RowAnalysis a;
  a.predicted_tokens_per_s = w.tokens / w.seconds;
  a.predicted_bound = w.bound;
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
  constexpr double kFarFromRoofs = 0.3;
  a.bound = std::max(a.mbu, a.mfu) < kFarFromRoofs ? "overhead" : a.mbu >= a.mfu ? "memory" : "compute";
  return a;
}

namespace {

double loss(const std::vector<BenchRow>& rows, const HardwareSource& hw, const Efficiency& eff) {
  double s = 0;
  for (const auto& r : rows) {
    double e = std::log(predict_tokens_per_s(r, hw, eff) / r.tokens_per_s);
    s += e * e;
  }
  return s;
}

// One parameter at a time over a geometric grid that narrows around the best value.
void fit_one(double& param, double lo, double hi, const std::function<double()>& f) {
  for (int round = 0; round < 3; ++round) {
    double best = param, best_loss = f();
    constexpr int kSteps = 24;
    for (int i = 0; i <= kSteps; ++i) {
      double saved = param;
      param = lo * std::pow(hi / lo, static_cast<double>(i) / kSteps);
      double l = f();
      if (l < best_loss) {
        best_loss = l;
        best = param;
      }
      param = saved;
    }
    param = best;
    double span = std::pow(hi / lo, 1.0 / kSteps);
    lo = std::max(lo, best / span);
    hi = std::min(hi, best * span);
  }
}

}  // namespace

Efficiency calibrate(const std::vector<BenchRow>& rows, const HardwareSource& hw, const Efficiency& start) {
  if (rows.empty()) fail("calibrate: no measured rows");
  Efficiency eff = start;
  std::set<std::string> paths;
  for (const auto& r : rows) {
    Estimator est = estimator_for_row(r, hw.for_threads(r.threads), eff);
    paths.insert(est.weight_path());
    paths.insert(est.attention_path());
  }
  for (const auto& p : paths) eff.compute_by_path.emplace(p, eff.compute_for(p));
  auto f = [&] { return loss(rows, hw, eff); };
  // The latency grid starts at 0.1 us: its floor stands for "no fixed cost".
  double latency = std::max(eff.layer_latency, 1e-7);
  for (int sweep = 0; sweep < 4; ++sweep) {
    fit_one(eff.bandwidth, 0.02, 1.5, f);
    eff.layer_latency = latency;
    fit_one(latency, 1e-7, 5e-3, [&] {
      eff.layer_latency = latency;
      return f();
    });
    eff.layer_latency = latency;
    for (const auto& p : paths) fit_one(eff.compute_by_path[p], 1e-3, 1.5, f);
  }
  return eff;
}

}  // namespace tps
