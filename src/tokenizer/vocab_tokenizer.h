#pragma once
// What SentencePiece and BPE tokenizers share: the vocabulary, special-token splitting,
// BOS/EOS handling and decoding from precomputed pieces. Subclasses supply the
// algorithm that turns a run of plain text into ids.
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace tps {

class VocabTokenizer : public Tokenizer {
 public:
  int32_t vocab_size() const override { return vocab_.size(); }
  int32_t bos_id() const override { return vocab_.bos; }
  int32_t eos_id() const override { return vocab_.eos; }
  bool add_bos() const override { return vocab_.add_bos; }
  bool is_eog(int32_t id) const override { return vocab_.valid(id) && vocab_.eog[id]; }
  bool is_control(int32_t id) const override {
    return vocab_.valid(id) && vocab_.type(id) == TokenType::kControl;
  }
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const override;
  std::string token_to_piece(int32_t id, bool special = false) const override;
  std::string piece_after(int32_t previous, int32_t id, bool special = false) const override;
  const std::string& token_text(int32_t id) const override;
  std::string decode(const std::vector<int32_t>& ids, bool special = false) const override;
  int32_t find_token(std::string_view text) const override { return vocab_.find(text); }

  const Vocab& vocab() const { return vocab_; }

 protected:
  explicit VocabTokenizer(Vocab vocab);
  // Appends the ids of plain text (no special tokens in it). `at_start` is true for
  // the first run of text and for text right after a special token.
  virtual void encode_text(std::string_view text, bool at_start, std::vector<int32_t>& out) const = 0;
  void check_id(int32_t id) const;

  Vocab vocab_;
  SpecialTokenSplitter splitter_;
  std::vector<std::string> pieces_;  // decoded bytes of every id (filled by the subclass)
};

}  // namespace tps
