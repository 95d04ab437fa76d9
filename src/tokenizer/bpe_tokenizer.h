#pragma once
// Byte-level BPE (tokenizer.ggml.model = "gpt2"): the pre-tokenizer cuts text into
// words, each word's bytes are spelled with GPT-2's byte-to-unicode alphabet, and
// adjacent symbols merge in the order of tokenizer.ggml.merges (lowest rank first).
#include <array>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab_tokenizer.h"

namespace tps {

class BpeTokenizer : public VocabTokenizer {
 public:
  BpeTokenizer(Vocab vocab, const std::vector<std::string>& merges);
  TokenizerKind kind() const override { return TokenizerKind::kBpe; }

 protected:
  void encode_text(std::string_view text, bool at_start, std::vector<int32_t>& out) const override;

 private:
  void encode_word(std::string_view word, std::string& key, std::vector<int32_t>& out) const;
  int32_t rank(std::string_view left, std::string_view right, std::string& key) const;

  PreTokenizer pre_;
  bool ignore_merges_;
  StringMap<int32_t> ranks_;  // "left right" -> merge rank
};

// GPT-2's reversible byte <-> printable-character mapping.
const std::string& bpe_byte_to_text(uint8_t byte);  // UTF-8 of the character for a byte
int bpe_text_to_byte(char32_t cp);                  // -1 for characters outside the alphabet

}  // namespace tps
