#include "tokenizer/spm_tokenizer.h"

#include <algorithm>

#include <fmt/format.h>

#include "tokenizer/utf8.h"

namespace tps {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kSpace.size()) == kSpace) {
      out += ' ';
      pos += kSpace.size();
    } else {
      out += text[pos++];
    }
  }
  return out;
}

// "<0xNN>" -> NN, or -1.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') value |= c - '0';
    else if (c >= 'A' && c <= 'F') value |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') value |= c - 'a' + 10;
    else return -1;
  }
  return value;
}

struct Symbol {
  int32_t prev;
  int32_t next;
  size_t start;
  size_t n;  // 0 once merged into the symbol on its left
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  size_t size;
  // Best score first; on a tie the leftmost pair, as SentencePiece does.
  bool operator<(const Bigram& o) const { return score < o.score || (score == o.score && left > o.left); }
};

}  // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab) : VocabTokenizer(std::move(vocab)) {
  for (int b = 0; b < 256; ++b) {
    int32_t id = vocab_.find(fmt::format("<0x{:02X}>", b));
    if (id < 0) id = vocab_.find(std::string(1, static_cast<char>(b)));
    byte_tokens_[b] = id;
  }
  // Words can be merged one by one unless some token holds a U+2581 right after
  // another character (it would join the end of one word to the next).
  words_are_independent_ = std::none_of(vocab_.texts.begin(), vocab_.texts.end(), [](const std::string& t) {
    for (size_t p = t.find(kSpace, 1); p != std::string::npos; p = t.find(kSpace, p + 1))
      if (p < kSpace.size() || t.compare(p - kSpace.size(), kSpace.size(), kSpace) != 0) return true;
    return false;
  });
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const std::string& text = vocab_.texts[id];
    const int byte = vocab_.type(id) == TokenType::kByte ? parse_byte_token(text) : -1;
    if (byte >= 0) pieces_[id] = std::string(1, static_cast<char>(byte));
    else if (vocab_.type(id) == TokenType::kUserDefined) pieces_[id] = text;
    else pieces_[id] = unescape_spaces(text);
  }
}

std::string SpmTokenizer::piece_after(int32_t previous, int32_t id, bool special) const {
  std::string piece = token_to_piece(id, special);
  if (previous >= 0 && previous == vocab_.bos && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
  return piece;
}

struct SpmTokenizer::Scratch {
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
};

void SpmTokenizer::encode_text(std::string_view raw, bool at_start, std::vector<int32_t>& out) const {
  std::string text;
  text.reserve(raw.size() + 16);
  if (vocab_.add_space_prefix && at_start) text += kSpace;
  for (char c : raw) {
    if (c == ' ') text += kSpace;
    else text += c;
  }
  Scratch scratch;
  if (!words_are_independent_) {
    encode_segment(text, scratch, out);
    return;
  }
  // Cut before every U+2581 that follows another character: no token spans such a
  // cut, so merging word by word gives the same ids with small heaps.
  const std::string_view all(text);
  size_t start = 0;
  bool previous_is_space = false;
  for (size_t pos = 0; pos < all.size();) {
    const bool is_space = all.substr(pos, kSpace.size()) == kSpace;
    if (is_space && pos > start && !previous_is_space) {
      encode_segment(all.substr(start, pos - start), scratch, out);
      start = pos;
    }
    previous_is_space = is_space;
    pos += is_space ? kSpace.size() : utf8::char_length(all, pos);
  }
  encode_segment(all.substr(start), scratch, out);
}

void SpmTokenizer::encode_segment(std::string_view text, Scratch& scratch, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::vector<Symbol>& symbols = scratch.symbols;
  symbols.clear();
  for (size_t pos = 0; pos < text.size();) {
    // Invalid bytes are symbols of their own, so they never swallow a following space.
    const size_t n = utf8::char_length(text, pos);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + n < text.size() ? index + 1 : -1, pos, n});
    pos += n;
  }

  std::vector<Bigram>& heap = scratch.heap;
  heap.clear();
  const auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols[left].n + symbols[right].n;
    const int32_t id = vocab_.find(text.substr(symbols[left].start, size));
    if (id < 0) return;
    heap.push_back({vocab_.scores[id], left, right, size});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Bigram b = heap.back();
    heap.pop_back();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    // Stale: one side was merged elsewhere since this pair was queued.
    if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].start, symbols[i].n);
    const int32_t id = vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // Not a token: spell each character with byte tokens, or <unk> where one is missing.
    for (size_t pos = 0; pos < piece.size();) {
      const size_t n = utf8::char_length(piece, pos);
      const std::string_view ch = piece.substr(pos, n);
      pos += n;
      if (std::all_of(ch.begin(), ch.end(), [&](char c) { return byte_tokens_[static_cast<uint8_t>(c)] >= 0; })) {
        for (char c : ch) out.push_back(byte_tokens_[static_cast<uint8_t>(c)]);
      } else if (vocab_.unk >= 0) {
        out.push_back(vocab_.unk);
      }
    }
  }
}

}  // namespace tps
