#pragma once
// Counts the tokens of a text, for prompts of exact lengths and for outputs the server
// gave no usage for. The best source available is used, and its name is reported.
#include <cstdint>
#include <memory>
#include <string>

#include "loadgen/openai_client.h"

namespace tps::loadgen {

class TokenCounter {
 public:
  virtual ~TokenCounter() = default;
  virtual int64_t count(const std::string& text) = 0;
  // "server /tokenize" or "estimated (4 bytes per token)": said next to every count.
  virtual std::string name() const = 0;
  virtual bool exact() const = 0;
};

// The server's own tokenizer through POST /tokenize (llama-server and vLLM both answer
// {"tokens": [...]}); nullptr when the server has none.
std::unique_ptr<TokenCounter> make_server_token_counter(const Endpoint& endpoint);

// The tokenizer of a local GGUF model (`--tokenizer-from`), with no BOS added: the same
// count as the server's tokenizer when the server runs that model.
std::unique_ptr<TokenCounter> make_gguf_token_counter(const std::string& gguf_path);

// A guess at 4 bytes per token, for servers that cannot tokenize: counts are flagged estimated.
std::unique_ptr<TokenCounter> make_estimating_token_counter();

}  // namespace tps::loadgen
