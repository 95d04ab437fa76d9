#pragma once
// Finds stop strings in streamed text. Text that might be the start of a stop string is
// held back until the next piece decides it, so a stop string never reaches the client.
#include <string>
#include <string_view>
#include <vector>

namespace tps {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Text that is safe to send after `piece`; everything from a stop string on is dropped.
  std::string push(std::string_view piece);
  bool stopped() const { return stopped_; }
  // The held-back rest when generation ends without a stop string.
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace tps
