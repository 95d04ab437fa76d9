#pragma once
// GET /v1/stats/stream: the live page's feed, one server-sent event a second. One thread
// makes each snapshot (LiveStats) and every subscriber writes that same text, so a
// subscriber costs a write a second, not a snapshot; one whose client has gone ends at
// its next write and frees its HTTP thread.
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <httplib.h>

#include "engine/engine.h"
#include "server/live_stats.h"

namespace tps {

class StatsStream {
 public:
  // Each subscriber holds one HTTP thread: beyond this many, 503.
  static constexpr int kMaxSubscribers = 16;

  StatsStream(const Engine& engine, LiveStats& live, double period_s = 1.0);
  ~StatsStream();
  StatsStream(const StatsStream&) = delete;
  StatsStream& operator=(const StatsStream&) = delete;

  // Answers one subscriber: the latest snapshot at once, then each new one.
  void subscribe(httplib::Response& res);
  // Ends every subscriber's stream, now and from now on (the server is stopping).
  void close();

 private:
  void loop();

  const Engine& engine_;
  LiveStats& live_;
  const double period_s_;
  std::mutex mutex_;  // guards what follows
  std::condition_variable cv_;
  std::shared_ptr<const std::string> event_;  // the latest snapshot as an SSE event
  uint64_t sequence_ = 0;                     // snapshots made so far
  int subscribers_ = 0;
  bool closed_ = false;
  std::thread thread_;
};

}  // namespace tps
