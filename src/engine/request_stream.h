#pragma once
// The hand-off between the scheduler thread and the thread serving one request: the
// engine pushes tokens and the end, the handler waits for them or cancels.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "engine/speculative.h"
#include "sampling/sampler.h"

namespace tps {

struct GenerationRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int32_t max_tokens = 16;
  bool ignore_eos = false;
  int32_t top_logprobs = -1;  // -1: no log-probabilities; else how many alternatives
  // Teacher forcing: generated token i is forced[i] instead of a sample, while any are left.
  std::vector<int32_t> forced;
  // Called on the scheduler thread with each step's raw logits, before sampling.
  std::function<void(std::span<const float>)> on_logits;
  bool speculative = true;  // false: no drafts for this request even where the engine has a drafter
};

struct GeneratedToken {
  int32_t id = -1;
  float logprob = 0;                            // of the chosen token (when asked)
  std::vector<std::pair<int32_t, float>> top;   // best alternatives, best first
};

enum class FinishReason { kNone, kStop, kLength, kCancelled };

// Seconds on the monotonic clock (core/timer.h); 0 while the moment has not come.
struct RequestTimes {
  double arrived = 0, scheduled = 0, first_token = 0, finished = 0;
  std::vector<double> token_times;  // arrival of each generated token
};

class RequestStream {
 public:
  explicit RequestStream(std::function<void()> wake_engine) : wake_engine_(std::move(wake_engine)) {}

  // Handler side. Moves new tokens into `out`; waits until there is something or the
  // deadline (now_seconds() clock) passes. Returns false on timeout with nothing new.
  bool wait(std::vector<GeneratedToken>& out, double deadline);
  bool finished() const;
  // Waits for the end only (not woken by each token); the tokens stay pending.
  void wait_finished();
  FinishReason finish_reason() const;
  // Stops generation; the engine frees the request's blocks at its next step.
  void cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  int32_t prompt_tokens() const;
  int32_t cached_tokens() const;
  int32_t generated_tokens() const;
  SpeculativeCounts speculative() const;
  RequestTimes times() const;

  // Engine side.
  void set_arrived(double t);
  void set_scheduled(double t, int32_t cached_tokens);
  void push(GeneratedToken token, double t);
  void finish(FinishReason reason, double t);
  void set_prompt_tokens(int32_t n);
  void add_speculative(int32_t drafted, int32_t accepted);

 private:
  // A copy of a field, read under the lock.
  template <typename T>
  T locked(const T& field) const {
    std::lock_guard lock(mutex_);
    return field;
  }

  mutable std::mutex mutex_;
  std::condition_variable cv_, finished_cv_;
  std::vector<GeneratedToken> pending_;
  FinishReason reason_ = FinishReason::kNone;
  RequestTimes times_;
  int32_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_ = 0;
  SpeculativeCounts speculative_;
  std::atomic<bool> cancelled_{false};
  std::function<void()> wake_engine_;
};

}  // namespace tps
