#pragma once
// Karpathy's llama2.c model files: the legacy float checkpoint (7 x int32 header), the
// "ak42" version 1 (fp32) and version 2 (int8 groups) exports, and the tokenizer file.
// Read on a memory map and converted to a GGUF that llama.cpp's own converter would write.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"

namespace tps {

// One weight tensor as stored in the checkpoint: row-major [rows][cols] floats, or
// int8 values followed by one fp32 scale per group of the *flattened* tensor (groups
// may straddle rows when cols is not a multiple of the group size).
struct Llama2cTensor {
  std::string name;    // GGUF name, e.g. "blk.0.attn_q.weight"
  int64_t rows = 0;    // output features (1 for norm vectors)
  int64_t cols = 0;    // input features (contiguous)
  const uint8_t* data = nullptr;
  int64_t group_size = 0;  // 0: fp32; else int8 with fp32 scales after the values

  int64_t n_elements() const { return rows * cols; }
  size_t stored_bytes() const;
  // Writes all n_elements() values as f32.
  void read_f32(float* dst) const;
};

struct Llama2cCheckpoint {
  int version = 0;  // 0 legacy, 1 fp32 export, 2 int8 export
  int64_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0;
  int64_t vocab_size = 0, seq_len = 0;
  bool shared_classifier = true;
  int64_t group_size = 0;  // version 2 only
  // In GGUF order: token_embd, output_norm, output (the embedding again when shared),
  // then per layer attn_q, attn_k, attn_v, attn_output, attn_norm, ffn_gate, ffn_down,
  // ffn_up, ffn_norm.
  std::vector<Llama2cTensor> tensors;

  int64_t head_dim() const { return dim / n_heads; }
};

// Maps a checkpoint and locates every tensor. Throws tps::Error with one line naming the
// file and what does not add up (unknown magic or version, bad header, wrong size).
class Llama2cModel {
 public:
  static std::unique_ptr<Llama2cModel> open(const std::string& path);
  const Llama2cCheckpoint& checkpoint() const { return ckpt_; }

 private:
  explicit Llama2cModel(const std::string& path) : file_(path) {}
  MappedFile file_;
  Llama2cCheckpoint ckpt_;
};

struct Llama2cVocab {
  std::vector<std::string> tokens;  // raw bytes as stored
  std::vector<float> scores;
};

// Reads llama2.c's tokenizer file (int32 max_token_length, then per token f32 score,
// int32 length, bytes); it must hold exactly vocab_size tokens.
Llama2cVocab read_llama2c_vocab(const std::string& path, int64_t vocab_size);

// Writes `model` with `vocab` as an F32 llama GGUF: the same keys, token texts, token
// types and tensors as llama.cpp's convert-llama2c-to-ggml.
void write_llama2c_gguf(const Llama2cModel& model, const Llama2cVocab& vocab, const std::string& name,
                        const std::string& out_path);

}  // namespace tps
