#include "server/in_flight.h"

#include <algorithm>
#include <chrono>

#include "core/timer.h"

namespace tps {

InFlight::Ticket::Ticket(InFlight& set, std::shared_ptr<RequestStream> stream) : set_(set), stream_(std::move(stream)) {
  std::lock_guard lock(set_.mutex_);
  set_.streams_.push_back(stream_);
}

InFlight::Ticket::~Ticket() {
  std::lock_guard lock(set_.mutex_);
  std::erase(set_.streams_, stream_);
  if (set_.streams_.empty()) set_.emptied_.notify_all();
}

size_t InFlight::size() const {
  std::lock_guard lock(mutex_);
  return streams_.size();
}

bool InFlight::wait_empty(double deadline) const {
  std::unique_lock lock(mutex_);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, deadline - now_seconds()));
  return emptied_.wait_until(lock, until, [&] { return streams_.empty(); });
}

size_t InFlight::cancel_all() {
  std::lock_guard lock(mutex_);
  for (const auto& s : streams_) s->cancel();
  return streams_.size();
}

}  // namespace tps
