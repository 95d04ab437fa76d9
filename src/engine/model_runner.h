#pragma once
// The engine's view of a loaded Model: its KV cache of paged blocks and the thread
// pool its forward pass runs on.
#include "core/thread_pool.h"
#include "engine/batch_model.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace tps {

class ModelRunner : public BatchModel {
 public:
  ModelRunner(Model& model, int64_t n_blocks, int64_t block_tokens, int n_threads)
      : model_(model), kv_(model.config(), n_blocks, block_tokens), pool_(n_threads) {}

  int32_t vocab_size() const override { return static_cast<int32_t>(model_.config().vocab_size); }
  void forward(const ForwardBatch& batch, float* logits) override { model_.forward(batch, kv_, logits, pool_); }
  void copy_block(int32_t from, int32_t to) override { kv_.copy_block(from, to); }
  const KvCache& kv_cache() const { return kv_; }

 private:
  Model& model_;
  KvCache kv_;
  ThreadPool pool_;
};

}  // namespace tps
