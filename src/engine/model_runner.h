#pragma once
// The engine's view of a loaded Model: its KV cache of paged blocks, shaped by a
// KvGeometry, and the thread pool its forward pass runs on (its own, or the target's
// for a draft model, which runs on the same cores between the target's steps). On the
// leader of a tensor-parallel group, every call is also sent to the other ranks
// (shard_steps.h), which replay it on their slices.
#include <memory>

#include "core/thread_pool.h"
#include "engine/batch_model.h"
#include "engine/shard_steps.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace tps {

class ModelRunner : public BatchModel {
 public:
  ModelRunner(Model& model, const KvGeometry& geometry, int n_threads)
      : model_(model), geometry_(geometry), kv_(model.shard_config(), geometry.blocks, geometry.block_tokens),
        own_pool_(std::make_unique<ThreadPool>(n_threads)), pool_(*own_pool_) {
    if (leads_ranks()) send_open(*model_.tensor_parallel(), geometry_, pool_.size());
  }
  ModelRunner(Model& model, const KvGeometry& geometry, ThreadPool& shared_pool)
      : model_(model), geometry_(geometry), kv_(model.shard_config(), geometry.blocks, geometry.block_tokens),
        pool_(shared_pool) {
    if (leads_ranks()) send_open(*model_.tensor_parallel(), geometry_, pool_.size());
  }
  ~ModelRunner() override {
    if (leads_ranks()) send_close(*model_.tensor_parallel());
  }
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  int32_t vocab_size() const override { return static_cast<int32_t>(model_.config().vocab_size); }
  KvGeometry kv_geometry() const override { return geometry_; }
  void forward(const ForwardBatch& batch, float* logits) override {
    if (leads_ranks()) send_forward(*model_.tensor_parallel(), batch);
    model_.forward(batch, kv_, logits, pool_);
  }
  void copy_block(int32_t from, int32_t to) override {
    if (leads_ranks()) send_copy_block(*model_.tensor_parallel(), from, to);
    kv_.copy_block(from, to);
  }
  const KvCache& kv_cache() const { return kv_; }
  ThreadPool& pool() { return pool_; }
  Model& model() { return model_; }

 private:
  bool leads_ranks() const { return model_.tensor_parallel() != nullptr && model_.tensor_parallel()->leader(); }
  Model& model_;
  KvGeometry geometry_;
  KvCache kv_;
  std::unique_ptr<ThreadPool> own_pool_;
  ThreadPool& pool_;
};

}  // namespace tps
