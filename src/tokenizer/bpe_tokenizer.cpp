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
  int32_t n;   // bytes; 0 once merged into the symbol on its left
  int32_t id;  // its token, -1 for a byte missing from the vocabulary
};

struct Bigram {
  int32_t rank;
  int32_t left;
  int32_t right;
  int32_t left_n;
  int32_t right_n;
  int32_t merged;  // the token the pair becomes
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
  for (int b = 0; b < 256; ++b) byte_ids_[b] = vocab_.find(bpe_byte_to_text(static_cast<uint8_t>(b)));
  // Merges work on token ids: a merge whose sides or result are not tokens could never
  // produce a token, so it is dropped (Hugging Face refuses such vocabularies outright).
  merges_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    // "left right"; the search starts at 1 so a left side that is a space still parses.
    const std::string& merge = merges[i];
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos) fail("tokenizer.ggml.merges[{}] = '{}' is not 'left right'", i, merge);
    const std::string_view left = std::string_view(merge).substr(0, space);
    const std::string_view right = std::string_view(merge).substr(space + 1);
    const int32_t left_id = vocab_.find(left);
    const int32_t right_id = vocab_.find(right);
    const int32_t merged = vocab_.find(std::string(left) + std::string(right));
    if (left_id < 0 || right_id < 0 || merged < 0) continue;
    merges_.emplace(pair_key(left_id, right_id), Merge{static_cast<int32_t>(i), merged});  // first rank wins
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

struct BpeTokenizer::Scratch {
  std::string word;
  std::vector<Symbol> symbols;
  std::vector<Bigram> heap;
};

void BpeTokenizer::encode_text(std::string_view raw, bool at_start, std::vector<int32_t>& out) const {
  // The regexes need valid UTF-8; invalid bytes become U+FFFD, as in llama.cpp.
  const std::string text = utf8::sanitize(raw);
  Scratch scratch;
  for (std::string_view piece : pre_.split(text)) encode_word(piece, scratch, out);
}

void BpeTokenizer::encode_word(std::string_view piece, Scratch& scratch, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    std::string& word = scratch.word;
    word.clear();
    for (char c : piece) word += bpe_byte_to_text(static_cast<uint8_t>(c));
    const int32_t id = vocab_.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  // One symbol per byte to start with; merging keeps the token id of each symbol.
  std::vector<Symbol>& symbols = scratch.symbols;
  symbols.clear();
  const auto count = static_cast<int32_t>(piece.size());
  for (int32_t i = 0; i < count; ++i)
    symbols.push_back({i - 1, i + 1 < count ? i + 1 : -1, 1, byte_ids_[static_cast<uint8_t>(piece[i])]});

  std::vector<Bigram>& heap = scratch.heap;
  heap.clear();
  const auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0 || symbols[left].id < 0 || symbols[right].id < 0) return;
    auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, right, symbols[left].n, symbols[right].n, it->second.id});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int32_t i = 1; i < count; ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Bigram b = heap.back();
    heap.pop_back();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    // Stale: either side has changed since this pair was queued.
    if (left.n != b.left_n || right.n != b.right_n || left.next != b.right) continue;
    left.n += right.n;
    left.id = b.merged;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  for (int32_t i = 0; i >= 0 && i < count; i = symbols[i].next) {
    if (symbols[i].id >= 0) out.push_back(symbols[i].id);
    else if (vocab_.unk >= 0) out.push_back(vocab_.unk);  // a byte the vocabulary cannot spell
  }
}

}  // namespace tps
