#pragma once
// What one token of a bench case costs: bytes read from memory (weights + KV cache) and
// arithmetic (2 ops per multiply-add), and the roofline bound that follows from this
// machine's read bandwidth and peak compute.
#include <cstdint>
#include <string>

#include "bench/bench_plan.h"
#include "model/model_config.h"

namespace tps {

struct ModelCost {
  ModelConfig config;
  double weight_bytes_per_step = 0;  // every matrix, once per forward pass (token_embd lookups excluded)
  double matmul_params = 0;          // weights multiplied per token (output head included)
  double kv_bytes_per_position = 0;  // K and V of one position, all layers
};

// Prefill passes are split into chunks of at most this many rows (llama.cpp's n_ubatch);
// each chunk reads the weights once.
constexpr int64_t kPrefillChunkRows = 512;

struct CaseCost {
  double bytes_per_token = 0;  // weights (shared by the rows of a step) + KV read
  double ops_per_token = 0;    // matmuls + attention over the context
  double mean_context = 0;     // positions attended per token, on average
};

CaseCost case_cost(const ModelCost& model, const BenchCase& c);

struct Roofs {
  double read_gbps = 0;   // DRAM read bandwidth at the case's thread count (1e9 B/s)
  double peak_ops = 0;    // peak ops/s of the compute path the weights run on
  std::string path;       // that path, as the probe names it ("int8", "amx_int8", "f32")
};

struct RooflineFigures {
  double bound_tokens_per_s = 0;
  bool compute_bound = false;
  double achieved_gbps = 0;  // bytes_per_token x tokens/s / 1e9
  double mbu = 0;            // achieved_gbps / read_gbps
  double achieved_ops = 0;   // ops_per_token x tokens/s
  double mfu = 0;            // achieved_ops / peak_ops
};

RooflineFigures roofline_figures(const CaseCost& cost, const Roofs& roofs, double tokens_per_s);

}  // namespace tps
