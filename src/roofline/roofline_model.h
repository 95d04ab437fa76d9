#pragma once
// A model's shape as the roofline needs it: the shared ModelConfig (dense GQA transformer)
// plus mixture-of-experts and multi-head latent attention (MLA) fields. Counts are exact
// parameter counts per part, so bytes and FLOPs follow from the number formats.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace tps {

struct RooflineModel {
  ModelConfig base;  // dim, layers, heads, KV heads, head_dim, ffn_dim (dense layers), vocab, tying, biases

  // Mixture of experts (Mixtral, DeepSeek): 0 experts = dense.
  int64_t n_experts = 0;           // routed experts per MoE layer
  int64_t n_experts_active = 0;    // routed experts per token (top-k)
  int64_t expert_ffn_dim = 0;      // hidden width of one routed expert
  int64_t shared_ffn_dim = 0;      // total hidden width of always-on shared experts
  int64_t first_dense_layers = 0;  // leading layers with a dense MLP of width base.ffn_dim

  // Multi-head latent attention (DeepSeek-V2/V3): 0 = ordinary (GQA) attention.
  int64_t kv_lora_rank = 0;        // the compressed KV latent cached per token and layer
  int64_t q_lora_rank = 0;         // 0: queries projected directly
  int64_t qk_rope_head_dim = 0;    // rotary part of each query/key head (its key is shared and cached)
  int64_t qk_nope_head_dim = 0;
  int64_t v_head_dim = 0;

  bool is_moe() const { return n_experts > 0; }
  bool is_mla() const { return kv_lora_rank > 0; }
  bool is_moe_layer(int64_t layer) const { return is_moe() && layer >= first_dense_layers; }

  // Per layer (matrix weights and biases; norms counted in norm_params).
  int64_t attention_params() const;
  int64_t norm_params() const;                       // per layer
  int64_t router_params() const;                     // per MoE layer
  int64_t dense_mlp_params() const;                  // a dense layer's MLP
  int64_t expert_params() const;                     // one routed expert
  int64_t shared_expert_params() const;
  int64_t n_moe_layers() const { return is_moe() ? base.n_layers - first_dense_layers : 0; }
  int64_t n_dense_layers() const { return base.n_layers - n_moe_layers(); }

  int64_t embedding_params() const { return base.vocab_size * base.dim; }
  int64_t output_params() const { return base.vocab_size * base.dim; }  // read each step, tied or not
  int64_t total_params() const;                      // resident: what must sit in memory
  int64_t active_params() const;                     // touched per token
  // Values cached per token across all layers (K and V, or MLA's latent + rope key).
  int64_t kv_values_per_token() const;
  // Attention score + weighted-sum FLOPs per query token per cached token, summed over layers.
  int64_t attention_flops_per_context_token() const;
};

// Built-in shapes: the shared model presets plus larger, MoE and MLA models.
struct RooflinePreset {
  std::string name;
  std::string description;
  RooflineModel model;
};
const std::vector<RooflinePreset>& roofline_presets();
RooflineModel find_roofline_preset(const std::string& name);  // throws tps::Error listing names
RooflineModel roofline_model_from(const ModelConfig& config);

// Hugging Face config.json (llama, mistral, qwen2, mixtral, qwen2_moe, deepseek_v2/v3...).
RooflineModel roofline_model_from_hf_config(const nlohmann::json& j, const std::string& name);
RooflineModel load_hf_config(const std::string& path);

// The shape fields written into bench results ("shape" object, docs/bench-format.md).
nlohmann::json roofline_model_to_json(const RooflineModel& m);
RooflineModel roofline_model_from_json(const nlohmann::json& j);

}  // namespace tps
