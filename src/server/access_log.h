#pragma once
// One JSON object per line for every request, on stderr or a file.
#include <cstdio>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace tps {

class AccessLog {
 public:
  // Empty path: stderr. Throws tps::Error when the file cannot be opened.
  explicit AccessLog(const std::string& path);
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;
  // Adds "time" (UTC, ISO 8601 with milliseconds) and writes the line.
  void write(nlohmann::json entry);

 private:
  std::mutex mutex_;
  FILE* file_;
  bool owned_;
};

}  // namespace tps
