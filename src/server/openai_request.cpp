#include "server/openai_request.h"

#include <charconv>
#include <random>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tps {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) { throw ApiError(400, param, message); }

const char* json_type(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

double get_number(const json& v, const std::string& name, double lo, double hi, bool lo_open = false) {
  if (!v.is_number()) bad(name, fmt::format("'{}' must be a number, got {}", name, json_type(v)));
  double x = v.get<double>();
  if (x < lo || x > hi || (lo_open && x == lo))
    bad(name, fmt::format("'{}' must be in {}{}, {}], got {}", name, lo_open ? "(" : "[", lo, hi, x));
  return x;
}

int64_t get_integer(const json& v, const std::string& name, int64_t lo, int64_t hi) {
  if (!v.is_number_integer() && !v.is_number_unsigned())
    bad(name, fmt::format("'{}' must be an integer, got {}", name, json_type(v)));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    bad(name, fmt::format("'{}' must be at most {}", name, hi));
  int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) bad(name, fmt::format("'{}' must be between {} and {}, got {}", name, lo, hi, x));
  return x;
}

bool get_bool(const json& v, const std::string& name) {
  if (!v.is_boolean()) bad(name, fmt::format("'{}' must be a boolean, got {}", name, json_type(v)));
  return v.get<bool>();
}

std::string get_string(const json& v, const std::string& name) {
  if (!v.is_string()) bad(name, fmt::format("'{}' must be a string, got {}", name, json_type(v)));
  return v.get<std::string>();
}

// Fields clients send that change nothing here when they hold their default.
bool is_harmless(const std::string& key, const json& v) {
  if (key == "user" || key == "metadata" || key == "store" || key == "service_tier") return true;
  if (key == "echo") return v.is_boolean() && !v.get<bool>();
  if (key == "best_of") return v.is_number_integer() && v.get<int64_t>() == 1;
  if (key == "suffix" || key == "tools" || key == "tool_choice" || key == "functions")
    return (v.is_array() && v.empty()) || (key == "tool_choice" && v == "none");
  if (key == "response_format") return v.is_object() && v.value("type", "") == "text";
  if (key == "parallel_tool_calls") return v.is_boolean();
  return false;
}

std::string message_content(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return "";
  if (!content.is_array()) bad(where, fmt::format("'{}' must be a string or an array of text parts", where));
  std::string text;
  for (const auto& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      bad(where, fmt::format("'{}' parts must be {{\"type\": \"text\", \"text\": \"...\"}}", where));
    text += part["text"].get<std::string>();
  }
  return text;
}

void parse_messages(const json& v, ApiRequest& r) {
  if (!v.is_array()) bad("messages", fmt::format("'messages' must be an array, got {}", json_type(v)));
  if (v.empty()) bad("messages", "'messages' must not be empty");
  static const std::set<std::string> kRoles{"system", "developer", "user", "assistant"};
  for (size_t i = 0; i < v.size(); ++i) {
    std::string where = fmt::format("messages[{}]", i);
    const json& m = v[i];
    if (!m.is_object()) bad(where, fmt::format("'{}' must be an object", where));
    for (const auto& [key, _] : m.items())
      if (key != "role" && key != "content" && key != "name")
        bad(where + "." + key, fmt::format("unknown field '{}.{}'", where, key));
    if (!m.contains("role")) bad(where + ".role", fmt::format("'{}.role' is required", where));
    std::string role = get_string(m["role"], where + ".role");
    if (!kRoles.count(role))
      bad(where + ".role", fmt::format("'{}.role' must be system, user or assistant, got '{}'", where, role));
    if (role == "developer") role = "system";
    if (!m.contains("content")) bad(where + ".content", fmt::format("'{}.content' is required", where));
    r.messages.push_back({role, message_content(m["content"], where + ".content")});
  }
}

void parse_prompt(const json& v, const ApiLimits& limits, ApiRequest& r) {
  const json* p = &v;
  if (v.is_array() && v.size() == 1 && v[0].is_string()) p = &v[0];
  if (p->is_string()) {
    r.prompt_text = p->get<std::string>();
    if (r.prompt_text.empty()) bad("prompt", "'prompt' must not be empty");
    return;
  }
  if (!p->is_array())
    bad("prompt", fmt::format("'prompt' must be a string or an array of token ids, got {}", json_type(*p)));
  if (p->empty()) bad("prompt", "'prompt' must not be empty");
  r.prompt_is_tokens = true;
  for (const auto& t : *p) {
    if (t.is_string()) bad("prompt", "'prompt' with several strings asks for a batch; send one request per prompt");
    r.prompt_tokens.push_back(static_cast<int32_t>(get_integer(t, "prompt", 0, limits.vocab_size - 1)));
  }
}

// {"token id": bias in [-100, 100], ...}, as OpenAI's API takes it.
void parse_logit_bias(const json& v, const ApiLimits& limits, ApiRequest& r) {
  if (!v.is_object()) bad("logit_bias", fmt::format("'logit_bias' must be an object, got {}", json_type(v)));
  for (const auto& [key, amount] : v.items()) {
    const std::string where = fmt::format("logit_bias.{}", key);
    int64_t id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    // Canonical decimal only: "7" and "007" would otherwise bias one token twice.
    if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id >= limits.vocab_size ||
        std::to_string(id) != key)
      bad("logit_bias", fmt::format("'logit_bias' keys must be token ids from 0 to {}, got '{}'",
                                    limits.vocab_size - 1, key));
    r.sampling.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(get_number(amount, where, -100, 100)));
  }
}

