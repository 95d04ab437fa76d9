#include "roofline/estimator.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace tps {

double Efficiency::compute_for(const std::string& path) const {
  auto it = compute_by_path.find(path);
  return it != compute_by_path.end() ? it->second : compute;
}

nlohmann::json efficiency_to_json(const Efficiency& e) {
  return {{"bandwidth_fraction", e.bandwidth},
          {"compute_fraction", e.compute},
          {"compute_fraction_by_path", e.compute_by_path},
          {"layer_latency_us", e.layer_latency * 1e6},
          {"memory_usable_fraction", e.memory_usable}};
}

Efficiency efficiency_from_json(const nlohmann::json& j) {
  Efficiency e;
  if (!j.is_object()) fail("efficiency: expected a JSON object");
  try {
    e.bandwidth = j.value("bandwidth_fraction", e.bandwidth);
    e.compute = j.value("compute_fraction", e.compute);
    if (j.contains("compute_fraction_by_path"))
      e.compute_by_path = j["compute_fraction_by_path"].get<std::map<std::string, double>>();
    e.layer_latency = j.value("layer_latency_us", e.layer_latency * 1e6) * 1e-6;
    e.memory_usable = j.value("memory_usable_fraction", e.memory_usable);
  } catch (const nlohmann::json::exception&) {
    fail("efficiency: a field has the wrong type (numbers expected)");
  }
  auto check = [](double v, const char* what) {
    if (!(v > 0 && v <= 2)) fail("efficiency: {} must be in (0, 2], got {}", what, v);
  };
  check(e.bandwidth, "bandwidth_fraction");
  check(e.compute, "compute_fraction");
  for (const auto& [k, v] : e.compute_by_path) check(v, "compute_fraction_by_path");
  if (!(e.layer_latency >= 0)) fail("efficiency: layer_latency_us must be >= 0");
  return e;
}

Deployment make_deployment(const std::string& weight_type, const std::string& kv_type, int gpus, int tp) {
  Deployment d;
  const WeightFormat& w = find_weight_format(weight_type);
  const KvFormat& kv = find_kv_format(kv_type);
  d.weight_type = w.name;
  d.bits_per_weight = w.bits_per_weight;
  d.kv_type = kv.name;
  d.kv_bytes_per_value = kv.bytes_per_value;
  if (gpus < 1 || tp < 1) fail("--gpus and --tp must be at least 1");
  if (gpus % tp != 0) fail("--gpus ({}) must be a multiple of --tp ({})", gpus, tp);
  d.gpus = gpus;
  d.tp = tp;
  return d;
}

double step_bits_per_weight(const RooflineModel& m, double step_weight_bytes) {
  const int64_t norms = m.base.n_layers * m.norm_params() + m.base.dim;
  const int64_t matrices = m.active_params() - norms - (m.base.tied_output ? 0 : m.embedding_params());
  return 8.0 * (step_weight_bytes - 4.0 * static_cast<double>(norms)) / static_cast<double>(matrices);
}

Estimator::Estimator(RooflineModel model, Hardware hw, Deployment dep, Efficiency eff)
    : model_(std::move(model)), hw_(std::move(hw)), dep_(std::move(dep)), eff_(std::move(eff)) {
  const ModelConfig& c = model_.base;
  if (c.dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.vocab_size <= 0)
    fail("model '{}' has an empty shape", c.name);
  if (dep_.tp > 1 && hw_.link_bandwidth <= 0)
    fail("hardware '{}' has no device-to-device link: --tp must be 1", hw_.id);
  if (dep_.tp > 1 && c.n_heads % dep_.tp != 0)
    fail("--tp {} does not divide the {} attention heads", dep_.tp, c.n_heads);
  // The weight format names the compute path a matmul runs on (quantized -> int8 ...).
  std::vector<std::string> paths = find_weight_format(dep_.weight_type).compute_paths;
  if (!dep_.compute_path.empty()) paths.insert(paths.begin(), dep_.compute_path);  // what the engine ran, first
  weight_path_ = hw_.pick_path(paths);
  // Attention math runs on 16-bit tensor units on GPUs, in f32 on CPUs.
  attn_path_ = hw_.kind == "gpu" ? hw_.pick_path({"f16", "bf16", "f32"}) : hw_.pick_path({"f32"});
}

double Estimator::weight_bytes() const {
  // Norm vectors stay f32; every matrix is stored in the weight format.
  const RooflineModel& m = model_;
  double norms = static_cast<double>(m.base.n_layers * m.norm_params() + m.base.dim) * 4;
  return static_cast<double>(m.total_params() - m.base.n_layers * m.norm_params() - m.base.dim) *
             dep_.bits_per_weight / 8 + norms;
}

double Estimator::kv_bytes_per_token() const {
  return static_cast<double>(model_.kv_values_per_token()) * dep_.kv_bytes_per_value;
}

