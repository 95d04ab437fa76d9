#pragma once
// The weights of a decoder-only transformer bound in place on a GGUF file. The forward
// pass reaches every weight through these structs (never by tensor name), so a later
// tensor-parallel or GPU backend can bind a shard or a device copy instead.
#include <vector>

#include "formats/gguf.h"
#include "kernels/matmul.h"
#include "model/model_config.h"

namespace tps {

struct LayerWeights {
  std::vector<float> attn_norm;      // [dim]
  WeightMatrix wq, wk, wv, wo;       // [q_dim x dim], [kv_dim x dim] x2, [dim x q_dim]
  std::vector<float> bq, bk, bv;     // empty unless config.qkv_bias
  std::vector<float> ffn_norm;       // [dim]
  WeightMatrix w_gate, w_up, w_down; // [ffn x dim] x2, [dim x ffn]
};

struct ModelWeights {
  WeightMatrix token_embd;  // [vocab x dim], read one row per token
  std::vector<float> output_norm;
  WeightMatrix output;      // [vocab x dim]; token_embd when tied
  std::vector<LayerWeights> layers;
};

// Binds and checks every tensor against `config`, filling config.vocab_size and
// config.tied_output from the tensors. Throws tps::Error naming the tensor when one is
// missing, misshapen, or of a type the engine cannot compute with.
ModelWeights bind_model_weights(const GgufFile& file, ModelConfig& config);

}  // namespace tps