void parse_stop(const json& v, ApiRequest& r) {
  if (v.is_string()) {
    r.stop.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.size() > 16) bad("stop", "'stop' holds at most 16 strings");
    for (const auto& s : v) r.stop.push_back(get_string(s, "stop"));
  } else {
    bad("stop", fmt::format("'stop' must be a string or an array of strings, got {}", json_type(v)));
  }
  for (const auto& s : r.stop)
    if (s.empty()) bad("stop", "'stop' strings must not be empty");
}

}  // namespace

ApiRequest parse_api_request(Endpoint endpoint, const std::string& body, const ApiLimits& limits) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    throw ApiError(400, "", fmt::format("malformed JSON body: {}", e.what()), "invalid_json");
  }
  if (!j.is_object()) bad("", fmt::format("the body must be a JSON object, got {}", json_type(j)));

  ApiRequest r;
  r.endpoint = endpoint;
  const bool chat = endpoint == Endpoint::kChat;
  r.sampling = SamplingParams::untruncated(1.0f);  // OpenAI's defaults
  r.sampling.seed = std::random_device{}();
  bool logprobs_flag = false;

  for (const auto& [key, v] : j.items()) {
    if (v.is_null()) continue;  // as OpenAI's API: null is "not given", for every field
    if (key == "model") {
      r.model = get_string(v, key);
    } else if (key == "prompt" && !chat) {
      parse_prompt(v, limits, r);
    } else if (key == "messages" && chat) {
      parse_messages(v, r);
    } else if (key == "max_tokens" || key == "max_completion_tokens" || key == "n_predict") {
      r.max_tokens = static_cast<int32_t>(get_integer(v, key, 1, limits.ctx_size));
    } else if (key == "temperature") {
      r.sampling.temperature = static_cast<float>(get_number(v, key, 0, 2));
    } else if (key == "top_p") {
      r.sampling.top_p = static_cast<float>(get_number(v, key, 0, 1, true));
    } else if (key == "top_k") {
      r.sampling.top_k = static_cast<int32_t>(get_integer(v, key, 0, limits.vocab_size));
    } else if (key == "min_p") {
      r.sampling.min_p = static_cast<float>(get_number(v, key, 0, 1));
    } else if (key == "seed") {
      if (!v.is_number_integer() && !v.is_number_unsigned())
        bad(key, fmt::format("'seed' must be an integer, got {}", json_type(v)));
      r.sampling.seed = v.is_number_unsigned() ? v.get<uint64_t>() : static_cast<uint64_t>(v.get<int64_t>());
    } else if (key == "stop") {
      parse_stop(v, r);
    } else if (key == "logit_bias") {
      parse_logit_bias(v, limits, r);
    } else if (key == "presence_penalty") {
      r.sampling.presence_penalty = static_cast<float>(get_number(v, key, -2, 2));
    } else if (key == "frequency_penalty") {
      r.sampling.frequency_penalty = static_cast<float>(get_number(v, key, -2, 2));
    } else if (key == "repetition_penalty" || key == "repeat_penalty") {
      r.sampling.repeat_penalty = static_cast<float>(get_number(v, key, 0, 10, true));
    } else if (key == "logprobs") {
      if (chat) {
        logprobs_flag = get_bool(v, key);
      } else {
        r.top_logprobs = static_cast<int32_t>(get_integer(v, key, 0, 20));
      }
    } else if (key == "top_logprobs" && chat) {
      r.top_logprobs = static_cast<int32_t>(get_integer(v, key, 0, 20));
    } else if (key == "n") {
      r.n = static_cast<int32_t>(get_integer(v, key, 1, kMaxChoices));
    } else if (key == "return_tokens_as_token_ids") {
      r.tokens_as_ids = get_bool(v, key);
    } else if (key == "speculative") {
      r.speculative = get_bool(v, key);
    } else if (key == "ignore_eos") {
      r.ignore_eos = get_bool(v, key);
    } else if (key == "stream") {
      r.stream = get_bool(v, key);
    } else if (key == "stream_options") {
      if (!v.is_object()) bad(key, fmt::format("'stream_options' must be an object, got {}", json_type(v)));
      for (const auto& [k2, v2] : v.items()) {
        if (v2.is_null()) continue;
        if (k2 == "include_usage") {
          r.include_usage = get_bool(v2, "stream_options.include_usage");
        } else if (k2 == "continuous_usage_stats") {
          r.continuous_usage = get_bool(v2, "stream_options.continuous_usage_stats");
        } else {
          bad("stream_options." + k2, fmt::format("unknown field 'stream_options.{}'", k2));
        }
      }
    } else if (!is_harmless(key, v)) {
      bad(key, fmt::format("unknown or unsupported field '{}'", key));
    }
  }

  if (chat) {
    if (r.messages.empty()) bad("messages", "'messages' is required");
    if (r.top_logprobs >= 0 && !logprobs_flag) bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    if (logprobs_flag && r.top_logprobs < 0) r.top_logprobs = 0;
  } else if (r.prompt_text.empty() && r.prompt_tokens.empty()) {
    bad("prompt", "'prompt' is required");
  }
  if ((r.include_usage || r.continuous_usage) && !r.stream) bad("stream_options", "'stream_options' is only allowed with 'stream': true");
  return r;
}

}  // namespace tps
