#include "tokenizer/spm_tokenizer.h"

#include <queue>

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
    byte_tokens_[b] = id >= 0 ? id : vocab_.unk;
  }
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

void SpmTokenizer::encode_text(std::string_view raw, bool at_start, std::vector<int32_t>& out) const {
  std::string text;
  text.reserve(raw.size() + 16);
  if (vocab_.add_space_prefix && at_start) text += kSpace;
  for (char c : raw) {
    if (c == ' ') text += kSpace;
    else text += c;
  }
  if (text.empty()) return;

  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = std::min<size_t>(utf8::sequence_length(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + n < text.size() ? index + 1 : -1, pos, n});
    pos += n;
  }

  std::priority_queue<Bigram> queue;
  const auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols[left].n + symbols[right].n;
    const int32_t id = vocab_.find(std::string_view(text).substr(symbols[left].start, size));
    if (id >= 0) queue.push({vocab_.scores[id], left, right, size});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
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
    const std::string_view piece = std::string_view(text).substr(symbols[i].start, symbols[i].n);
    const int32_t id = vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const int32_t byte_id = byte_tokens_[static_cast<uint8_t>(c)];
      if (byte_id >= 0) out.push_back(byte_id);
    }
  }
}

}  // namespace tps
