#include "tokenizer/vocab.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "formats/gguf.h"

namespace tps {
namespace {

// Texts of end-of-turn tokens that chat models stop on even when the metadata names
// another EOS (the list llama.cpp checks).
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<|end_of_text|>", "<end_of_utterance>", "<EOT>", "_<EOT>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",  // DeepSeek
};

// A special id from the metadata. Absent or out of range (files store "none" as 2^32-1)
// keeps the kind's default, as llama.cpp does; a default outside the vocabulary is -1.
int32_t special_id(const GgufFile& file, const std::string& key, int32_t fallback, int32_t n) {
  int64_t id = file.get_int("tokenizer.ggml." + key, fallback);
  if (id < 0 || id >= n) id = fallback;
  return id >= 0 && id < n ? static_cast<int32_t>(id) : -1;
}

}  // namespace

Vocab Vocab::from_gguf(const GgufFile& file, bool spm) {
  Vocab v;
  const auto* tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty())
    fail("{}: tokenizer.ggml.tokens is missing or empty", file.path());
  if (tokens->size() > static_cast<size_t>(INT32_MAX))
    fail("{}: vocabulary of {} tokens is too large", file.path(), tokens->size());
  v.texts = *tokens;
  const size_t n = v.texts.size();

  v.scores.assign(n, 0.0f);
  if (const auto* scores = file.get_number_array("tokenizer.ggml.scores")) {
    if (scores->size() != n)
      fail("{}: tokenizer.ggml.scores has {} entries for {} tokens", file.path(), scores->size(), n);
    std::transform(scores->begin(), scores->end(), v.scores.begin(),
                   [](double s) { return static_cast<float>(s); });
  }
  v.types.assign(n, TokenType::kNormal);
  if (const auto* types = file.get_number_array("tokenizer.ggml.token_type")) {
    if (types->size() != n)
      fail("{}: tokenizer.ggml.token_type has {} entries for {} tokens", file.path(), types->size(), n);
    for (size_t i = 0; i < n; ++i) {
      const double t = (*types)[i];
      v.types[i] = t >= 0 && t <= 6 ? static_cast<TokenType>(static_cast<int32_t>(t)) : TokenType::kNormal;
    }
  }

  v.ids.reserve(n);
  for (size_t i = 0; i < n; ++i) v.ids[v.texts[i]] = static_cast<int32_t>(i);  // last wins, as llama.cpp

  const auto count = static_cast<int32_t>(n);
  v.bos = special_id(file, "bos_token_id", spm ? 1 : -1, count);
  v.eos = special_id(file, "eos_token_id", spm ? 2 : -1, count);
  v.unk = special_id(file, "unknown_token_id", spm ? 0 : -1, count);
  v.eot = special_id(file, "eot_token_id", -1, count);
  v.eom = special_id(file, "eom_token_id", -1, count);
  v.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", spm);
  v.add_eos = file.get_bool("tokenizer.ggml.add_eos_token", false);
  v.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix", spm);
  v.pre = file.get_string("tokenizer.ggml.pre", "default");

  v.eog.assign(n, false);
  for (int32_t id : {v.eos, v.eot, v.eom})
    if (id >= 0) v.eog[id] = true;
  for (std::string_view text : kEndOfTurnTexts) {
    const int32_t id = v.find(text);
    if (id < 0) continue;
    v.eog[id] = true;
    v.types[id] = TokenType::kControl;  // some converters mark these normal; they never are
    if (v.eot < 0) v.eot = id;
  }

  for (size_t i = 0; i < n; ++i) {
    const TokenType t = v.types[i];
    if ((t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) &&
        !v.texts[i].empty())
      v.special.push_back(static_cast<int32_t>(i));
  }
  return v;
}

SpecialTokenSplitter::SpecialTokenSplitter(const Vocab& vocab) : vocab_(vocab) {
  std::map<size_t, StringMap<int32_t>, std::greater<>> by_length;
  for (int32_t id : vocab.special) {
    const std::string& text = vocab.texts[id];
    by_length[text.size()].emplace(text, id);
    first_byte_[static_cast<uint8_t>(text[0])] = true;
  }
  for (auto& [length, tokens] : by_length) groups_.push_back({length, std::move(tokens)});
}

std::vector<Fragment> SpecialTokenSplitter::split(std::string_view text, bool parse_special) const {
  std::vector<Fragment> out;
  size_t start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    int32_t found = -1;
    size_t length = 0;
    if (first_byte_[static_cast<uint8_t>(text[pos])]) {
      for (const Group& g : groups_) {
        if (g.length > text.size() - pos) continue;
        auto it = g.tokens.find(text.substr(pos, g.length));
        if (it == g.tokens.end()) continue;
        if (!parse_special && vocab_.type(it->second) != TokenType::kUserDefined) continue;
        found = it->second;
        length = g.length;
        break;
      }
    }
    if (found < 0) {
      ++pos;
      continue;
    }
    if (pos > start) out.push_back({text.substr(start, pos - start)});
    out.push_back({text.substr(pos, length), found});
    pos += length;
    start = pos;
  }
  if (start < text.size()) out.push_back({text.substr(start)});
  return out;
}

}  // namespace tps
