#pragma once
// Parsing and validation of OpenAI /v1/completions and /v1/chat/completions bodies.
// Every problem becomes an ApiError naming the field, turned into a 4xx JSON error.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sampling/sampler.h"
#include "server/chat_template.h"

namespace tps {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string param, const std::string& message, std::string code = "",
           std::string type = "invalid_request_error")
      : std::runtime_error(message), status(status), param(std::move(param)), code(std::move(code)),
        type(std::move(type)) {}
  int status;
  std::string param, code, type;
};

enum class Endpoint { kCompletions, kChat };

// The most choices (`n`) one request may ask for.
inline constexpr int32_t kMaxChoices = 16;

struct ApiLimits {
  int32_t vocab_size = 0;
  int32_t ctx_size = 0;
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;
  std::string prompt_text;                // completions with a text prompt
  std::vector<int32_t> prompt_tokens;     // completions with token ids
  bool prompt_is_tokens = false;
  std::vector<ChatMessage> messages;      // chat
  std::optional<int32_t> max_tokens;      // absent: up to the context
  int32_t n = 1;                          // choices: sequences sampled from the one prompt
  SamplingParams sampling;
  std::vector<std::string> stop;
  int32_t top_logprobs = -1;              // -1: none
  bool tokens_as_ids = false;             // logprobs name tokens "token_id:N" (vLLM's return_tokens_as_token_ids)
  bool ignore_eos = false;
  bool speculative = true;                // false: no drafts for this request
  bool stream = false;
  bool include_usage = false;     // a last chunk with the usage
  bool continuous_usage = false;  // usage so far in every chunk (vLLM's continuous_usage_stats)
};

// Throws ApiError (400) for malformed JSON, wrong types, unknown or unsupported fields
// and out-of-range values.
ApiRequest parse_api_request(Endpoint endpoint, const std::string& body, const ApiLimits& limits);

}  // namespace tps
