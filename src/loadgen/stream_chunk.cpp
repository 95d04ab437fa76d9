#include "loadgen/stream_chunk.h"

#include <nlohmann/json.hpp>

namespace tps::loadgen {
namespace {

void append_string(const nlohmann::json& object, const char* key, std::string& out) {
  auto it = object.find(key);
  if (it != object.end() && it->is_string()) out += it->get_ref<const std::string&>();
}

std::optional<int64_t> count_logprob_tokens(const nlohmann::json& choice) {
  auto it = choice.find("logprobs");
  if (it == choice.end() || !it->is_object()) return std::nullopt;
  if (auto content = it->find("content"); content != it->end() && content->is_array())
    return static_cast<int64_t>(content->size());  // chat
  if (auto tokens = it->find("tokens"); tokens != it->end() && tokens->is_array())
    return static_cast<int64_t>(tokens->size());   // completions
  return std::nullopt;
}

}  // namespace

StreamChunk parse_stream_chunk(std::string_view data) {
  StreamChunk chunk;
  if (data == "[DONE]") {
    chunk.done = true;
    return chunk;
  }
  auto json = nlohmann::json::parse(data, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    chunk.error = "stream event is not JSON: " + std::string(data.substr(0, 200));
    return chunk;
  }
  if (auto error = json.find("error"); error != json.end()) {
    chunk.error = error->is_object() && error->contains("message") && (*error)["message"].is_string()
                      ? (*error)["message"].get<std::string>()
                      : error->dump();
    return chunk;
  }
  if (auto choices = json.find("choices"); choices != json.end() && choices->is_array() &&
                                           !choices->empty()) {
    const auto& choice = choices->front();
    append_string(choice, "text", chunk.text);
    if (auto delta = choice.find("delta"); delta != choice.end() && delta->is_object()) {
      append_string(*delta, "reasoning_content", chunk.text);
      append_string(*delta, "reasoning", chunk.text);
      append_string(*delta, "content", chunk.text);
    }
    append_string(choice, "finish_reason", chunk.finish_reason);
    chunk.logprob_tokens = count_logprob_tokens(choice);
  }
  if (auto usage = json.find("usage"); usage != json.end() && usage->is_object()) {
    if (auto it = usage->find("completion_tokens"); it != usage->end() && it->is_number_integer())
      chunk.completion_tokens = it->get<int64_t>();
    if (auto it = usage->find("prompt_tokens"); it != usage->end() && it->is_number_integer())
      chunk.prompt_tokens = it->get<int64_t>();
  }
  return chunk;
}

}  // namespace tps::loadgen
