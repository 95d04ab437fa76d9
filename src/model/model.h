#pragma once
// A loaded decoder-only transformer (llama, qwen2, ...): weights bound in place on the
// GGUF memory map, the tokenizer, and the forward pass.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "model/forward_batch.h"
#include "model/forward_trace.h"
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/tensor_parallel.h"
#include "tokenizer/tokenizer.h"

namespace tps {

class Model {
 public:
  virtual ~Model() = default;
  // Throws tps::Error for unknown architectures, missing or misshapen tensors, and
  // unsupported weight types, naming the tensor. With a `group`, the model computes this
  // rank's slice of it (model_shard.h) and sums and gathers over the group.
  static std::unique_ptr<Model> load(const std::string& path, TensorParallelGroup* group = nullptr);

  virtual const ModelConfig& config() const = 0;
  // The shape of what this process computes: config() but for the heads, KV heads, FFN
  // rows and vocabulary rows of its rank when the model is split (its KV cache's shape).
  virtual const ModelConfig& shard_config() const { return config(); }
  // The group the model is split over, or nullptr.
  virtual TensorParallelGroup* tensor_parallel() const { return nullptr; }
  virtual const Tokenizer& tokenizer() const = 0;
  virtual const GgufFile& gguf() const = 0;
  virtual size_t weight_bytes() const = 0;  // bytes of all weights read per token
  // The memory each forward step streams end to end (the weight matrices), or empty:
  // `tps bench` times a plain read of it as the bandwidth baseline of decode.
  virtual std::span<const uint8_t> streamed_weights() const { return {}; }

  // Runs all rows of `batch`: writes their K/V at (sequence, position) through the
  // block tables, attends causally over each sequence's positions <= the row's, and
  // writes vocab_size logits for every row with want_logits set, in row order (on the
  // leader of a tensor-parallel group; the other ranks take nullptr).
  // Not thread-safe: one caller at a time (it owns scratch buffers).
  virtual void forward(const ForwardBatch& batch, KvCache& kv, float* logits, ThreadPool& pool) = 0;

  // The following forward() calls add their phase timings to `trace` (nullptr: off).
  void set_trace(ForwardTrace* trace) { trace_ = trace; }

 protected:
  ForwardTrace* trace_ = nullptr;
};

}  // namespace tps
