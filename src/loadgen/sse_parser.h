#pragma once
// Splits a Server-Sent Events byte stream into event payloads. Bytes arrive in whatever
// pieces the socket gives, so an event may span several feeds or one feed many events.
#include <string>
#include <string_view>
#include <vector>

namespace tps::loadgen {

class SseParser {
 public:
  // Appends the data of every event completed by `bytes` to `events` (multi-line data
  // joined with '\n', as the SSE spec says). Comments and other fields are skipped.
  void feed(std::string_view bytes, std::vector<std::string>& events);

 private:
  void end_line(std::vector<std::string>& events);

  std::string line_;
  std::string data_;
  bool has_data_ = false;
  bool after_cr_ = false;
};

}  // namespace tps::loadgen
