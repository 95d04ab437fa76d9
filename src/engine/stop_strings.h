#pragma once
// Streams generated text through stop-string detection: text that might still turn into
// a stop string is held back until ruled out, and generation ends before the first
// stop string found, which is never shown. Used by the generator and the server.
#include <string>
#include <string_view>
#include <vector>

namespace tps {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops);

  // Adds text; returns the part now safe to show. Sets stopped() when a stop string
  // completed (the returned text then ends right before it).
  std::string push(std::string_view text);
  // The text held back, at the end of generation (empty after a stop).
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace tps
