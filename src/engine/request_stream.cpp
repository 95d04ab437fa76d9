#include "engine/request_stream.h"

#include <algorithm>
#include <chrono>

#include "core/timer.h"

namespace tps {

bool RequestStream::wait(std::vector<GeneratedToken>& out, double deadline) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!pending_.empty() || reason_ != FinishReason::kNone) break;
    double left = deadline - now_seconds();
    if (left <= 0) return false;
    // At most an hour a wait: a far deadline (or infinity) would overflow the clock's
    // conversion inside wait_for and return at once, spinning.
    cv_.wait_for(lock, std::chrono::duration<double>(std::min(left, 3600.0)));
  }
  for (auto& t : pending_) out.push_back(std::move(t));
  pending_.clear();
  return true;
}

bool RequestStream::finished() const {
  std::lock_guard lock(mutex_);
  return reason_ != FinishReason::kNone && pending_.empty();
}

void RequestStream::wait_finished() {
  std::unique_lock lock(mutex_);
  finished_cv_.wait(lock, [&] { return reason_ != FinishReason::kNone; });
}

FinishReason RequestStream::finish_reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

void RequestStream::cancel() {
  if (!cancelled_.exchange(true)) wake_engine_();
}

int32_t RequestStream::prompt_tokens() const { return locked(prompt_tokens_); }

int32_t RequestStream::cached_tokens() const { return locked(cached_tokens_); }

int32_t RequestStream::generated_tokens() const { return locked(generated_); }

RequestTimes RequestStream::times() const { return locked(times_); }

SpeculativeCounts RequestStream::speculative() const { return locked(speculative_); }

void RequestStream::add_speculative(int32_t drafted, int32_t accepted) {
  std::lock_guard lock(mutex_);
  speculative_.add_step(drafted, accepted);
}

void RequestStream::set_arrived(double t) {
  std::lock_guard lock(mutex_);
  times_.arrived = t;
}

void RequestStream::set_prompt_tokens(int32_t n) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ = n;
}

void RequestStream::set_scheduled(double t, int32_t cached_tokens) {
  std::lock_guard lock(mutex_);
  if (times_.scheduled == 0) {
    times_.scheduled = t;
    cached_tokens_ = cached_tokens;
  }
}

void RequestStream::push(GeneratedToken token, double t) {
  {
    std::lock_guard lock(mutex_);
    if (times_.first_token == 0) times_.first_token = t;
    times_.token_times.push_back(t);
    pending_.push_back(std::move(token));
    ++generated_;
  }
  cv_.notify_all();
}

void RequestStream::finish(FinishReason reason, double t) {
  {
    std::lock_guard lock(mutex_);
    if (reason_ != FinishReason::kNone) return;
    reason_ = reason;
    times_.finished = t;
  }
  cv_.notify_all();
  finished_cv_.notify_all();
}

}  // namespace tps
