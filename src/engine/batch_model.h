#pragma once
// What the engine needs of a model: the shape of its paged KV cache, one forward pass
// over a batch of rows from many sequences whose K/V live in blocks it names, and block
// copies for copy-on-write. The real one wraps Model + KvCache (model_runner.h); tests
// use a small fake.
#include <cstdint>

#include "engine/kv_geometry.h"
#include "model/forward_batch.h"

namespace tps {

class BatchModel {
 public:
  virtual ~BatchModel() = default;
  virtual int32_t vocab_size() const = 0;
  virtual KvGeometry kv_geometry() const = 0;
  // Writes vocab_size logits per row with want_logits, in row order.
  virtual void forward(const ForwardBatch& batch, float* logits) = 0;
  virtual void copy_block(int32_t from, int32_t to) = 0;
};

}  // namespace tps