double Estimator::weight_bytes_per_device() const { return weight_bytes() / dep_.tp; }

double Estimator::kv_bytes_per_token_per_device() const {
  // Heads split across TP ranks; with fewer KV heads than ranks (or MLA's one latent) they repeat.
  int64_t kv_groups = model_.is_mla() ? 1 : model_.base.n_kv_heads;
  return kv_bytes_per_token() / std::min<int64_t>(dep_.tp, kv_groups);
}

PartCost Estimator::mlp_cost(int64_t tokens) const {
  const RooflineModel& m = model_;
  double wb = dep_.bits_per_weight / 8;
  PartCost p;
  double dense = static_cast<double>(m.n_dense_layers()) * m.dense_mlp_params();
  double moe_active = static_cast<double>(m.n_moe_layers()) *
                      (m.router_params() + m.n_experts_active * m.expert_params() + m.shared_expert_params());
  p.flops = 2.0 * tokens * (dense + moe_active);
  // With uniform routing, `tokens` tokens touch E (1 - (1 - k/E)^tokens) distinct experts per layer.
  double touched = 0;
  if (m.is_moe())
    touched = m.n_experts * (1 - std::pow(1 - static_cast<double>(m.n_experts_active) / m.n_experts,
                                          static_cast<double>(tokens)));
  double moe_read = static_cast<double>(m.n_moe_layers()) *
                    (m.router_params() + touched * m.expert_params() + m.shared_expert_params());
  p.bytes = (dense + moe_read) * wb;
  return p;
}

PassCost Estimator::pass_cost(int64_t tokens, double pairs, double kv_read, double kv_written,
                              int64_t logits) const {
  const RooflineModel& m = model_;
  double wb = dep_.bits_per_weight / 8;
  int tp = dep_.tp;
  PassCost c;
  c.tokens = tokens;
  c.logits = logits;
  double attn_w = static_cast<double>(m.base.n_layers) * m.attention_params();
  c.attention.flops = 2.0 * tokens * attn_w / tp;
  c.attention.attn_flops = pairs * m.attention_flops_per_context_token() / tp;
  c.attention.bytes = (attn_w * wb + m.base.n_layers * m.norm_params() * 4.0) / tp +
                      (kv_read + kv_written) * kv_bytes_per_token_per_device();
  PartCost mlp = mlp_cost(tokens);
  c.mlp = {mlp.flops / tp, 0, mlp.bytes / tp};
  double head = static_cast<double>(m.output_params());
  c.head = {2.0 * logits * head / tp, 0, logits > 0 ? (head * wb + m.base.dim * 4.0) / tp : 0.0};
  return c;
}

PassCost Estimator::decode_cost(int64_t batch, double context) const {
  // Each of `batch` sequences reads its `context` cached tokens, writes one, attends to
  // context + 1 positions and produces logits.
  double b = static_cast<double>(batch);
  return pass_cost(batch, b * (context + 1), b * context, b, batch);
}

PassCost Estimator::prefill_cost(int64_t tokens, int64_t depth, int64_t logits) const {
  // Token i (1-based) of the pass attends to depth + i positions (causal mask); cached
  // keys/values are read once per pass (tiled attention) and the new ones written.
  double t = static_cast<double>(tokens);
  double pairs = t * depth + 0.5 * t * (t + 1);
  return pass_cost(tokens, pairs, static_cast<double>(depth), t, logits);
}

double Estimator::allreduce_seconds(int64_t tokens) const {
  int p = dep_.tp;
  if (p <= 1) return 0;
  double s = static_cast<double>(tokens) * model_.base.dim * dep_.activation_bytes;
  // Probed: the measured time of one allreduce of S bytes. Else a ring allreduce of S
  // bytes: 2 (p-1) steps, each moving S/p bytes and paying the link latency.
  double one = hw_.allreduce ? hw_.allreduce->seconds(s)
                             : 2.0 * (p - 1) / p * s / hw_.link_bandwidth + 2.0 * (p - 1) * hw_.link_latency;
  return 2.0 * model_.base.n_layers * one;  // after attention and after the MLP
}

double Estimator::step_exchange_seconds(int64_t logits) const {
  if (dep_.tp <= 1 || !hw_.allreduce) return 0;
  // A gather moves each rank's part once; an allreduce of the same bytes moves about
  // twice as much, so it bounds the gather from above.
  const double gathered = static_cast<double>(logits) * model_.base.vocab_size * 4.0;  // f32 logits
  return hw_.allreduce->alpha_s + hw_.allreduce->seconds(gathered);
}

