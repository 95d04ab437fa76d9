#pragma once
// Tokenizers built from GGUF metadata (tokenizer.ggml.*): SentencePiece-style ("llama")
// and byte-level BPE ("gpt2") with the pre-tokenizer named by tokenizer.ggml.pre.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tps {

class GgufFile;

enum class TokenizerKind { kSpm, kBpe };

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Throws tps::Error when the metadata is missing or inconsistent.
  static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);

  virtual TokenizerKind kind() const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when the vocabulary has none
  virtual int32_t eos_id() const = 0;
  virtual bool add_bos() const = 0;     // tokenizer.ggml.add_bos_token (or the kind's default)
  // End-of-generation: EOS, EOT, <|im_end|> and the like.
  virtual bool is_eog(int32_t id) const = 0;
  virtual bool is_control(int32_t id) const = 0;

  // add_special: add BOS (and EOS where the vocabulary asks) as the metadata says.
  // parse_special: text like "<|im_start|>" becomes its special token.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const = 0;
  // The bytes a token stands for (control tokens give their text only if `special`).
  virtual std::string token_to_piece(int32_t id, bool special = false) const = 0;
  // The raw vocabulary string of a token (for --pieces and debugging).
  virtual const std::string& token_text(int32_t id) const = 0;
  // The piece of `id` as it reads after token `previous` (-1: none): SentencePiece drops
  // the leading space of the piece after BOS (as llama2.c and SentencePiece decode).
  virtual std::string piece_after(int32_t previous, int32_t id, bool special = false) const = 0;
  // Concatenated pieces, with the SentencePiece leading space removed after BOS.
  virtual std::string decode(const std::vector<int32_t>& ids, bool special = false) const = 0;
  // Looks up an exact vocabulary string; -1 when absent.
  virtual int32_t find_token(std::string_view text) const = 0;
};

// Turns a stream of token ids into text that is always valid UTF-8: bytes of a
// character split across tokens are held back until the character is complete.
class StreamingDecoder {
 public:
  // previous: the token before the first one pushed (a prompt's last), which decides
  // how that one's text starts (SentencePiece drops a leading space after BOS).
  explicit StreamingDecoder(const Tokenizer& tokenizer, int32_t previous = -1)
      : tokenizer_(tokenizer), previous_(previous) {}
  std::string push(int32_t id);  // text ready to print after this token
  std::string flush();           // what is left at the end (invalid bytes become U+FFFD)

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
  int32_t previous_;
};

}  // namespace tps
