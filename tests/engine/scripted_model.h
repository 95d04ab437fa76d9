#pragma once
// A Model whose logits follow a script: step i puts all mass on script[i]. It lets the
// generator's control flow (end of generation, limits) be tested exactly, with the real
// tokenizer of a fixture model.
#include <algorithm>
#include <memory>
#include <vector>

#include "model/model.h"

namespace tps::testing {

class ScriptedModel final : public Model {
 public:
  ScriptedModel(std::unique_ptr<Model> base, std::vector<int32_t> script)
      : base_(std::move(base)), script_(std::move(script)) {}

  const ModelConfig& config() const override { return base_->config(); }
  const Tokenizer& tokenizer() const override { return base_->tokenizer(); }
  const GgufFile& gguf() const override { return base_->gguf(); }
  size_t weight_bytes() const override { return base_->weight_bytes(); }

  void forward(const ForwardBatch& batch, KvCache&, float* logits, ThreadPool&) override {
    const int64_t vocab = config().vocab_size;
    for (size_t r = 0; r < batch.size(); ++r) {
      if (!batch.want_logits[r]) continue;
      std::fill(logits, logits + vocab, 0.0f);
      logits[script_.at(step_++)] = 100.0f;
      logits += vocab;
    }
  }

  size_t steps() const { return step_; }

 private:
  std::unique_ptr<Model> base_;
  std::vector<int32_t> script_;
  size_t step_ = 0;
};

}  // namespace tps::testing
