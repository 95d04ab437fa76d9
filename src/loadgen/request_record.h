#pragma once
// The raw timings of one streamed request, as the client saw them. Every metric of a run
// is computed from these records, and they are saved as they are in the results file.
#include <cstdint>
#include <string>
#include <vector>

namespace tps::loadgen {

// One stream event that carried generated text. `tokens` is how many tokens it carried
// (from per-event usage or logprobs when the server gives them; else from a tokenizer,
// or the total split by text length: settle_event_tokens); it may be 0 when the text
// came without a new token.
struct TokenArrival {
  double time = 0;  // seconds since the run's start, on the monotonic clock
  int64_t tokens = 1;
  size_t text_end = 0;  // the output text's length once this event's text was added
};

struct RequestRecord {
  int64_t id = 0;
  double send_time = 0;  // just before the request is written
  double end_time = 0;   // the response fully read, or the failure seen
  std::vector<TokenArrival> arrivals;
  int64_t input_tokens = -1;            // the prompt's length as the client counted it
  int64_t prompt_tokens = -1;           // usage.prompt_tokens from the server, -1 if absent
  int64_t requested_output_tokens = -1; // max_tokens sent
  int64_t output_tokens = 0;
  std::string output_tokens_source;     // "usage", "tokenizer", "logprobs" or "events"
  std::string event_tokens_source;      // how `arrivals[i].tokens` were known: "usage", "logprobs",
                                        // "tokenizer", "text_length" or "events" (one each)
  std::string finish_reason;
  bool ok = false;
  int http_status = 0;
  std::string error;        // empty when ok
  bool unreachable = false; // the connection could not be made: the server may be gone
  std::string output_text;  // kept only to count tokens when the server gives no usage
};

}  // namespace tps::loadgen
