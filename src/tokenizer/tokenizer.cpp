// TEMPORARY (model branch): decode-only SentencePiece vocabulary until the tokenizer
// room lands; replaced on merge.
#include "tokenizer/tokenizer.h"

#include <cstdio>

#include "core/error.h"
#include "formats/gguf.h"

namespace tps {

namespace {

class TempTokenizer : public Tokenizer {
 public:
  explicit TempTokenizer(const GgufFile& f) {
    auto* t = f.get_string_array("tokenizer.ggml.tokens");
    if (!t) fail("no vocabulary");
    tokens_ = *t;
    bos_ = f.get_int("tokenizer.ggml.bos_token_id", 1);
    eos_ = f.get_int("tokenizer.ggml.eos_token_id", 2);
  }
  TokenizerKind kind() const override { return TokenizerKind::kSpm; }
  int32_t vocab_size() const override { return tokens_.size(); }
  int32_t bos_id() const override { return bos_; }
  int32_t eos_id() const override { return eos_; }
  bool add_bos() const override { return true; }
  bool is_eog(int32_t id) const override { return id == eos_; }
  bool is_control(int32_t id) const override { return id == bos_ || id == eos_ || id == 0; }
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool) const override {
    if (!text.empty()) fail("temporary tokenizer: cannot encode");
    if (add_special) return {bos_};
    return {};
  }
  std::string token_to_piece(int32_t id, bool special) const override {
    if (is_control(id)) return special ? tokens_[id] : "";
    const std::string& s = tokens_[id];
    unsigned b;
    if (s.size() == 6 && std::sscanf(s.c_str(), "<0x%02X>", &b) == 1) return std::string(1, static_cast<char>(b));
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.compare(i, 3, "\xe2\x96\x81") == 0) {
        out += ' ';
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  }
  const std::string& token_text(int32_t id) const override { return tokens_[id]; }
  std::string decode(const std::vector<int32_t>& ids, bool special) const override {
    std::string out;
    for (auto id : ids) out += token_to_piece(id, special);
    return out;
  }
  int32_t find_token(std::string_view) const override { return -1; }

 private:
  std::vector<std::string> tokens_;
  int32_t bos_, eos_;
};

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) { return std::make_unique<TempTokenizer>(file); }

std::string StreamingDecoder::push(int32_t id) {
  std::string piece = tokenizer_.token_to_piece(id);
  if (previous_ == tokenizer_.bos_id() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
  previous_ = id;
  return piece;
}
std::string StreamingDecoder::flush() { return {}; }

}  // namespace tps
