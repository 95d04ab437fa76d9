// libFuzzer target: tokenizes and detokenizes arbitrary bytes. Checks that ids are in
// range, that streaming decoding gives valid UTF-8 equal to the sanitized full decode,
// and that the built-in vocabularies round-trip text they can represent.
// TPS_FUZZ_VOCAB=path.gguf adds a real vocabulary (e.g. a fixture) to the built-in ones.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "formats/gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

using tps::GgufWriter;

struct Loaded {
  std::unique_ptr<tps::GgufFile> file;
  std::unique_ptr<tps::Tokenizer> tokenizer;
  bool round_trips = false;  // a built-in vocabulary that can spell every input
};

Loaded load(const std::string& path, bool round_trips) {
  Loaded l;
  l.file = tps::GgufFile::open(path);
  l.tokenizer = tps::Tokenizer::from_gguf(*l.file);
  l.round_trips = round_trips;
  return l;
}

// A SentencePiece vocabulary with byte fallback, a few merges, and special tokens.
void write_spm(const std::string& path) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
    types.push_back(6);
  }
  for (const char* t : {"\xE2\x96\x81", "\xE2\x96\x81t", "h", "e", "he", "\xE2\x96\x81the", "t", "a", "\xC3\xA9"}) {
    tokens.push_back(t);
    types.push_back(1);
  }
  tokens.push_back("<|im_end|>");
  types.push_back(3);
  tokens.push_back("<tool>");
  types.push_back(4);
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i % 7);
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.write(path);
}

// A byte-level BPE vocabulary: the 256-character alphabet, a few merges, special tokens.
void write_bpe(const std::string& path, const std::string& pre) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(tps::bpe_byte_to_text(static_cast<uint8_t>(b)));
    types.push_back(1);
  }
  const std::vector<std::string> merges = {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "a n", "\xC4\xA0 \xC4\xA0"};
  for (const auto& m : merges) {
    tokens.push_back(m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1));
    types.push_back(1);
  }
  tokens.push_back("<|endoftext|>");
  types.push_back(3);
  tokens.push_back("<tool>");
  types.push_back(4);
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_string_array("tokenizer.ggml.merges", merges);
  w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(tokens.size() - 2));
  w.write(path);
}

std::vector<Loaded>& tokenizers() {
  static std::vector<Loaded> all = [] {
    std::vector<Loaded> v;
    const auto dir = std::filesystem::temp_directory_path();
    const std::string stem = (dir / ("tps_fuzz_" + std::to_string(getpid()))).string();
    write_spm(stem + "_spm.gguf");
    v.push_back(load(stem + "_spm.gguf", true));
    for (const char* pre : {"gpt-2", "llama-bpe", "qwen2", "deepseek-coder", "deepseek-llm", "tekken"}) {
      const std::string path = stem + "_" + pre + ".gguf";
      write_bpe(path, pre);
      v.push_back(load(path, true));
    }
    for (const auto& l : v) std::filesystem::remove(l.file->path());  // the maps stay valid
    if (const char* path = std::getenv("TPS_FUZZ_VOCAB")) v.push_back(load(path, false));
    return v;
  }();
  return all;
}

bool valid_utf8(const std::string& s) { return tps::utf8::sanitize(s) == s; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto& all = tokenizers();
  const uint8_t control = data[0];
  const Loaded& l = all[control % all.size()];
  const tps::Tokenizer& tok = *l.tokenizer;
  const bool add_special = control & 0x40;
  const bool parse_special = control & 0x80;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::vector<int32_t> ids = tok.encode(text, add_special, parse_special);
  for (int32_t id : ids)
    if (id < 0 || id >= tok.vocab_size()) std::abort();

  const std::string decoded = tok.decode(ids);
  tps::StreamingDecoder stream(tok);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string part = stream.push(id);
    if (!valid_utf8(part)) std::abort();
    streamed += part;
  }
  streamed += stream.flush();
  if (streamed != tps::utf8::sanitize(decoded)) std::abort();

  if (l.round_trips && !parse_special) {
    std::vector<int32_t> with_bos = tok.encode(text, false, false);
    const bool spm = tok.kind() == tps::TokenizerKind::kSpm;
    if (spm) with_bos.insert(with_bos.begin(), tok.bos_id());
    // SentencePiece reads U+2581 as its space; BPE replaces invalid UTF-8 with U+FFFD.
    const bool representable = spm ? text.find("\xE2\x96\x81") == std::string::npos : valid_utf8(text);
    if (representable && tok.decode(with_bos) != text) std::abort();
  }
  return 0;
}
