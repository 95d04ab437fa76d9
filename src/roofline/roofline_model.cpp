#include "roofline/roofline_model.h"

#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace tps {

int64_t RooflineModel::attention_params() const {
  const ModelConfig& c = base;
  if (is_mla()) {
    int64_t qk_head = qk_nope_head_dim + qk_rope_head_dim;
    int64_t q = q_lora_rank == 0 ? c.dim * c.n_heads * qk_head
                                 : c.dim * q_lora_rank + q_lora_rank + q_lora_rank * c.n_heads * qk_head;
    int64_t kv_a = c.dim * (kv_lora_rank + qk_rope_head_dim) + kv_lora_rank;  // + latent norm
    int64_t kv_b = kv_lora_rank * c.n_heads * (qk_nope_head_dim + v_head_dim);
    int64_t o = c.n_heads * v_head_dim * c.dim;
    return q + kv_a + kv_b + o;
  }
  int64_t p = c.dim * c.q_dim() + 2 * c.dim * c.kv_dim() + c.q_dim() * c.dim;
  if (c.qkv_bias) p += c.q_dim() + 2 * c.kv_dim();
  return p;
}

int64_t RooflineModel::norm_params() const { return 2 * base.dim; }
int64_t RooflineModel::router_params() const { return is_moe() ? base.dim * n_experts : 0; }
int64_t RooflineModel::dense_mlp_params() const { return 3 * base.dim * base.ffn_dim; }
int64_t RooflineModel::expert_params() const { return 3 * base.dim * expert_ffn_dim; }
int64_t RooflineModel::shared_expert_params() const { return 3 * base.dim * shared_ffn_dim; }

int64_t RooflineModel::total_params() const {
  int64_t layers = base.n_layers * (attention_params() + norm_params()) + n_dense_layers() * dense_mlp_params() +
                   n_moe_layers() * (router_params() + n_experts * expert_params() + shared_expert_params());
  return layers + embedding_params() * (base.tied_output ? 1 : 2) + base.dim;
}

int64_t RooflineModel::active_params() const {
  int64_t layers = base.n_layers * (attention_params() + norm_params()) + n_dense_layers() * dense_mlp_params() +
                   n_moe_layers() * (router_params() + n_experts_active * expert_params() + shared_expert_params());
  return layers + embedding_params() * (base.tied_output ? 1 : 2) + base.dim;
}

int64_t RooflineModel::kv_values_per_token() const {
  if (is_mla()) return base.n_layers * (kv_lora_rank + qk_rope_head_dim);
  return base.n_layers * 2 * base.kv_dim();
}

int64_t RooflineModel::attention_flops_per_context_token() const {
  // Per cached token: q.k over the key width and p*v over the value width, 2 FLOPs per MAC.
  // MLA decodes in the latent space (weights absorbed): keys are latent+rope wide, values latent wide.
  if (is_mla()) return base.n_layers * base.n_heads * 2 * (2 * kv_lora_rank + qk_rope_head_dim);
  return base.n_layers * base.n_heads * 2 * 2 * base.head_dim;
}

RooflineModel roofline_model_from(const ModelConfig& config) {
  RooflineModel m;
  m.base = config;
  return m;
}

