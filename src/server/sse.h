#pragma once
// Server-sent events framing as the OpenAI streaming API uses it.
#include <string>

#include <nlohmann/json.hpp>

namespace tps {

inline std::string sse_event(const nlohmann::json& data) {
  return "data: " + data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}
inline std::string sse_done() { return "data: [DONE]\n\n"; }
// A comment line: clients ignore it; writing it tells whether the client is still there.
inline std::string sse_keepalive() { return ": keep-alive\n\n"; }

}  // namespace tps
