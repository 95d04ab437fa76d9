#pragma once
// Continuous batching: one thread runs the scheduler loop, one forward pass per step
// over every running sequence (decode tokens plus prefill chunks up to the token
// budget), samples each sequence's next token and pushes it to the request's stream.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/batch_model.h"
#include "engine/block_pool.h"
#include "engine/request_stream.h"
#include "engine/scheduler.h"

namespace tps {

// The engine's own limits; the KV cache's shape (blocks, block size, context) comes
// from the model (BatchModel::kv_geometry).
struct EngineConfig {
  int32_t max_seqs = 16;
  int32_t max_batch_tokens = 512;  // rows of one forward pass (the chunked-prefill budget)
  bool prefix_cache = true;
  int32_t max_queue = 64;  // requests waiting for admission beyond this are refused
  std::function<bool(int32_t)> is_eog;
};

struct EngineStats {
  int32_t running = 0, waiting = 0;
  int32_t blocks_used = 0, blocks_free = 0, blocks_cached = 0;
  int64_t prefix_lookup_tokens = 0, prefix_hit_tokens = 0;
  int64_t steps = 0, preemptions = 0;
};

struct StepInfo {
  int32_t rows = 0, sequences = 0, decode_rows = 0;
  double seconds = 0;
};

class Engine {
 public:
  Engine(BatchModel& model, const EngineConfig& config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const EngineConfig& config() const { return config_; }
  // A sequence stops (finish "length") at this many tokens, prompt included.
  int32_t context() const { return context_; }
  // nullptr when the waiting queue is full. The prompt must be non-empty and shorter
  // than ctx_size (the caller validates).
  std::shared_ptr<RequestStream> submit(GenerationRequest request);
  EngineStats stats() const;
  // Called on the scheduler thread after every step; set before the first submit.
  void set_step_observer(std::function<void(const StepInfo&)> observer) { observer_ = std::move(observer); }

 private:
  struct Active;
  void loop();
  void step();
  void drop_cancelled();
  void sample_and_emit(Active& a, float* logits);
  void finish(Active& a, FinishReason reason);
  void publish_stats();

  BatchModel& model_;
  EngineConfig config_;
  int32_t context_;
  KvBlockPool pool_;
  Scheduler scheduler_;
  std::vector<int32_t> eog_ids_;
  std::function<void(const StepInfo&)> observer_;

  std::mutex mutex_;  // guards inbox_, stop_, wake_, queued_
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Active>> inbox_;
  bool stop_ = false, wake_ = false;
  int32_t queued_ = 0;  // inbox plus scheduler's waiting queue
  uint64_t next_id_ = 1;

  std::vector<std::unique_ptr<Active>> active_;  // scheduler thread only
  ForwardBatch batch_;
  std::vector<float> logits_;

  mutable std::mutex stats_mutex_;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace tps
