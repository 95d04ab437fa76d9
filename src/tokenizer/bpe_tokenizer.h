#pragma once
// Byte-level BPE (tokenizer.ggml.model = "gpt2"): the pre-tokenizer cuts text into
// words, each word's bytes are spelled with GPT-2's byte-to-unicode alphabet, and
// adjacent symbols merge in the order of tokenizer.ggml.merges (lowest rank first).
#include <array>
#include <unordered_map>

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
  struct Scratch;
  struct Merge {
    int32_t rank;  // position in tokenizer.ggml.merges: lower merges first
    int32_t id;    // the token the pair becomes
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  // `piece` is raw text (one pre-tokenizer word).
  void encode_word(std::string_view piece, Scratch& scratch, std::vector<int32_t>& out) const;

  PreTokenizer pre_;
  bool ignore_merges_;
  std::array<int32_t, 256> byte_ids_;            // the token of each byte's character, or -1
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> merge
};

// GPT-2's reversible byte <-> printable-character mapping.
const std::string& bpe_byte_to_text(uint8_t byte);  // UTF-8 of the character for a byte
int bpe_text_to_byte(char32_t cp);                  // -1 for characters outside the alphabet

}  // namespace tps
