#include "loadgen/sse_parser.h"

namespace tps::loadgen {

void SseParser::feed(std::string_view bytes, std::vector<std::string>& events) {
  for (char c : bytes) {
    // A line ends with "\n", "\r" or "\r\n"; the '\n' of "\r\n" must not end a second line.
    if (c == '\n' && after_cr_) {
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\n' || c == '\r') {
      end_line(events);
    } else {
      line_.push_back(c);
    }
  }
}

void SseParser::end_line(std::vector<std::string>& events) {
  if (line_.empty()) {  // a blank line dispatches the event
    if (has_data_) events.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  std::string_view line = line_;
  if (line.substr(0, 5) == "data:") {
    std::string_view value = line.substr(5);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  }
  line_.clear();
}

}  // namespace tps::loadgen
