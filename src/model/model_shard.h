#pragma once
// Which slice of a model one rank of a tensor-parallel group computes, and its weights
// as views into the file's tensors (no copies: a column slice keeps the full row stride).
//   Q, K, V, gate, up: split by rows (column-parallel); their outputs stay local.
//   attention output, down: split by columns (row-parallel); each rank's product is a
//     partial sum that the group adds up.
//   output head: split by vocabulary rows; the leader gathers the logits.
// KV heads are split when the rank count divides them and replicated (each rank keeps
// the one its query heads read) when they divide the rank count.
#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "model/model_weights.h"

namespace tps {

struct ShardRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

struct ModelShard {
  int rank = 0, ranks = 1;
  ShardRange q_heads, kv_heads, ffn_rows, vocab_rows;
  std::vector<int64_t> vocab_rows_per_rank;  // for gathering the logits
};

// Throws tps::Error (one line) when the heads, KV heads or FFN cannot be split `ranks`
// ways, or a row-parallel matrix would be cut inside one of its quantization blocks.
ModelShard plan_model_shard(const ModelConfig& config, const ModelWeights& weights, int rank, int ranks);
// The shape of what the rank computes: its heads, KV heads, FFN rows and vocabulary rows.
ModelConfig shard_config(const ModelConfig& config, const ModelShard& shard);
// The rank's weights: views into `weights`; norms whole, biases sliced.
ModelWeights shard_weights(const ModelWeights& weights, const ModelConfig& config, const ModelShard& shard);

}  // namespace tps