namespace {

std::vector<RooflinePreset> build_presets() {
  std::vector<RooflinePreset> p;
  for (const auto& mp : model_presets()) p.push_back({mp.name, mp.description, roofline_model_from(mp.config)});
  // Shapes from each model's published config.json.
  p.push_back({"llama-3-70b", "meta-llama/Meta-Llama-3-70B",
               roofline_model_from(make_model_config("llama", 8192, 80, 64, 8, 28672, 128256, 8192, 500000.0f, 1e-5f, false))});
  p.push_back({"mistral-7b", "mistralai/Mistral-7B-v0.1",
               roofline_model_from(make_model_config("llama", 4096, 32, 32, 8, 14336, 32000, 32768, 10000.0f, 1e-5f, false))});
  p.push_back({"qwen2.5-72b", "Qwen/Qwen2.5-72B",
               roofline_model_from(make_model_config("qwen2", 8192, 80, 64, 8, 29568, 152064, 131072, 1000000.0f, 1e-6f, false))});
  {
    RooflineModel m = roofline_model_from(make_model_config("llama", 4096, 32, 32, 8, 14336, 32000, 32768, 1000000.0f, 1e-5f, false));
    m.base.arch = "mixtral";
    m.n_experts = 8;
    m.n_experts_active = 2;
    m.expert_ffn_dim = 14336;
    p.push_back({"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1 (46.7B resident, 12.9B active)", m});
  }
  {
    RooflineModel m = roofline_model_from(make_model_config("deepseek2", 2048, 27, 16, 16, 10944, 102400, 163840, 10000.0f, 1e-6f, false));
    m.base.head_dim = 128 + 64;
    m.n_experts = 64;
    m.n_experts_active = 6;
    m.expert_ffn_dim = 1408;
    m.shared_ffn_dim = 2 * 1408;
    m.first_dense_layers = 1;
    m.kv_lora_rank = 512;
    m.qk_rope_head_dim = 64;
    m.qk_nope_head_dim = 128;
    m.v_head_dim = 128;
    p.push_back({"deepseek-v2-lite", "deepseek-ai/DeepSeek-V2-Lite (MLA + MoE, 15.7B resident, 2.4B active)", m});
  }
  for (auto& preset : p) preset.model.base.name = preset.name;
  return p;
}

}  // namespace

const std::vector<RooflinePreset>& roofline_presets() {
  static const std::vector<RooflinePreset> presets = build_presets();
  return presets;
}

RooflineModel find_roofline_preset(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& p : roofline_presets()) {
    if (p.name == name) return p.model;
    names.push_back(p.name);
  }
  fail("unknown model preset '{}' (known: {})", name, fmt::join(names, ", "));
}

namespace {

int64_t need_int(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() <= 0)
    fail("{}: '{}' is missing or not a positive integer", where, key);
  return j[key].get<int64_t>();
}

int64_t opt_int(const nlohmann::json& j, const char* key, int64_t fallback) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : fallback;
}

}  // namespace

RooflineModel roofline_model_from_hf_config(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) fail("{}: expected a JSON object", where);
  RooflineModel m;
  ModelConfig& c = m.base;
  c.arch = j.value("model_type", "llama");
  c.name = where;
  c.dim = need_int(j, "hidden_size", where);
  c.n_layers = need_int(j, "num_hidden_layers", where);
  c.n_heads = need_int(j, "num_attention_heads", where);
  c.n_kv_heads = opt_int(j, "num_key_value_heads", c.n_heads);
  c.head_dim = opt_int(j, "head_dim", c.dim / c.n_heads);
  c.rope_dims = c.head_dim;
  c.ffn_dim = need_int(j, "intermediate_size", where);
  c.vocab_size = need_int(j, "vocab_size", where);
  c.context_length = opt_int(j, "max_position_embeddings", c.context_length);
  if (j.contains("rope_theta") && j["rope_theta"].is_number()) c.rope_base = j["rope_theta"].get<float>();
  c.tied_output = j.value("tie_word_embeddings", false);
  // qwen2 always has q/k/v biases; llama-family configs say so with attention_bias.
  c.qkv_bias = c.arch == "qwen2" || c.arch == "qwen2_moe" || j.value("attention_bias", false);

  m.n_experts = opt_int(j, "num_local_experts", opt_int(j, "n_routed_experts", opt_int(j, "num_experts", 0)));
  if (m.n_experts > 0) {
    m.n_experts_active = need_int(j, "num_experts_per_tok", where);
    m.expert_ffn_dim = opt_int(j, "moe_intermediate_size", c.ffn_dim);
    m.shared_ffn_dim = opt_int(j, "shared_expert_intermediate_size",
                               opt_int(j, "n_shared_experts", 0) * m.expert_ffn_dim);
    m.first_dense_layers = opt_int(j, "first_k_dense_replace", 0);
    if (m.n_experts_active > m.n_experts) fail("{}: num_experts_per_tok exceeds the number of experts", where);
  }
  m.kv_lora_rank = opt_int(j, "kv_lora_rank", 0);
  if (m.kv_lora_rank > 0) {
    m.q_lora_rank = opt_int(j, "q_lora_rank", 0);  // null in DeepSeek-V2-Lite: direct queries
    m.qk_rope_head_dim = need_int(j, "qk_rope_head_dim", where);
    m.qk_nope_head_dim = need_int(j, "qk_nope_head_dim", where);
    m.v_head_dim = need_int(j, "v_head_dim", where);
    c.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  }
  if (c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0)
    fail("{}: num_key_value_heads ({}) must divide num_attention_heads ({})", where, c.n_kv_heads, c.n_heads);
  return m;
}

