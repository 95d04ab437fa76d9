// `tps tokenize`: the token ids (or pieces) a model's vocabulary gives for a text.
// Works on vocabulary-only GGUFs too: only the tokenizer.ggml.* metadata is read.
#include <cstdio>

#include "cli/command.h"
#include "cli/text_file.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

namespace tps::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool pieces = false;
  bool no_bos = false;
  bool parse_special = false;
};

// Vocabulary strings can hold control bytes and partial UTF-8: escape those bytes.
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02X}", c);
    else out += static_cast<char>(c);
  }
  return out;
}

int run_tokenize(const TokenizeOptions& o) {
  if (!o.file.empty() && !o.text.empty()) fail("give the text or --file, not both");
  const std::string text = o.file.empty() ? o.text : read_text_file(o.file);
  auto file = GgufFile::open(o.model);
  auto tokenizer = Tokenizer::from_gguf(*file);
  const auto ids = tokenizer->encode(text, !o.no_bos, o.parse_special);
  if (o.pieces) {
    for (int32_t id : ids) std::printf("%d\t%s\n", id, printable(tokenizer->token_text(id)).c_str());
    return 0;
  }
  std::string line;
  for (int32_t id : ids) {
    if (!line.empty()) line += ' ';
    line += std::to_string(id);
  }
  std::printf("%s\n", line.c_str());
  return 0;
}

const CommandRegistration kRegistration{
    "tokenize", "print the token ids of a text with a model's (or vocabulary GGUF's) tokenizer",
    [](CLI::App& sub) -> std::function<int()> {
      auto o = std::make_shared<TokenizeOptions>();
      sub.add_option("-m,--model", o->model, "GGUF model or vocabulary file")->required();
      sub.add_option("text", o->text, "text to tokenize");
      sub.add_option("--file", o->file, "read the text from this file instead");
      sub.add_flag("--pieces", o->pieces, "print one token per line: id, then its vocabulary text");
      sub.add_flag("--no-bos", o->no_bos, "add no BOS/EOS tokens");
      sub.add_flag("--parse-special", o->parse_special, "turn special-token text like <|im_start|> into its token");
      return [o] { return run_tokenize(*o); };
    }};

}  // namespace
}  // namespace tps::cli
