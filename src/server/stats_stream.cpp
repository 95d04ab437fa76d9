#include "server/stats_stream.h"

#include <chrono>

#include <fmt/format.h>

#include "core/timer.h"
#include "server/openai_response.h"
#include "server/sse.h"

namespace tps {

namespace {
const std::string kKeepalive = sse_keepalive();  // written when no new snapshot came in time
}  // namespace

StatsStream::StatsStream(const Engine& engine, LiveStats& live, double period_s)
    : engine_(engine), live_(live), period_s_(period_s), thread_([this] { loop(); }) {}

StatsStream::~StatsStream() {
  close();
  thread_.join();
}

void StatsStream::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  cv_.notify_all();
}

void StatsStream::loop() {
  using Clock = std::chrono::steady_clock;
  const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period_s_));
  auto next = Clock::now() + period;
  std::unique_lock lock(mutex_);
  while (!cv_.wait_until(lock, next, [this] { return closed_; })) {
    lock.unlock();
    // Made outside the lock: subscribers keep writing the previous event meanwhile.
    auto event = std::make_shared<const std::string>(
        sse_event(live_.snapshot(engine_.stats(), engine_.config(), now_seconds())));
    lock.lock();
    event_ = std::move(event);
    ++sequence_;
    cv_.notify_all();
    // A late tick (a stalled machine) starts a new beat instead of firing a burst.
    next = std::max(next + period, Clock::now());
  }
}

void StatsStream::subscribe(httplib::Response& res) {
  {
    std::lock_guard lock(mutex_);
    if (subscribers_ >= kMaxSubscribers) {
      res.status = 503;
      res.set_header("Retry-After", "5");
      res.set_content(dump_json(error_json(ApiError(
                          503, "", fmt::format("the stats stream has its {} subscribers already", kMaxSubscribers),
                          "too_many_subscribers", "server_error"))),
                      "application/json");
      return;
    }
    ++subscribers_;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, seen = uint64_t{0}](size_t, httplib::DataSink& sink) mutable {
        std::shared_ptr<const std::string> event;
        {
          std::unique_lock lock(mutex_);
          // Bounded, so a stalled snapshot thread still lets a gone client be noticed.
          cv_.wait_for(lock, std::chrono::duration<double>(2 * period_s_),
                       [&] { return closed_ || sequence_ != seen; });
          if (closed_) {
            lock.unlock();
            sink.done();
            return true;
          }
          if (sequence_ != seen) {
            seen = sequence_;
            event = event_;
          }
        }
        const std::string& text = event ? *event : kKeepalive;
        return sink.write(text.data(), text.size());
      },
      [this](bool) {
        std::lock_guard lock(mutex_);
        --subscribers_;
      });
}

}  // namespace tps
