#pragma once
#include <chrono>

namespace tps {

// Seconds on the monotonic clock, for latency and throughput figures.
inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace tps
