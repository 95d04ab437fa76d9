#include "model/gguf_config.h"

#include "core/error.h"

namespace tps {

bool is_supported_architecture(const std::string& arch) { return arch == "llama" || arch == "qwen2"; }

ModelConfig read_model_config(const GgufFile& f) {
  ModelConfig c;
  c.arch = f.require_string("general.architecture");
  if (!is_supported_architecture(c.arch))
    fail("{}: unsupported architecture '{}' (supported: llama, qwen2)", f.path(), c.arch);
  c.name = f.get_string("general.name", "");
  const std::string a = c.arch + ".";
  c.dim = f.require_int(a + "embedding_length");
  c.n_layers = f.require_int(a + "block_count");
  c.ffn_dim = f.require_int(a + "feed_forward_length");
  c.n_heads = f.require_int(a + "attention.head_count");
  c.n_kv_heads = f.get_int(a + "attention.head_count_kv", c.n_heads);
  c.rms_eps = static_cast<float>(f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
  c.context_length = f.get_int(a + "context_length", 2048);
  c.rope_base = static_cast<float>(f.get_float(a + "rope.freq_base", 10000.0));
  if (c.dim <= 0 || c.n_layers <= 0 || c.ffn_dim <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 ||
      c.context_length <= 0)
    fail("{}: hyper-parameters must be positive (dim {}, layers {}, ffn {}, heads {}, kv heads {}, context {})",
         f.path(), c.dim, c.n_layers, c.ffn_dim, c.n_heads, c.n_kv_heads, c.context_length);
  if (c.n_heads % c.n_kv_heads != 0)
    fail("{}: head count {} is not a multiple of the KV head count {}", f.path(), c.n_heads, c.n_kv_heads);
  c.head_dim = f.get_int(a + "attention.key_length", c.dim / c.n_heads);
  int64_t value_length = f.get_int(a + "attention.value_length", c.head_dim);
  if (c.head_dim <= 0 || value_length != c.head_dim)
    fail("{}: key length {} and value length {} must be equal and positive", f.path(), c.head_dim, value_length);
  if (c.head_dim % 2 != 0) fail("{}: head size {} must be even for rotary embeddings", f.path(), c.head_dim);
  c.rope_dims = f.get_int(a + "rope.dimension_count", c.head_dim);
  if (c.rope_dims != c.head_dim)
    fail("{}: rope dimension count {} differs from the head size {}: partial rotary embeddings are not supported",
         f.path(), c.rope_dims, c.head_dim);
  if (c.arch == "qwen2") {
    c.qkv_bias = true;
    c.rope_style = RopeStyle::kHalves;
  }
  // The vocabulary size and tied output come from the tensors (see model weights).
  return c;
}

}  // namespace tps
