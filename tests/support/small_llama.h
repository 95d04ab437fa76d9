#pragma once
// A TinyLlama-shaped model small enough for tests to synthesize and run in milliseconds,
// with rows that fit every block size (256), so each weight type is itself.
#include <cstdint>

#include "model/model_config.h"

namespace tps::test {

inline ModelConfig small_llama(int64_t vocab_size) {
  ModelConfig c = *find_model_preset("tinyllama-1.1b");
  c.dim = 256, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64, c.rope_dims = 64;
  c.ffn_dim = 512, c.vocab_size = vocab_size;
  return c;
}

}  // namespace tps::test
