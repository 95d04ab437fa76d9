#include "server/access_log.h"

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/chrono.h>

#include "core/error.h"

namespace tps {

AccessLog::AccessLog(const std::string& path) : file_(stderr), owned_(false) {
  if (path.empty()) return;
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) fail("cannot open log file {}: {}", path, std::strerror(errno));
  owned_ = true;
}

AccessLog::~AccessLog() {
  if (owned_) std::fclose(file_);
}

void AccessLog::write(nlohmann::json entry) {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  entry["time"] = fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", fmt::gmtime(std::chrono::system_clock::to_time_t(now)), ms);
  std::string line = entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mutex_);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

}  // namespace tps
