#include <cctype>
#include <cstring>

#include "core/error.h"
#include "formats/gguf.h"
#include "formats/llama2c.h"

namespace tps {

namespace {

// SentencePiece token types as llama.cpp stores them.
constexpr int32_t kTypeNormal = 1, kTypeUnknown = 2, kTypeControl = 3, kTypeByte = 6;

bool is_byte_token(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return false;
  return std::isxdigit(static_cast<unsigned char>(t[3])) && std::isxdigit(static_cast<unsigned char>(t[4]));
}

// llama2.c's tokenizer export stores pieces with real spaces and the specials as
// "\n<s>\n"; GGUF keeps SentencePiece's own text: U+2581 for spaces, bare specials.
void add_vocab(GgufWriter& w, const Llama2cVocab& vocab) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    const std::string& raw = vocab.tokens[i];
    if (i == 0) {
      tokens.push_back("<unk>");
      types.push_back(kTypeUnknown);
    } else if (i == 1 || i == 2) {
      tokens.push_back(i == 1 ? "<s>" : "</s>");
      types.push_back(kTypeControl);
    } else if (is_byte_token(raw)) {
      tokens.push_back(raw);
      types.push_back(kTypeByte);
    } else {
      std::string text;
      for (char ch : raw) text += ch == ' ' ? std::string("\xE2\x96\x81") : std::string(1, ch);
      tokens.push_back(std::move(text));
      types.push_back(kTypeNormal);
    }
  }
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_f32_array("tokenizer.ggml.scores", vocab.scores);
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
}

}  // namespace

void write_llama2c_gguf(const Llama2cModel& model, const Llama2cVocab& vocab, const std::string& name,
                        const std::string& out_path) {
  const Llama2cCheckpoint& c = model.checkpoint();
  if (static_cast<int64_t>(vocab.tokens.size()) != c.vocab_size)
    fail("the tokenizer has {} tokens, the model {}", vocab.tokens.size(), c.vocab_size);
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", name);
  w.set_u32("general.file_type", 0);  // all F32
  w.set_u32("llama.context_length", static_cast<uint32_t>(c.seq_len));
  w.set_u32("llama.embedding_length", static_cast<uint32_t>(c.dim));
  w.set_u32("llama.feed_forward_length", static_cast<uint32_t>(c.hidden_dim));
  w.set_u32("llama.attention.head_count", static_cast<uint32_t>(c.n_heads));
  w.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(c.n_kv_heads));
  w.set_u32("llama.block_count", static_cast<uint32_t>(c.n_layers));
  w.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(c.head_dim()));
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);  // llama2.c's model.py default
  add_vocab(w, vocab);
  for (const auto& t : c.tensors) {
    std::vector<int64_t> dims = t.rows == 1 ? std::vector<int64_t>{t.cols} : std::vector<int64_t>{t.cols, t.rows};
    w.add_tensor(t.name, GgmlType::kF32, dims,
                 [&t](std::span<uint8_t> dst) { t.read_f32(reinterpret_cast<float*>(dst.data())); });
  }
  w.write(out_path);
}

}  // namespace tps