PassTime Estimator::time(const PassCost& cost) const {
  PassTime t;
  double bw = hw_.bandwidth_for(cost.bytes()) * eff_.bandwidth;
  double peak_w = hw_.peaks.at(weight_path_) * eff_.compute_for(weight_path_);
  double peak_a = hw_.peaks.at(attn_path_) * eff_.compute_for(attn_path_);
  double mem_bound = 0, comp_bound = 0;
  for (const auto& [name, part] : {std::pair<const char*, const PartCost*>{"attention", &cost.attention},
                                   {"mlp", &cost.mlp}, {"head", &cost.head}}) {
    double mem = part->bytes / bw;
    double comp = part->flops / peak_w + part->attn_flops / peak_a;
    t.memory_s += mem;
    t.compute_s += comp;
    (mem >= comp ? mem_bound : comp_bound) += std::max(mem, comp);
    t.part_bound[name] = mem >= comp ? "memory" : "compute";
  }
  t.overhead_s = model_.base.n_layers * eff_.layer_latency;
  t.comm_s = allreduce_seconds(cost.tokens) + step_exchange_seconds(cost.logits);
  t.seconds = mem_bound + comp_bound + t.overhead_s + t.comm_s;
  double latency = t.overhead_s + t.comm_s;
  t.bound = latency > std::max(mem_bound, comp_bound) ? "latency" : mem_bound >= comp_bound ? "memory" : "compute";
  return t;
}

double Estimator::decode_step_seconds(int64_t batch, double context) const {
  return time(decode_cost(batch, context)).seconds;
}

PassCost& PassCost::operator+=(const PassCost& o) {
  for (auto [a, b] : {std::pair{&attention, &o.attention}, std::pair{&mlp, &o.mlp}, std::pair{&head, &o.head}}) {
    a->flops += b->flops;
    a->attn_flops += b->attn_flops;
    a->bytes += b->bytes;
  }
  tokens += o.tokens;
  logits += o.logits;
  return *this;
}

std::vector<PassCost> Estimator::prefill_passes(int64_t sequences, int64_t prompt, int64_t depth) const {
  // Each piece of a sequence in a pass reads that sequence's cache once (tiled attention);
  // its token i (1-based) attends to the cached positions before it plus i (causal mask).
  std::vector<PassCost> passes;
  const int64_t total = sequences * prompt;
  for (int64_t start = 0; start < total; start += dep_.ubatch) {
    const int64_t end = std::min(total, start + dep_.ubatch);
    double pairs = 0, kv_read = 0;
    int64_t logits = 0;
    for (int64_t row = start; row < end;) {
      const int64_t done = row % prompt;  // of this sequence, before the pass
      const int64_t n = std::min(end - row, prompt - done);
      const double cached = static_cast<double>(depth + done), t = static_cast<double>(n);
      pairs += t * cached + 0.5 * t * (t + 1);
      kv_read += cached;
      if (done + n == prompt) ++logits;
      row += n;
    }
    passes.push_back(pass_cost(end - start, pairs, kv_read, static_cast<double>(end - start), logits));
  }
  return passes;
}

PassCost Estimator::prefill_total_cost(int64_t prompt, int64_t depth) const {
  PassCost total;
  for (const PassCost& pass : prefill_passes(1, prompt, depth)) total += pass;
  return total;
}

double Estimator::prefill_seconds(int64_t prompt, int64_t depth) const {
  double s = 0;
  for (const PassCost& pass : prefill_passes(1, prompt, depth)) s += time(pass).seconds;
  return s;
}

std::optional<int64_t> Estimator::crossover_batch(double context) const {
  auto compute_wins = [&](int64_t b) {
    PassTime t = time(decode_cost(b, context));
    return t.compute_s >= t.memory_s;
  };
  if (compute_wins(1)) return 1;
  int64_t hi = 2;
  while (!compute_wins(hi)) {
    if (hi >= (int64_t{1} << 20)) return std::nullopt;
    hi *= 2;
  }
  int64_t lo = hi / 2;  // lo loses, hi wins
  while (hi - lo > 1) {
    int64_t mid = (lo + hi) / 2;
    (compute_wins(mid) ? hi : lo) = mid;
  }
  return hi;
}

int64_t Estimator::max_batch(int64_t context) const {
  double free = hw_.memory_bytes * eff_.memory_usable - weight_bytes_per_device();
  double per_seq = static_cast<double>(context) * kv_bytes_per_token_per_device();
  if (free <= 0 || per_seq <= 0) return 0;
  return static_cast<int64_t>(std::floor(free / per_seq)) * replicas();
}

double speculative_tokens_per_step(double alpha, double k) {
  if (alpha >= 1) return k + 1.0;
  return (1 - std::pow(alpha, k + 1)) / (1 - alpha);
}

double speculative_speedup(double alpha, int k, double c, double verify_cost_ratio) {
  return speculative_tokens_per_step(alpha, k) / (k * c + verify_cost_ratio);
}

double per_token_acceptance(double mean_accepted_length, double k) {
  if (mean_accepted_length <= 0) return 0;
  if (mean_accepted_length >= k) return 1;
  double lo = 0, hi = 1;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (speculative_tokens_per_step(mid, k) - 1 < mean_accepted_length ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace tps
