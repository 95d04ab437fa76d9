#pragma once
// The CPU forward pass of a llama-family decoder (llama, qwen2): the Model the engine
// runs. Rows of a batch go through each weight matrix together, so prefill reads every
// weight once per step, and decode rows of many sequences share that read. Split over a
// tensor-parallel group, it computes its rank's slice (model_shard.h) with the same code:
// a whole model is the slice of a group of one.
#include <memory>
#include <vector>

#include "kernels/packed_weights.h"
#include "model/model.h"
#include "model/model_shard.h"
#include "model/model_weights.h"

namespace tps {

class Transformer final : public Model {
 public:
  Transformer(std::unique_ptr<GgufFile> file, ModelConfig config, ModelWeights weights,
              std::unique_ptr<Tokenizer> tokenizer, TensorParallelGroup* group = nullptr);

  const ModelConfig& config() const override { return config_; }
  const ModelConfig& shard_config() const override { return local_; }
  TensorParallelGroup* tensor_parallel() const override { return group_; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  const GgufFile& gguf() const override { return *file_; }
  size_t weight_bytes() const override { return weight_bytes_; }
  void forward(const ForwardBatch& batch, KvCache& kv, float* logits, ThreadPool& pool) override;
  std::span<const uint8_t> streamed_weights() const override { return {arena_.get(), arena_bytes_}; }

 private:
  // Throws tps::Error for token ids, positions or block ids the batch cannot use.
  void check_batch(const ForwardBatch& batch, const KvCache& kv) const;
  void grow_scratch(int64_t rows);
  void embed(const ForwardBatch& batch, ThreadPool& pool);
  void attention_block(int64_t layer, const ForwardBatch& batch, KvCache& kv, ThreadPool& pool);
  void feed_forward_block(int64_t layer, int64_t rows, ThreadPool& pool);
  void output_head(const ForwardBatch& batch, float* logits, ThreadPool& pool);
  void pack_matrices();
  // Adds up the ranks' partial sums of a row-parallel matmul (nothing for a whole model).
  void sum_over_ranks(float* data, size_t n);

  TensorParallelGroup* group_;
  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  ModelShard shard_;
  ModelConfig local_;  // the shard's shape
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;
  size_t weight_bytes_ = 0;
  // Every matrix streamed per token lives in one huge-page arena, repacked into panels
  // (WeightMatrix::packed points at them) off the file mapping's 4 KiB pages.
  HugePageBuffer arena_;
  size_t arena_bytes_ = 0;
  std::vector<PackedWeights> packed_;

  // Scratch activations, [rows][width] each, grown on demand and reused across calls.
  int64_t scratch_rows_ = 0;
  std::vector<float> x_, xn_, q_, k_, v_, att_, proj_, gate_, up_;
  std::vector<float> shard_logits_, gathered_logits_;  // the vocabulary slice, and all slices on the leader
  std::vector<AttentionBlock> attention_scratch_;
};

}  // namespace tps
