#include "tokenizer/tokenizer.h"

#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/utf8.h"

namespace tps {

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
  if (!file.has("tokenizer.ggml.model"))
    fail("{}: no tokenizer metadata (tokenizer.ggml.model is missing)", file.path());
  const std::string model = file.get_string("tokenizer.ggml.model");
  if (model == "llama") return std::make_unique<SpmTokenizer>(Vocab::from_gguf(file, true));
  if (model == "gpt2") {
    Vocab vocab = Vocab::from_gguf(file, false);
    if (!file.has("tokenizer.ggml.add_bos_token")) vocab.add_bos = pre_tokenizer_spec(vocab.pre).add_bos;
    const auto* merges = file.get_string_array("tokenizer.ggml.merges");
    if (!merges) fail("{}: tokenizer.ggml.merges is missing (needed by a gpt2 tokenizer)", file.path());
    return std::make_unique<BpeTokenizer>(std::move(vocab), *merges);
  }
  fail("{}: unsupported tokenizer model '{}' (supported: llama, gpt2)", file.path(), model);
}

std::string StreamingDecoder::push(int32_t id) {
  pending_ += tokenizer_.piece_after(previous_, id);
  previous_ = id;
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    char32_t cp;
    const int len = utf8::decode(pending_, pos, cp);
    if (len < 0) break;  // a character still waiting for its next bytes
    if (len == 0) {
      utf8::append(out, utf8::kReplacement);
      ++pos;
    } else {
      out.append(pending_, pos, len);
      pos += len;
    }
  }
  pending_.erase(0, pos);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out = utf8::sanitize(pending_);
  pending_.clear();
  return out;
}

}  // namespace tps
