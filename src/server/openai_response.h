#pragma once
// OpenAI-shaped response bodies and streaming chunks, plus the server-side `timings`.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/request_stream.h"
#include "server/openai_request.h"

namespace tps {

struct ResponseMeta {
  std::string id;
  int64_t created = 0;  // unix seconds
  std::string model;
  Endpoint endpoint = Endpoint::kCompletions;
};

struct TokenLogprob {
  std::string token;  // the token's text
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
  size_t text_offset = 0;  // where its text starts in the completion
};

struct Usage {
  int32_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

const char* finish_reason_name(FinishReason reason);  // "stop", "length" or "abort"
nlohmann::json usage_json(const Usage& usage);
nlohmann::json timings_json(const RequestTimes& times, const Usage& usage);
// logprobs in the endpoint's shape; null when none were asked for.
nlohmann::json logprobs_json(Endpoint endpoint, const std::vector<TokenLogprob>& logprobs);

// One choice of a response: its text, why it ended and its logprobs (null when none
// were asked for).
struct ChoiceBody {
  std::string text;
  FinishReason reason = FinishReason::kNone;
  nlohmann::json logprobs;
};

// `usage` covers the whole request; `timings` (timings_json) its first choice.
nlohmann::json completion_body(const ResponseMeta& meta, const std::vector<ChoiceBody>& choices, const Usage& usage,
                               const nlohmann::json& timings);
// One streaming chunk of choice `index`; `reason` kNone while more follows.
nlohmann::json stream_chunk(const ResponseMeta& meta, int32_t index, const std::string& text, FinishReason reason,
                            const nlohmann::json& logprobs);
// A chat stream's first chunk of choice `index`: delta.role = assistant.
nlohmann::json role_chunk(const ResponseMeta& meta, int32_t index);
nlohmann::json usage_chunk(const ResponseMeta& meta, const Usage& usage);
nlohmann::json error_json(const ApiError& error);
// JSON text that survives invalid UTF-8 (replaced by U+FFFD).
std::string dump_json(const nlohmann::json& j);

}  // namespace tps
