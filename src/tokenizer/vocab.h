#pragma once
// The vocabulary both tokenizer kinds share, read from a GGUF's tokenizer.ggml.* keys:
// token strings, scores, types, special ids and flags, and the fast lookups built from them.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tps {

class GgufFile;

// Values of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

// Hashes string_view and string alike, so lookups by a slice of the input allocate nothing.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct Vocab {
  std::vector<std::string> texts;
  std::vector<float> scores;  // all zero when the file has none (BPE)
  std::vector<TokenType> types;
  StringMap<int32_t> ids;

  int32_t bos = -1, eos = -1, unk = -1, eot = -1, eom = -1;
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  std::string pre;               // tokenizer.ggml.pre
  std::vector<bool> eog;         // end-of-generation per id
  std::vector<int32_t> special;  // control, user-defined and unknown ids: matched in the input text

  // Reads everything but the kind-specific parts. `spm` picks the kind's defaults
  // (llama.cpp's: SentencePiece adds BOS and a space prefix, BPE neither).
  static Vocab from_gguf(const GgufFile& file, bool spm);

  int32_t size() const { return static_cast<int32_t>(texts.size()); }
  int32_t find(std::string_view text) const {
    auto it = ids.find(text);
    return it == ids.end() ? -1 : it->second;
  }
  bool valid(int32_t id) const { return id >= 0 && id < size(); }
  TokenType type(int32_t id) const { return types[id]; }
};

// A piece of the input: raw text to tokenize, or a special token found in it.
struct Fragment {
  std::string_view text;
  int32_t token = -1;  // >= 0: a special token, `text` is its occurrence
};

// Splits text at occurrences of special tokens, leftmost first and longest first at a
// position. User-defined tokens always split (as llama.cpp and HF tokenizers do);
// control and unknown tokens only with parse_special.
class SpecialTokenSplitter {
 public:
  explicit SpecialTokenSplitter(const Vocab& vocab);
  std::vector<Fragment> split(std::string_view text, bool parse_special) const;

 private:
  struct Group {  // special tokens of one byte length
    size_t length;
    StringMap<int32_t> tokens;
  };
  const Vocab& vocab_;
  std::vector<Group> groups_;  // longest first
  bool first_byte_[256] = {};
};

}  // namespace tps
