#pragma once
// SentencePiece-style tokenizer (tokenizer.ggml.model = "llama"), as llama.cpp runs it:
// spaces become U+2581, an optional space prefix, greedy merges of the adjacent pair
// whose joined text is the best-scoring token, and <0xNN> byte tokens for the rest.
#include <array>

#include "tokenizer/vocab_tokenizer.h"

namespace tps {

class SpmTokenizer : public VocabTokenizer {
 public:
  explicit SpmTokenizer(Vocab vocab);
  TokenizerKind kind() const override { return TokenizerKind::kSpm; }
  std::string piece_after(int32_t previous, int32_t id, bool special = false) const override;

 protected:
  void encode_text(std::string_view text, bool at_start, std::vector<int32_t>& out) const override;

 private:
  struct Scratch;
  void encode_segment(std::string_view text, Scratch& scratch, std::vector<int32_t>& out) const;

  std::array<int32_t, 256> byte_tokens_;  // <0xNN> (or the byte itself) token; -1: none
  bool words_are_independent_ = false;   // see the constructor
};

}  // namespace tps
