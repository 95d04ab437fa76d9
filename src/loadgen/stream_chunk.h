#pragma once
// What one streamed OpenAI-style event says: generated text, token counts, usage, errors.
// Covers /v1/completions ("text") and /v1/chat/completions ("delta"), as served by
// vLLM, llama-server, SGLang, tps serve and hosted APIs.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tps::loadgen {

struct StreamChunk {
  bool done = false;                          // the "[DONE]" sentinel
  std::string text;                           // generated text (content or reasoning)
  std::optional<int64_t> completion_tokens;   // usage.completion_tokens (cumulative)
  std::optional<int64_t> prompt_tokens;       // usage.prompt_tokens
  std::optional<int64_t> logprob_tokens;      // tokens listed in this event's logprobs
  std::string finish_reason;
  std::string error;                          // an error object sent inside the stream
};

// Parses one event's data; a payload that is not JSON yields an error naming it.
StreamChunk parse_stream_chunk(std::string_view data);

}  // namespace tps::loadgen
