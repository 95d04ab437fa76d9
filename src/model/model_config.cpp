#include "model/model_config.h"

namespace tps {

int64_t ModelConfig::parameter_count() const {
  int64_t attn = dim * q_dim() + 2 * dim * kv_dim() + q_dim() * dim;
  if (qkv_bias) attn += q_dim() + 2 * kv_dim();
  int64_t mlp = 3 * dim * ffn_dim;
  int64_t per_layer = attn + mlp + 2 * dim;
  int64_t embed = vocab_size * dim;
  return n_layers * per_layer + embed * (tied_output ? 1 : 2) + dim;
}

ModelConfig make_model_config(std::string arch, int64_t dim, int64_t layers, int64_t heads, int64_t kv_heads,
                 int64_t ffn, int64_t vocab, int64_t ctx, float rope_base, float eps, bool tied) {
  ModelConfig c;
  c.arch = std::move(arch);
  c.dim = dim;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = dim / heads;
  c.rope_dims = c.head_dim;
  c.ffn_dim = ffn;
  c.vocab_size = vocab;
  c.context_length = ctx;
  c.rope_base = rope_base;
  c.rms_eps = eps;
  c.tied_output = tied;
  if (c.arch == "qwen2") {
    c.qkv_bias = true;
    c.rope_style = RopeStyle::kHalves;
  }
  return c;
}

namespace {

std::vector<ModelPreset> build_presets() {
  // Hyper-parameters from each model's published config.json.
  std::vector<ModelPreset> p = {
      {"smollm2-135m", "HuggingFaceTB/SmolLM2-135M",
       make_model_config("llama", 576, 30, 9, 3, 1536, 49152, 8192, 100000.0f, 1e-5f, true)},
      {"qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B",
       make_model_config("qwen2", 896, 24, 14, 2, 4864, 151936, 32768, 1000000.0f, 1e-6f, true)},
      {"llama-3.2-1b", "meta-llama/Llama-3.2-1B",
       make_model_config("llama", 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, 1e-5f, true)},
      {"tinyllama-1.1b", "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
       make_model_config("llama", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.0f, 1e-5f, false)},
      {"llama-2-7b", "meta-llama/Llama-2-7b-hf",
       make_model_config("llama", 4096, 32, 32, 32, 11008, 32000, 4096, 10000.0f, 1e-5f, false)},
      {"llama-3-8b", "meta-llama/Meta-Llama-3-8B",
       make_model_config("llama", 4096, 32, 32, 8, 14336, 128256, 8192, 500000.0f, 1e-5f, false)},
      {"qwen2.5-7b", "Qwen/Qwen2.5-7B",
       make_model_config("qwen2", 3584, 28, 28, 4, 18944, 152064, 131072, 1000000.0f, 1e-6f, false)},
      {"stories15m", "karpathy/tinyllamas stories15M",
       make_model_config("llama", 288, 6, 6, 6, 768, 32000, 256, 10000.0f, 1e-5f, true)},
      {"stories260k", "karpathy/tinyllamas stories260K",
       make_model_config("llama", 64, 5, 8, 4, 172, 512, 512, 10000.0f, 1e-5f, false)},
  };
  for (auto& preset : p) preset.config.name = preset.name;
  return p;
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = build_presets();
  return presets;
}

std::optional<ModelConfig> find_model_preset(const std::string& name) {
  for (const auto& p : model_presets())
    if (p.name == name) return p.config;
  return std::nullopt;
}

}  // namespace tps
