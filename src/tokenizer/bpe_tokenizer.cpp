#include "tokenizer/bpe_tokenizer.h"

#include <queue>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace tps {
namespace {

// Printable bytes stand for themselves; the other 68 take the characters from U+0100 on.
struct ByteAlphabet {
  std::array<std::string, 256> text;
  std::array<int16_t, 324> byte;  // by code point; U+0100 + 67 is the last one used
  ByteAlphabet() {
    byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const char32_t cp = printable ? static_cast<char32_t>(b) : next++;
      utf8::append(text[b], cp);
      byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

struct Symbol {
  int32_t prev;
  int32_t next;
  size_t start;
  size_t n;  // 0 once merged into the symbol on its left
};

struct Bigram {
  int32_t rank;
  int32_t left;
  int32_t right;
  size_t left_n;
  size_t right_n;
  // std::priority_queue pops the largest: make that the lowest rank, then the leftmost.
  bool operator<(const Bigram& o) const { return rank > o.rank || (rank == o.rank && left > o.left); }
};

}  // namespace

const std::string& bpe_byte_to_text(uint8_t byte) { return alphabet().text[byte]; }

int bpe_text_to_byte(char32_t cp) { return cp < alphabet().byte.size() ? alphabet().byte[cp] : -1; }

BpeTokenizer::BpeTokenizer(Vocab vocab, const std::vector<std::string>& merges)
    : VocabTokenizer(std::move(vocab)),
      pre_(pre_tokenizer_spec(vocab_.pre).patterns),
      ignore_merges_(pre_tokenizer_spec(vocab_.pre).ignore_merges) {
  ranks_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    // "left right"; the search starts at 1 so a left side that is a space still parses.
    const size_t space = merges[i].find(' ', 1);
    if (space == std::string::npos) fail("tokenizer.ggml.merges[{}] = '{}' is not 'left right'", i, merges[i]);
    ranks_.emplace(merges[i], static_cast<int32_t>(i));
  }
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const std::string& text = vocab_.texts[id];
    if (vocab_.type(id) == TokenType::kUserDefined) {
      pieces_[id] = text;
      continue;
    }
    std::string& piece = pieces_[id];
    for (size_t pos = 0; pos < text.size();) {
      char32_t cp;
      const int len = utf8::decode(text, pos, cp);
      if (len <= 0) {  // not UTF-8: keep the byte
        piece += text[pos++];
        continue;
      }
      const int byte = bpe_text_to_byte(cp);
      if (byte >= 0) piece += static_cast<char>(byte);
      else piece.append(text, pos, len);
      pos += len;
    }
  }
}

int32_t BpeTokenizer::rank(std::string_view left, std::string_view right, std::string& key) const {
  key.assign(left);
  key += ' ';
  key += right;
  auto it = ranks_.find(key);
  return it == ranks_.end() ? -1 : it->second;
}

void BpeTokenizer::encode_text(std::string_view raw, bool at_start, std::vector<int32_t>& out) const {
  // The regexes need valid UTF-8; invalid bytes become U+FFFD, as in llama.cpp.
  const std::string text = utf8::sanitize(raw);
  std::string word;
  std::string key;
  for (std::string_view piece : pre_.split(text)) {
    word.clear();
    for (char c : piece) word += bpe_byte_to_text(static_cast<uint8_t>(c));
    encode_word(word, key, out);
  }
}

void BpeTokenizer::encode_word(std::string_view word, std::string& key, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    const int32_t id = vocab_.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < word.size();) {
    const size_t n = std::min<size_t>(utf8::sequence_length(static_cast<uint8_t>(word[pos])), word.size() - pos);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + n < word.size() ? index + 1 : -1, pos, n});
    pos += n;
  }
  const auto text_of = [&](const Symbol& s) { return word.substr(s.start, s.n); };

  std::priority_queue<Bigram> queue;
  const auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t r = rank(text_of(symbols[left]), text_of(symbols[right]), key);
    if (r >= 0) queue.push({r, left, right, symbols[left].n, symbols[right].n});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    // Stale: either side has changed since this pair was queued.
    if (left.n != b.left_n || right.n != b.right_n || left.next != b.right) continue;
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const std::string_view piece = text_of(symbols[i]);
    const int32_t id = vocab_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // A merge result missing from the vocabulary: fall back to its characters.
    for (size_t pos = 0; pos < piece.size();) {
      const size_t n = std::min<size_t>(utf8::sequence_length(static_cast<uint8_t>(piece[pos])), piece.size() - pos);
      const int32_t char_id = vocab_.find(piece.substr(pos, n));
      if (char_id >= 0) out.push_back(char_id);
      else if (vocab_.unk >= 0) out.push_back(vocab_.unk);
      pos += n;
    }
  }
}

}  // namespace tps
