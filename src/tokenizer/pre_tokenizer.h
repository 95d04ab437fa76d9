#pragma once
// Byte-level BPE pre-tokenization: text is cut into words by a sequence of regexes
// chosen by tokenizer.ggml.pre. Each regex cuts every piece left by the previous one;
// text between matches stays a piece of its own (llama.cpp's semantics).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tps {

struct PreTokenizerSpec {
  std::vector<std::string> patterns;  // PCRE2 syntax, matched with UTF and UCP
  bool ignore_merges = false;         // a word that is a whole token is taken as is (llama3)
  bool add_bos = false;               // default for add_bos_token when the file has none
};

// The spec for a tokenizer.ggml.pre name; unknown names get llama.cpp's "default".
const PreTokenizerSpec& pre_tokenizer_spec(std::string_view name);
std::vector<std::string> pre_tokenizer_names();

class PreTokenizer {
 public:
  explicit PreTokenizer(const std::vector<std::string>& patterns);  // throws tps::Error on a bad pattern
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // `text` must be valid UTF-8. The words are slices of it, in order, covering it all.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Regex;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace tps
