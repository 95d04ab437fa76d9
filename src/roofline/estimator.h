#pragma once
// The roofline arithmetic: bytes moved and FLOPs done per forward pass, split into
// attention, MLP and output head, and the time each takes on a device with explicit
// efficiency fractions (equations in docs/roofline.md).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roofline/hardware.h"
#include "roofline/number_formats.h"
#include "roofline/roofline_model.h"

namespace tps {

// How close to its roofs a real engine gets. The defaults are typical of tuned engines:
// streaming kernels reach ~80 % of peak bandwidth, large matmuls ~50 % of dense peak, and
// each layer of a forward pass costs a few microseconds of launches and barriers.
struct Efficiency {
  double bandwidth = 0.8;                          // achieved / peak memory bandwidth
  double compute = 0.5;                            // achieved / dense peak, any path
  std::map<std::string, double> compute_by_path;   // overrides per path ("int8", "f32" ...)
  double layer_latency = 10e-6;                    // seconds per layer per forward pass
  double memory_usable = 0.9;                      // of device memory, for weights + KV cache

  double compute_for(const std::string& path) const;
};
nlohmann::json efficiency_to_json(const Efficiency& e);
Efficiency efficiency_from_json(const nlohmann::json& j);  // missing fields keep defaults

struct Deployment {
  std::string weight_type = "f16";
  double bits_per_weight = 16;   // from the format, or measured from a file's size
  std::string kv_type = "f16";
  double kv_bytes_per_value = 2;
  int gpus = 1;                  // devices in all; replicas = gpus / tp
  int tp = 1;                    // tensor-parallel degree
  double activation_bytes = 2;   // per value exchanged by the TP allreduce
  int64_t ubatch = 512;          // prompt tokens per forward pass during prefill
  // The compute path the engine ran the matrices on, where known (a bench row's): it
  // wins over the weight format's preference where the hardware has a peak for it
  // (BF16 weights widened to f32 FMAs run at the f32 peak, not the bf16 one).
  std::string compute_path;
};
Deployment make_deployment(const std::string& weight_type, const std::string& kv_type, int gpus, int tp);
// Bits per weight of the matrices a forward pass reads, from the bytes of every tensor it
// reads (the token embedding only where it is the output head too): the norm vectors are
// f32, as the estimator counts them. Exact for files that mix weight types.
double step_bits_per_weight(const RooflineModel& model, double step_weight_bytes);

// Work of one forward pass on one device.
struct PartCost {
  double flops = 0;       // on the weights' compute path
  double attn_flops = 0;  // attention scores and weighted sums (16-bit or f32 path)
  double bytes = 0;
};
struct PassCost {
  PartCost attention, mlp, head;
  PassCost& operator+=(const PassCost& o);
  int64_t tokens = 0;
  int64_t logits = 0;  // rows through the output head
  double flops() const { return attention.flops + attention.attn_flops + mlp.flops + head.flops; }
  double bytes() const { return attention.bytes + mlp.bytes + head.bytes; }
};

struct PassTime {
  double seconds = 0;
  double memory_s = 0;    // sum of the parts' memory times
  double compute_s = 0;   // sum of the parts' compute times
  double overhead_s = 0;  // per-layer latency
  double comm_s = 0;      // tensor-parallel allreduces
  std::string bound;      // "memory", "compute" or "latency": what most of the time waits on
  std::map<std::string, std::string> part_bound;  // "attention"/"mlp"/"head" -> "memory"/"compute"
};

class Estimator {
 public:
  Estimator(RooflineModel model, Hardware hw, Deployment dep, Efficiency eff);

  const RooflineModel& model() const { return model_; }
  const Hardware& hardware() const { return hw_; }
  const Deployment& deployment() const { return dep_; }
  const Efficiency& efficiency() const { return eff_; }
  std::string weight_path() const { return weight_path_; }
  std::string attention_path() const { return attn_path_; }

  double weight_bytes() const;           // resident, whole model
  double kv_bytes_per_token() const;     // whole model, all layers
  double weight_bytes_per_device() const;
  double kv_bytes_per_token_per_device() const;
  int replicas() const { return dep_.gpus / dep_.tp; }

  // One decode step: `batch` sequences each attending to `context` cached tokens.
  PassCost decode_cost(int64_t batch, double context) const;
  // One prefill forward pass of `tokens` prompt tokens after `depth` cached ones;
  // `logits` rows of the output head are computed (1 for the last token of a prompt).
  PassCost prefill_cost(int64_t tokens, int64_t depth, int64_t logits) const;
  PassTime time(const PassCost& cost) const;

  double decode_step_seconds(int64_t batch, double context) const;
  // The forward passes that prefill `sequences` prompts of `prompt` tokens each, after
  // `depth` cached ones: the prompts laid end to end and cut into ubatch-row passes, as
  // a scheduler with that token budget packs them.
  std::vector<PassCost> prefill_passes(int64_t sequences, int64_t prompt, int64_t depth) const;
  // One prompt: summed work, and time (each pass timed alone).
  PassCost prefill_total_cost(int64_t prompt, int64_t depth) const;
  double prefill_seconds(int64_t prompt, int64_t depth) const;
  // Seconds of the two allreduces per layer of a pass of `tokens` tokens.
  double allreduce_seconds(int64_t tokens) const;
  // With a probed allreduce (a CPU group under mpirun): the leader's broadcast of the
  // step and the gather of `logits` rows of logits, each priced as one collective.
  double step_exchange_seconds(int64_t logits) const;
  // Smallest batch at which a decode step's compute time reaches its memory time; nullopt
  // when it never does up to 2^20 (KV traffic grows with batch as fast as compute).
  std::optional<int64_t> crossover_batch(double context) const;
  // Largest batch whose KV cache for `context` tokens fits next to the weights (0: none).
  int64_t max_batch(int64_t context) const;

 private:
  PartCost mlp_cost(int64_t tokens) const;
  PassCost pass_cost(int64_t tokens, double pairs, double kv_read, double kv_written, int64_t logits) const;
  RooflineModel model_;
  Hardware hw_;
  Deployment dep_;
  Efficiency eff_;
  std::string weight_path_;
  std::string attn_path_;
};

// Leviathan et al. 2023: tokens per target step (1 - a^(k+1)) / (1 - a); walltime
// speedup = that / (k c + 1), with c = draft step time / target step time.
// Speculative decoding with k drafts per verify step and a per-token acceptance alpha
// (each draft kept with probability alpha once the ones before it were):
// tokens per step E = (1 - alpha^(k+1)) / (1 - alpha) = mean accepted length + 1;
// speedup = E / (k c + r), c = a draft pass over a target step, r = the verify cost
// ratio (a target step of k + 1 tokens over one of 1 token; 1 where decode is purely
// bandwidth-bound).
// k may be a mean over steps (a fractional draft length): the same series, extended.
double speculative_tokens_per_step(double alpha, double k);
double speculative_speedup(double alpha, int k, double c, double verify_cost_ratio = 1.0);
// The per-token acceptance whose mean accepted length over k drafts is `length` (as
// tps bench and /metrics report it), by bisection; in [0, 1].
double per_token_acceptance(double mean_accepted_length, double k);

}  // namespace tps
