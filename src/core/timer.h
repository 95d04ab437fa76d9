#pragma once
#include <chrono>
#include <ctime>
#include <string>

namespace tps {

// Seconds on the monotonic clock, for latency and throughput figures.
inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// The current UTC time as ISO 8601 ("2026-12-02T10:09:00Z"), for result files.
inline std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace tps