RooflineModel load_hf_config(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail("cannot open config '{}'", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::parse_error& e) {
    fail("config '{}' is not valid JSON: {}", path, e.what());
  }
  return roofline_model_from_hf_config(j, path);
}

nlohmann::json roofline_model_to_json(const RooflineModel& m) {
  const ModelConfig& c = m.base;
  nlohmann::json j = {{"arch", c.arch}, {"dim", c.dim}, {"n_layers", c.n_layers}, {"n_heads", c.n_heads},
                      {"n_kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim}, {"ffn_dim", c.ffn_dim},
                      {"vocab_size", c.vocab_size}, {"tied_output", c.tied_output}, {"qkv_bias", c.qkv_bias}};
  if (m.is_moe()) {
    j["n_experts"] = m.n_experts;
    j["n_experts_active"] = m.n_experts_active;
    j["expert_ffn_dim"] = m.expert_ffn_dim;
    j["shared_ffn_dim"] = m.shared_ffn_dim;
    j["first_dense_layers"] = m.first_dense_layers;
  }
  if (m.is_mla()) {
    j["kv_lora_rank"] = m.kv_lora_rank;
    j["q_lora_rank"] = m.q_lora_rank;
    j["qk_rope_head_dim"] = m.qk_rope_head_dim;
    j["qk_nope_head_dim"] = m.qk_nope_head_dim;
    j["v_head_dim"] = m.v_head_dim;
  }
  return j;
}

RooflineModel roofline_model_from_json(const nlohmann::json& j) {
  const std::string where = "model shape";
  if (!j.is_object()) fail("{}: expected an object", where);
  RooflineModel m;
  ModelConfig& c = m.base;
  c.arch = j.value("arch", "llama");
  c.dim = need_int(j, "dim", where);
  c.n_layers = need_int(j, "n_layers", where);
  c.n_heads = need_int(j, "n_heads", where);
  c.n_kv_heads = opt_int(j, "n_kv_heads", c.n_heads);
  c.head_dim = opt_int(j, "head_dim", c.dim / c.n_heads);
  c.ffn_dim = need_int(j, "ffn_dim", where);
  c.vocab_size = need_int(j, "vocab_size", where);
  c.tied_output = j.value("tied_output", false);
  c.qkv_bias = j.value("qkv_bias", false);
  m.n_experts = opt_int(j, "n_experts", 0);
  m.n_experts_active = opt_int(j, "n_experts_active", 0);
  m.expert_ffn_dim = opt_int(j, "expert_ffn_dim", 0);
  m.shared_ffn_dim = opt_int(j, "shared_ffn_dim", 0);
  m.first_dense_layers = opt_int(j, "first_dense_layers", 0);
  m.kv_lora_rank = opt_int(j, "kv_lora_rank", 0);
  m.q_lora_rank = opt_int(j, "q_lora_rank", 0);
  m.qk_rope_head_dim = opt_int(j, "qk_rope_head_dim", 0);
  m.qk_nope_head_dim = opt_int(j, "qk_nope_head_dim", 0);
  m.v_head_dim = opt_int(j, "v_head_dim", 0);
  return m;
}

}  // namespace tps
