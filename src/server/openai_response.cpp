#include "server/openai_response.h"

namespace tps {

using nlohmann::json;

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "abort";  // ended by the server (a shutdown), as vLLM names it
    default:
      return "stop";
  }
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json timings_json(const RequestTimes& t, const Usage& u) {
  auto ms = [](double a, double b) { return a > 0 && b > 0 ? (b - a) * 1000.0 : 0.0; };
  double queue_ms = ms(t.arrived, t.scheduled);
  double prefill_ms = ms(t.scheduled, t.first_token);
  double decode_ms = ms(t.first_token, t.finished);
  int32_t computed = u.prompt_tokens - u.cached_tokens;
  return {{"queue_ms", queue_ms},
          {"prefill_ms", prefill_ms},
          {"decode_ms", decode_ms},
          {"prompt_n", computed},
          {"predicted_n", u.completion_tokens},
          {"prompt_per_second", prefill_ms > 0 ? computed * 1000.0 / prefill_ms : 0.0},
          {"predicted_per_second", decode_ms > 0 ? (u.completion_tokens - 1) * 1000.0 / decode_ms : 0.0}};
}

static json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(c);
  return b;
}

json logprobs_json(Endpoint endpoint, const std::vector<TokenLogprob>& lps) {
  if (endpoint == Endpoint::kChat) {
    json content = json::array();
    for (const auto& lp : lps) {
      json top = json::array();
      for (const auto& [tok, p] : lp.top) top.push_back({{"token", tok}, {"logprob", p}, {"bytes", bytes_of(tok)}});
      content.push_back({{"token", lp.token}, {"logprob", lp.logprob}, {"bytes", bytes_of(lp.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
  for (const auto& lp : lps) {
    tokens.push_back(lp.token);
    token_logprobs.push_back(lp.logprob);
    json top = json::object();
    for (const auto& [tok, p] : lp.top) top[tok] = p;
    top_logprobs.push_back(top);
    offsets.push_back(lp.text_offset);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", offsets}};
}

static json base(const ResponseMeta& meta, const char* object) {
  return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

json completion_body(const ResponseMeta& meta, const std::vector<ChoiceBody>& choices, const Usage& usage,
                     const json& timings) {
  bool chat = meta.endpoint == Endpoint::kChat;
  json j = base(meta, chat ? "chat.completion" : "text_completion");
  j["choices"] = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceBody& c = choices[i];
    json choice = {{"index", i}, {"logprobs", c.logprobs}, {"finish_reason", finish_reason_name(c.reason)}};
    if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    j["choices"].push_back(std::move(choice));
  }
  j["usage"] = usage_json(usage);
  j["timings"] = timings;
  return j;
}

json stream_chunk(const ResponseMeta& meta, int32_t index, const std::string& text, FinishReason reason,
                  const json& logprobs) {
  bool chat = meta.endpoint == Endpoint::kChat;
  json j = base(meta, chat ? "chat.completion.chunk" : "text_completion");
  json choice = {{"index", index}, {"logprobs", logprobs}};
  choice["finish_reason"] = reason == FinishReason::kNone ? json(nullptr) : json(finish_reason_name(reason));
  if (chat) {
    choice["delta"] = text.empty() && reason != FinishReason::kNone ? json::object() : json{{"content", text}};
  } else {
    choice["text"] = text;
  }
  j["choices"] = json::array({choice});
  return j;
}

json role_chunk(const ResponseMeta& meta, int32_t index) {
  json j = base(meta, "chat.completion.chunk");
  j["choices"] = json::array({{{"index", index},
                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr}}});
  return j;
}

json usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  json j = base(meta, meta.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = usage_json(usage);
  return j;
}

json error_json(const ApiError& e) {
  return {{"error",
           {{"message", e.what()},
            {"type", e.type},
            {"param", e.param.empty() ? json(nullptr) : json(e.param)},
            {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace tps
