#pragma once
// A built-in byte-level BPE vocabulary ("gpt2" model and pre-tokenizer) of any size, for
// random-weight models: 256 byte tokens in GPT-2's byte-to-unicode form, filler tokens
// made by merges of existing tokens (so every merge is valid and every id decodes to
// text), and one special token, <|endoftext|>, as BOS and EOS.
#include <cstdint>
#include <string>
#include <vector>

namespace tps {

struct BpeVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;  // 1 normal, 3 control
  std::vector<std::string> merges;   // "left right", in rank order
  int32_t bos_id = 0;
  int32_t eos_id = 0;
};

// size must be at least 258 (256 bytes, one merge, the special token).
BpeVocab builtin_bpe_vocab(int64_t size);

// GPT-2's printable stand-in (UTF-8) for a raw byte.
std::string gpt2_byte_token(uint8_t byte);

}  // namespace tps
