#include "bench/bench_cost.h"

#include <algorithm>

namespace tps {

CaseCost case_cost(const ModelCost& m, const BenchCase& c) {
  const ModelConfig& cfg = m.config;
  // Attention per token and cached position: q.k and p.v over every query head.
  const double attention_ops_per_position = 4.0 * cfg.n_layers * cfg.q_dim();
  double steps = 0, tokens = 0, mean_context = 0;
  switch (c.kind) {
    case BenchKind::kPrefill:
      tokens = double(c.prompt * c.batch);
      steps = double((c.prompt * c.batch + kPrefillChunkRows - 1) / kPrefillChunkRows);
      mean_context = c.depth + (c.prompt + 1) / 2.0;
      break;
    case BenchKind::kDecode:
      tokens = double(c.gen);
      steps = double(c.gen);
      mean_context = c.depth + (c.gen + 1) / 2.0;
      break;
    case BenchKind::kBatched:
      tokens = double(c.gen * c.batch);
      steps = double(c.gen);
      mean_context = c.depth + c.prompt + (c.gen + 1) / 2.0;
      break;
  }
  CaseCost cost;
  cost.mean_context = mean_context;
  cost.bytes_per_token = m.weight_bytes_per_step * steps / tokens + m.kv_bytes_per_position * mean_context;
  cost.ops_per_token = 2.0 * m.matmul_params + attention_ops_per_position * mean_context;
  return cost;
}

RooflineFigures roofline_figures(const CaseCost& cost, const Roofs& roofs, double tokens_per_s) {
  RooflineFigures f;
  double memory_seconds = roofs.read_gbps > 0 ? cost.bytes_per_token / (roofs.read_gbps * 1e9) : 0;
  double compute_seconds = roofs.peak_ops > 0 ? cost.ops_per_token / roofs.peak_ops : 0;
  double seconds = std::max(memory_seconds, compute_seconds);
  f.bound_tokens_per_s = seconds > 0 ? 1.0 / seconds : 0;
  f.compute_bound = compute_seconds > memory_seconds;
  f.achieved_gbps = cost.bytes_per_token * tokens_per_s / 1e9;
  f.mbu = roofs.read_gbps > 0 ? f.achieved_gbps / roofs.read_gbps : 0;
  f.achieved_ops = cost.ops_per_token * tokens_per_s;
  f.mfu = roofs.peak_ops > 0 ? f.achieved_ops / roofs.peak_ops : 0;
  return f;
}

}  // namespace tps
