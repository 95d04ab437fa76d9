#include "tokenizer/vocab_tokenizer.h"

#include "core/error.h"

namespace tps {

VocabTokenizer::VocabTokenizer(Vocab vocab)
    : vocab_(std::move(vocab)), splitter_(vocab_), pieces_(vocab_.texts.size()) {}

void VocabTokenizer::check_id(int32_t id) const {
  if (!vocab_.valid(id)) fail("token id {} is out of range (vocabulary of {})", id, vocab_.size());
}

std::vector<int32_t> VocabTokenizer::encode(std::string_view text, bool add_special,
                                            bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && vocab_.add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  bool at_start = true;
  for (const Fragment& f : splitter_.split(text, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      at_start = true;
    } else {
      encode_text(f.text, at_start, out);
      at_start = false;
    }
  }
  if (add_special && vocab_.add_eos && vocab_.eos >= 0) out.push_back(vocab_.eos);
  return out;
}

std::string VocabTokenizer::token_to_piece(int32_t id, bool special) const {
  check_id(id);
  switch (vocab_.type(id)) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUnused:
      return special ? vocab_.texts[id] : std::string();
    default:
      return pieces_[id];
  }
}

std::string VocabTokenizer::piece_after(int32_t previous, int32_t id, bool special) const {
  return token_to_piece(id, special);
}

const std::string& VocabTokenizer::token_text(int32_t id) const {
  check_id(id);
  return vocab_.texts[id];
}

std::string VocabTokenizer::decode(const std::vector<int32_t>& ids, bool special) const {
  std::string out;
  int32_t previous = -1;
  for (int32_t id : ids) {
    out += piece_after(previous, id, special);
    previous = id;
  }
  return out;
}

}  // namespace tps
