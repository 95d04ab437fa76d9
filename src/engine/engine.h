#pragma once
// Continuous batching: one thread runs the scheduler loop, one forward pass per step
// over every running sequence (decode tokens plus prefill chunks up to the token
// budget), samples each sequence's next token and pushes it to the request's stream.
// With speculative decoding, a decoding sequence's step also carries the drafts of an
// n-gram lookup or a draft model, verified together in that one forward pass.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/batch_model.h"
#include "engine/block_pool.h"
#include "engine/draft_length.h"
#include "engine/request_stream.h"
#include "engine/scheduler.h"
#include "engine/speculative.h"

namespace tps {

// The engine's own limits; the KV cache's shape (blocks, block size, context) comes
// from the model (BatchModel::kv_geometry).
struct EngineConfig {
  int32_t max_seqs = 16;
  int32_t max_batch_tokens = 512;  // rows of one forward pass (the chunked-prefill budget)
  bool prefix_cache = true;
  int32_t max_queue = 64;  // requests waiting for admission beyond this are refused
  std::function<bool(int32_t)> is_eog;
  SpeculativeConfig speculative;
  // For SpecMode::kDraftModel: the draft, with the target's KV geometry (its cache
  // mirrors the target's block ids) and vocabulary.
  BatchModel* draft = nullptr;
};

struct EngineStats {
  int32_t running = 0, waiting = 0;
  int32_t blocks_used = 0, blocks_free = 0, blocks_cached = 0;
  int64_t prefix_lookup_tokens = 0, prefix_hit_tokens = 0;
  int64_t steps = 0, preemptions = 0;
  SpeculativeCounts speculative;
};

struct StepInfo {
  int32_t rows = 0, sequences = 0, decode_rows = 0;
  double seconds = 0;          // the whole step
  double forward_seconds = 0;  // the target's forward pass
  double draft_seconds = 0;    // drafting (n-gram lookups or the draft model's passes)
  int32_t drafted = 0;         // draft rows verified in this step
  int32_t prefill_rows = 0;    // prompt (or recomputed) rows: rows less decode rows and their drafts
  int32_t emitted = 0;         // tokens pushed to request streams
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
  // Appends drafts to decoding sequences (n-gram tokens, or placeholders that
  // fill_model_drafts replaces once their blocks are reserved); returns the time taken.
  double propose_drafts();
  static int32_t draft_valid(const Active& a);
  int32_t draft_behind(const Active& a) const;  // tokens to feed its draft model before it proposes
  double fill_model_drafts(StepPlan& plan);
  // Leaves in a.tokens what this step gives a chunk's sequence: its accepted drafts and
  // one token sampled (or resampled) from `logits` (logit_rows rows); rejected drafts
  // leave. `raw` keeps the rows' logits before sampling when logprobs are asked for.
  void verify(Active& a, float* logits, int32_t logit_rows, std::vector<std::vector<float>>& raw);
  // Pushes a token already in a.tokens at `index` to the stream; false once finished.
  bool emit(Active& a, size_t index, const std::vector<float>* raw);
  void finish(Active& a, FinishReason reason);
  void publish_stats();

  BatchModel& model_;
  EngineConfig config_;
  int32_t context_;
  KvBlockPool pool_;
  Scheduler scheduler_;
  std::vector<int32_t> eog_ids_;
  std::function<void(const StepInfo&)> observer_;
  DraftLength draft_length_;
  AcceptanceEstimate acceptance_;  // over every sequence
  DraftLength::DraftWork draft_work_;  // of the current step
  int32_t emitted_ = 0;       // tokens pushed to streams in the current step

  std::mutex mutex_;  // guards inbox_, stop_, wake_, queued_
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Active>> inbox_;
  bool stop_ = false, wake_ = false;
  int32_t queued_ = 0;  // inbox plus scheduler's waiting queue
  uint64_t next_id_ = 1;

  std::vector<std::unique_ptr<Active>> active_;  // scheduler thread only
  ForwardBatch batch_, draft_batch_;
  std::vector<float> logits_, draft_logits_;

  mutable std::mutex stats_mutex_;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace tps
