#include "engine/stop_strings.h"

#include <algorithm>

namespace tps {

namespace {

// Length of the longest suffix of `text` that is a proper prefix of a stop string.
size_t held_back(std::string_view text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const std::string& s : stops)
    for (size_t n = std::min(text.size(), s.size() - 1); n > hold; --n)
      if (text.substr(text.size() - n) == std::string_view(s).substr(0, n)) {
        hold = n;
        break;
      }
  return hold;
}

}  // namespace

StopStringFilter::StopStringFilter(std::vector<std::string> stops) {
  for (std::string& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopStringFilter::push(std::string_view text) {
  if (stopped_) return {};
  pending_ += text;
  size_t found = std::string::npos;
  for (const std::string& s : stops_) found = std::min(found, pending_.find(s));
  if (found != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, found);
    pending_.clear();
    return out;
  }
  const size_t keep = held_back(pending_, stops_);
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopStringFilter::finish() {
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

}  // namespace tps
