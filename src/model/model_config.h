#pragma once
// The shape of a decoder-only transformer, as read from GGUF metadata or a named preset.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/ops.h"  // RopeStyle

namespace tps {

struct ModelConfig {
  std::string arch = "llama";  // GGUF general.architecture
  std::string name;
  int64_t dim = 0;             // embedding length
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;        // usually dim / n_heads
  int64_t ffn_dim = 0;
  int64_t vocab_size = 0;
  int64_t context_length = 2048;
  float rope_base = 10000.0f;
  int64_t rope_dims = 0;       // rotated dimensions per head (head_dim when absent)
  float rms_eps = 1e-5f;
  bool tied_output = false;    // output head shares token_embd
  bool qkv_bias = false;       // qwen2
  RopeStyle rope_style = RopeStyle::kAdjacent;  // llama: (0,1),(2,3)...; qwen2: halves

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  // Weights of all matrices and vectors (embedding counted once when tied).
  int64_t parameter_count() const;
};

// Shapes of public models, so speed can be measured on random weights of the exact
// size (as vLLM's dummy weights do) and the roofline can reason about them.
struct ModelPreset {
  std::string name;         // e.g. "tinyllama-1.1b"
  std::string description;  // the public model it copies
  ModelConfig config;
};

const std::vector<ModelPreset>& model_presets();
// A dense model's config from the fields of its published config.json; qwen2 gets its
// q/k/v biases and rotate-halves RoPE.
ModelConfig make_model_config(std::string arch, int64_t dim, int64_t layers, int64_t heads, int64_t kv_heads,
                              int64_t ffn, int64_t vocab, int64_t ctx, float rope_base, float eps, bool tied);
// nullopt when the name is unknown.
std::optional<ModelConfig> find_model_preset(const std::string& name);

}  // namespace tps
