#include "model/synth_vocab.h"

#include "core/error.h"

namespace tps {

namespace {

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace

std::string gpt2_byte_token(uint8_t byte) {
  // Printable Latin-1 bytes stand for themselves; the others are numbered from U+0100
  // in byte order.
  auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
  if (printable(byte)) return utf8(byte);
  uint32_t n = 0;
  for (int b = 0; b < byte; ++b) n += printable(b) ? 0 : 1;
  return utf8(256 + n);
}

BpeVocab builtin_bpe_vocab(int64_t size) {
  if (size < 258) fail("a byte-level BPE vocabulary needs at least 258 tokens, not {}", size);
  BpeVocab v;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(gpt2_byte_token(static_cast<uint8_t>(b)));
  // Fillers grow words letter by letter, breadth first: "Ġa".."zz", then "Ġab".., so
  // every merge joins two tokens that already exist and ranks follow length.
  const std::string space = gpt2_byte_token(' ');
  std::vector<std::string> level = {space};
  for (char c = 'a'; c <= 'z'; ++c) level.push_back(std::string(1, c));
  const int64_t n_fill = size - 1 - 256;
  while (static_cast<int64_t>(v.merges.size()) < n_fill) {
    std::vector<std::string> next;
    for (const auto& left : level) {
      for (char c = 'a'; c <= 'z' && static_cast<int64_t>(v.merges.size()) < n_fill; ++c) {
        std::string right(1, c);
        v.merges.push_back(left + " " + right);
        v.tokens.push_back(left + right);
        next.push_back(left + right);
      }
    }
    level = std::move(next);
  }
  v.token_types.assign(v.tokens.size(), 1);
  v.tokens.push_back("<|endoftext|>");
  v.token_types.push_back(3);
  v.bos_id = v.eos_id = static_cast<int32_t>(v.tokens.size() - 1);
  return v;
}

}  // namespace tps
