#pragma once
// Reads a model's shape from GGUF metadata ({arch}.embedding_length, ...). The
// architecture decides only conventions the metadata cannot express (qwen2: q/k/v
// biases and rotate-halves RoPE); everything else comes from the keys.
#include "formats/gguf.h"
#include "model/model_config.h"

namespace tps {

// Throws tps::Error naming the architecture when it is not supported, or the key when
// a required one is missing or inconsistent.
ModelConfig read_model_config(const GgufFile& file);

// Architectures the forward pass implements.
bool is_supported_architecture(const std::string& arch);

}  // namespace tps
