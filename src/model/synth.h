#pragma once
// Random-weight GGUF models with the exact shape of a named model (as vLLM's dummy
// weights): speed depends on shapes and types, not on what the weights say. Weights are
// normal(0, 0.02), norms 1, written one tensor at a time, generated and quantized on
// all threads, and reproducible from the seed whatever the thread count. Such a model's
// greedy text never repeats; output_skew > 1 makes it fall into loops, as small trained
// models' text does, for speculative decoding to draw on.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/model_config.h"
#include "quant/ggml_type.h"

namespace tps {

// A weight type for all matrices, or llama.cpp's Q4_K_M mix (Q4_K, with Q6_K for the
// output head and for attn_v/ffn_down in the layers llama.cpp gives more bits).
struct WeightScheme {
  std::string name;  // "q4_0", "q4_k_m", ...
  GgmlType base = GgmlType::kF32;
  bool q4_k_m = false;

  uint32_t file_type() const;  // llama.cpp's general.file_type (LLAMA_FTYPE_*)
  // The type the scheme gives a matrix ("attn_v", "output", ...; layer -1 outside blocks).
  GgmlType intended_type(const std::string& kind, int64_t layer, int64_t n_layers) const;
  // That type, or its fallback (K-quant -> Q5_0/Q5_1/Q8_0, then F16) as llama.cpp does
  // when the row length is not a multiple of the block size.
  GgmlType type_for(const std::string& kind, int64_t layer, int64_t n_layers, int64_t row_length) const;
};

// nullopt when unknown. Known: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q4_k_m.
std::optional<WeightScheme> parse_weight_scheme(const std::string& name);
const std::vector<std::string>& weight_scheme_names();

// --output-skew's largest value: the first token's output row 1000 times wider.
inline constexpr float kMaxOutputSkew = 1000.0f;

struct SynthOptions {
  ModelConfig config;      // the shape; vocab_size may be replaced by --vocab-from's
  WeightScheme scheme;
  uint64_t seed = 1;
  std::string vocab_from;  // a GGUF whose tokenizer.* metadata is copied; empty: built-in BPE
  float output_skew = 1.0f;  // in [1, kMaxOutputSkew]: the first token's output row this many times wider
};

struct SynthResult {
  ModelConfig config;              // as written
  size_t file_bytes = 0;
  size_t weight_bytes = 0;         // tensor data
  std::vector<std::string> notes;  // adjustments worth telling the user (vocab, type fallbacks)
};

SynthResult synthesize_model(const SynthOptions& options, const std::string& path, ThreadPool& pool);

}  // namespace tps
