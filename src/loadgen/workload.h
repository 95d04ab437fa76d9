#pragma once
// The prompts a run sends: synthetic texts of exact token lengths (optionally sharing a
// prefix, to measure prefix caching) or a JSONL dataset of prompts or chat messages.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/openai_client.h"
#include "loadgen/token_counter.h"

namespace tps::loadgen {

// A length drawn from a normal distribution, rounded and kept >= 1; stddev 0 is fixed.
struct LengthSpec {
  int64_t mean = 0;
  double stddev = 0;
};
LengthSpec parse_length_spec(const std::string& flag, const std::string& text);  // "512" or "512:64"

struct WorkloadSpec {
  LengthSpec input{512, 0};
  LengthSpec output{128, 0};
  std::string dataset;        // JSONL path; empty for synthetic prompts
  int64_t shared_prefix = 0;  // tokens every synthetic prompt starts with
  uint64_t seed = 1;
};

struct Workload {
  std::vector<Prompt> prompts;
  std::string input_tokens_source;  // the token counter's name
  int64_t exact_inputs = 0;         // synthetic prompts whose count hit the target exactly
  nlohmann::json description;       // what was asked and what was made, for the results file
};

// Makes `count` prompts; dataset lines are reused in order when there are fewer.
Workload build_workload(const WorkloadSpec& spec, size_t count, const std::string& endpoint_kind,
                        TokenCounter& counter);

}  // namespace tps::loadgen
