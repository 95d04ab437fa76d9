#include "loadgen/token_counter.h"

#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

namespace tps::loadgen {
namespace {

class ServerTokenCounter : public TokenCounter {
 public:
  explicit ServerTokenCounter(const Endpoint& endpoint) : client_(endpoint) {}

  std::optional<int64_t> try_count(const std::string& text) {
    // Both spellings of "no BOS" and of the text field, so one call fits both servers.
    nlohmann::json body = {{"content", text}, {"prompt", text},
                           {"add_special", false}, {"add_special_tokens", false}};
    if (!client_.endpoint().model.empty()) body["model"] = client_.endpoint().model;
    auto reply = client_.post_json("/tokenize", body);
    if (!reply || !reply->contains("tokens") || !(*reply)["tokens"].is_array()) return std::nullopt;
    return int64_t((*reply)["tokens"].size());
  }

  int64_t count(const std::string& text) override {
    auto n = try_count(text);
    if (!n) fail("the server's /tokenize stopped answering while counting prompt tokens");
    return *n;
  }
  std::string name() const override { return "server /tokenize"; }
  bool exact() const override { return true; }

 private:
  OpenAiClient client_;
};

class GgufTokenCounter : public TokenCounter {
 public:
  explicit GgufTokenCounter(const std::string& path)
      : name_("tokenizer of " + path), tokenizer_(Tokenizer::from_gguf(*GgufFile::open(path))) {}
  int64_t count(const std::string& text) override {
    return int64_t(tokenizer_->encode(text, /*add_special=*/false, /*parse_special=*/false).size());
  }
  std::string name() const override { return name_; }
  bool exact() const override { return true; }

 private:
  std::string name_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

class EstimatingTokenCounter : public TokenCounter {
 public:
  int64_t count(const std::string& text) override { return int64_t(text.size() + 2) / 4; }
  std::string name() const override { return "estimated (4 bytes per token)"; }
  bool exact() const override { return false; }
};

}  // namespace

std::unique_ptr<TokenCounter> make_server_token_counter(const Endpoint& endpoint) {
  auto counter = std::make_unique<ServerTokenCounter>(endpoint);
  if (!counter->try_count("hello world")) return nullptr;
  return counter;
}

std::unique_ptr<TokenCounter> make_gguf_token_counter(const std::string& gguf_path) {
  return std::make_unique<GgufTokenCounter>(gguf_path);
}

std::unique_ptr<TokenCounter> make_estimating_token_counter() {
  return std::make_unique<EstimatingTokenCounter>();
}

}  // namespace tps::loadgen
