#include "model/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "formats/gguf.h"
#include "model/synth_vocab.h"
#include "quant/quantize.h"
#include "tokenizer/tokenizer.h"

#include "support/test_files.h"

namespace tps {
namespace {

namespace fs = std::filesystem;

using test::read_all;
using test::temp_path;

// Small enough to be quick, with rows that fit every block size (256) so no fallback.
ModelConfig small_config() {
  ModelConfig c;
  c.name = "test-small";
  c.dim = 256;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.rope_dims = 64;
  c.ffn_dim = 512;
  c.vocab_size = 300;
  c.context_length = 256;
  return c;
}

std::unique_ptr<GgufFile> synth(const ModelConfig& config, const std::string& type, const std::string& file,
                                uint64_t seed = 1, int threads = 2, SynthResult* result = nullptr,
                                const std::string& vocab_from = "", float output_skew = 1) {
  ThreadPool pool(threads);
  SynthOptions o{config, *parse_weight_scheme(type), seed, vocab_from, output_skew};
  std::string path = temp_path(file);
  SynthResult r = synthesize_model(o, path, pool);
  if (result) *result = r;
  auto g = GgufFile::open(path);
  fs::remove(path);  // the map keeps it readable
  return g;
}

void expect_model_shape(const GgufFile& g, const ModelConfig& c) {
  const std::string& a = c.arch;
  EXPECT_EQ(g.get_string("general.architecture"), a);
  EXPECT_EQ(g.get_string("general.name"), c.name);
  EXPECT_TRUE(g.has("general.file_type"));
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.get_int(a + ".embedding_length", 0), c.dim);
  EXPECT_EQ(g.get_int(a + ".block_count", 0), c.n_layers);
  EXPECT_EQ(g.get_int(a + ".feed_forward_length", 0), c.ffn_dim);
  EXPECT_EQ(g.get_int(a + ".attention.head_count", 0), c.n_heads);
  EXPECT_EQ(g.get_int(a + ".attention.head_count_kv", 0), c.n_kv_heads);
  EXPECT_EQ(g.get_int(a + ".context_length", 0), c.context_length);
  EXPECT_EQ(g.get_int(a + ".rope.dimension_count", 0), c.head_dim);
  EXPECT_FLOAT_EQ(g.get_float(a + ".rope.freq_base", 0), c.rope_base);
  EXPECT_FLOAT_EQ(g.get_float(a + ".attention.layer_norm_rms_epsilon", 0), c.rms_eps);
  ASSERT_NE(g.get_string_array("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(static_cast<int64_t>(g.get_string_array("tokenizer.ggml.tokens")->size()), c.vocab_size);

  auto dims = [&](const std::string& name) {
    const GgufTensor* t = g.find_tensor(name);
    return t ? t->dims : std::vector<int64_t>{};
  };
  EXPECT_EQ(dims("token_embd.weight"), (std::vector<int64_t>{c.dim, c.vocab_size}));
  EXPECT_EQ(dims("output_norm.weight"), (std::vector<int64_t>{c.dim}));
  EXPECT_EQ(g.find_tensor("output.weight") == nullptr, c.tied_output);
  size_t per_layer = c.qkv_bias ? 12 : 9;
  EXPECT_EQ(g.tensors().size(), 2 + (c.tied_output ? 0 : 1) + per_layer * c.n_layers);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(dims(p + "attn_q.weight"), (std::vector<int64_t>{c.dim, c.q_dim()}));
    EXPECT_EQ(dims(p + "attn_k.weight"), (std::vector<int64_t>{c.dim, c.kv_dim()}));
    EXPECT_EQ(dims(p + "attn_v.weight"), (std::vector<int64_t>{c.dim, c.kv_dim()}));
    EXPECT_EQ(dims(p + "attn_output.weight"), (std::vector<int64_t>{c.q_dim(), c.dim}));
    EXPECT_EQ(dims(p + "ffn_gate.weight"), (std::vector<int64_t>{c.dim, c.ffn_dim}));
    EXPECT_EQ(dims(p + "ffn_up.weight"), (std::vector<int64_t>{c.dim, c.ffn_dim}));
    EXPECT_EQ(dims(p + "ffn_down.weight"), (std::vector<int64_t>{c.ffn_dim, c.dim}));
    EXPECT_EQ(g.find_tensor(p + "attn_norm.weight")->type, GgmlType::kF32);
    EXPECT_EQ(g.find_tensor(p + "ffn_norm.weight")->type, GgmlType::kF32);
    if (c.qkv_bias) {
      EXPECT_EQ(dims(p + "attn_q.bias"), (std::vector<int64_t>{c.q_dim()}));
    }
  }
}

// Mean and standard deviation of a tensor after dequantization.
std::pair<double, double> stats(const GgufTensor& t) {
  std::vector<float> row(t.row_length());
  double sum = 0, sum2 = 0;
  size_t rb = row_bytes(t.type, t.row_length());
  for (int64_t r = 0; r < t.n_rows(); ++r) {
    dequantize_row(t.type, t.data + r * rb, row.data(), t.row_length());
    for (float v : row) {
      sum += v;
      sum2 += double(v) * v;
    }
  }
  double n = double(t.n_elements());
  return {sum / n, std::sqrt(sum2 / n - (sum / n) * (sum / n))};
}

TEST(Synth, EveryWeightTypeHasTheShapeTypesAndMetadata) {
  ModelConfig c = small_config();
  for (const auto& name : weight_scheme_names()) {
    SCOPED_TRACE(name);
    WeightScheme scheme = *parse_weight_scheme(name);
    auto g = synth(c, name, name + ".gguf");
    expect_model_shape(*g, c);
    EXPECT_EQ(g->get_int("general.file_type", -1), scheme.file_type());
    for (const auto& t : g->tensors()) {
      if (t.dims.size() == 1) continue;
      GgmlType expected = scheme.base;
      if (scheme.q4_k_m) {
        // Q4_K_M: output and, with 3 layers, attn_v/ffn_down of layer 2 get Q6_K.
        bool more = t.name == "output.weight" || t.name == "blk.2.attn_v.weight" || t.name == "blk.2.ffn_down.weight";
        expected = more ? GgmlType::kQ6_K : GgmlType::kQ4_K;
      }
      EXPECT_EQ(t.type, expected) << t.name;
    }
    // Weights look like normal(0, 0.02) after the round trip; norms are ones.
    auto [mean, sd] = stats(*g->find_tensor("blk.1.ffn_up.weight"));
    EXPECT_NEAR(mean, 0.0, 0.002);
    EXPECT_NEAR(sd, 0.02, 0.003);
    auto [norm_mean, norm_sd] = stats(*g->find_tensor("blk.0.attn_norm.weight"));
    EXPECT_EQ(norm_mean, 1.0);
    EXPECT_EQ(norm_sd, 0.0);
  }
}

TEST(Synth, PresetsKeepTheirShapeAndFallBackWhereBlocksDoNotFit) {
  ModelConfig stories = *find_model_preset("stories260k");
  SynthResult r;
  auto g = synth(stories, "q4_k_m", "stories.gguf", 1, 2, &r);
  expect_model_shape(*g, stories);
  // Rows of 64 take Q5_0 for Q4_K (Q8_0 for Q6_K), rows of 172 fit no block: F16.
  EXPECT_EQ(g->find_tensor("blk.0.attn_q.weight")->type, GgmlType::kQ5_0);
  EXPECT_EQ(g->find_tensor("output.weight")->type, GgmlType::kQ8_0);
  EXPECT_EQ(g->find_tensor("blk.0.ffn_down.weight")->type, GgmlType::kF16);
  EXPECT_FALSE(r.notes.empty());
  // IQ4_XS's rows of 64 take IQ4_NL, as llama.cpp's quantizer does.
  g = synth(stories, "iq4_xs", "stories-iq4.gguf");
  EXPECT_EQ(g->find_tensor("blk.0.attn_q.weight")->type, GgmlType::kIQ4_NL);
  EXPECT_EQ(g->find_tensor("blk.0.ffn_down.weight")->type, GgmlType::kF16);

  ModelConfig qwen = *find_model_preset("qwen2.5-0.5b");
  qwen.n_layers = 1;
  qwen.vocab_size = 1000;  // the real 151936 makes a slow test
  g = synth(qwen, "q8_0", "qwen.gguf");
  expect_model_shape(*g, qwen);
  EXPECT_EQ(g->get_string("general.architecture"), "qwen2");
}

TEST(Synth, SeededAndIndependentOfThreadCount) {
  ModelConfig c = small_config();
  ThreadPool one(1), two(2);
  SynthOptions o{c, *parse_weight_scheme("q4_0"), 42, ""};
  std::string a = temp_path("a.gguf"), b = temp_path("b.gguf"), d = temp_path("d.gguf");
  synthesize_model(o, a, one);
  synthesize_model(o, b, two);
  o.seed = 43;
  synthesize_model(o, d, two);
  auto bytes_a = read_all(a);
  EXPECT_EQ(bytes_a, read_all(b));
  EXPECT_NE(bytes_a, read_all(d));
  for (const auto& p : {a, b, d}) fs::remove(p);
}

// A seed's weights are the same numbers in every weight type (each quantized from them),
// so a small quantized file of a seed can draft for its larger float file.
TEST(Synth, ASeedWritesTheSameWeightsInEveryType) {
  const ModelConfig c = small_config();
  auto f32 = synth(c, "f32", "same_f32.gguf", 5);
  auto other = synth(c, "f32", "other_f32.gguf", 6);
  for (const std::string type : {"f16", "q8_0", "q4_0", "q4_k"}) {
    auto q = synth(c, type, "same_" + type + ".gguf", 5);
    for (const GgufTensor& t : f32->tensors()) {
      const GgufTensor* u = q->find_tensor(t.name);
      ASSERT_NE(u, nullptr) << t.name;
      const int64_t n = t.n_elements();
      std::vector<float> a(n), b(n), d(n);
      dequantize_row(t.type, t.data, a.data(), n);
      dequantize_row(u->type, u->data, b.data(), n);
      dequantize_row(GgmlType::kF32, other->find_tensor(t.name)->data, d.data(), n);
      double err = 0, diff = 0, norm = 0;
      for (int64_t i = 0; i < n; ++i) {
        err += (a[i] - b[i]) * (a[i] - b[i]);
        diff += (a[i] - d[i]) * (a[i] - d[i]);
        norm += a[i] * a[i];
      }
      // Q4_0's rounding leaves about 10 % relative error; another seed about 140 %.
      EXPECT_LT(std::sqrt(err / norm), 0.15) << type << " " << t.name;
      if (t.name.find("norm") == std::string::npos) {  // norms are ones
        EXPECT_GT(std::sqrt(diff / norm), 1.0) << t.name;
      }
    }
  }
}

TEST(Synth, BuiltinVocabularyIsAValidByteLevelBpe) {
  BpeVocab v = builtin_bpe_vocab(2000);
  ASSERT_EQ(v.tokens.size(), 2000u);
  std::set<std::string> unique(v.tokens.begin(), v.tokens.end());
  EXPECT_EQ(unique.size(), v.tokens.size());
  EXPECT_EQ(v.tokens[' '], "\xC4\xA0");  // Ġ
  EXPECT_EQ(v.tokens['A'], "A");
  EXPECT_EQ(v.tokens[0], "\xC4\x80");  // Ā
  EXPECT_EQ(v.bos_id, 1999);
  EXPECT_EQ(v.token_types[1999], 3);
  // Every merge joins two existing tokens into a token that exists, and each side
  // exists before the merge that uses it (rank order).
  std::set<std::string> known(v.tokens.begin(), v.tokens.begin() + 256);
  for (const auto& m : v.merges) {
    auto space = m.find(' ');
    ASSERT_NE(space, std::string::npos);
    std::string left = m.substr(0, space), right = m.substr(space + 1);
    EXPECT_TRUE(known.count(left) && known.count(right)) << m;
    EXPECT_TRUE(unique.count(left + right)) << m;
    known.insert(left + right);
  }
  EXPECT_THROW(builtin_bpe_vocab(100), Error);
}

TEST(Synth, BuiltinVocabularyLoadsAsAByteLevelBpeTokenizer) {
  ModelConfig c = small_config();
  c.vocab_size = 2000;
  auto g = synth(c, "q8_0", "tok.gguf");
  auto tok = Tokenizer::from_gguf(*g);
  EXPECT_EQ(tok->kind(), TokenizerKind::kBpe);
  EXPECT_EQ(tok->vocab_size(), 2000);
  EXPECT_EQ(tok->eos_id(), 1999);
  const std::string text = "hello world, Grüße 123!";
  std::vector<int32_t> ids = tok->encode(text, false, false);
  EXPECT_LT(ids.size(), text.size());  // the fillers merge letters
  EXPECT_EQ(tok->decode(ids), text);
}

std::string fixtures() {
  const char* env = std::getenv("TPS_FIXTURES");
  return env ? env : TPS_SOURCE_DIR "/../shared/fixtures";
}

TEST(Synth, VocabularyFromAnotherGguf) {
  std::string vocab = fixtures() + "/vocab/ggml-vocab-llama-spm.gguf";
  if (!fs::exists(vocab)) GTEST_SKIP() << "fixtures not found at " << fixtures() << " (set TPS_FIXTURES)";
  auto from = GgufFile::open(vocab);
  ModelConfig c = small_config();
  SynthResult r;
  auto g = synth(c, "q8_0", "vocab.gguf", 1, 2, &r, vocab);
  c.vocab_size = static_cast<int64_t>(from->get_string_array("tokenizer.ggml.tokens")->size());
  expect_model_shape(*g, c);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("replaces the preset's 300"), std::string::npos) << r.notes[0];
  for (const auto& [key, value] : from->metadata())
    if (key.rfind("tokenizer.", 0) == 0) {
      EXPECT_TRUE(g->has(key)) << key;
    }
  EXPECT_EQ(g->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(g->get_string("general.name"), c.name);  // only tokenizer.* is copied
}

// --output-skew S scales the output row of the rank-r normal token (byte tokens left
// out) by S (r + 1)^-log_1000(S), from S down to 1 at rank 999; every other row and
// tensor keeps the weights of the unskewed file of the seed.
void expect_skewed_output(const GgufFile& plain, const GgufFile& skewed, float skew,
                          const std::vector<int64_t>& ranked_ids) {
  std::vector<float> want_scale(plain.find_tensor("output.weight")->n_rows(), 1.0f);
  for (size_t r = 0; r < ranked_ids.size() && r < 1000; ++r)
    want_scale[ranked_ids[r]] = skew * std::pow(float(r + 1), -std::log(skew) / std::log(1000.0f));
  for (const GgufTensor& t : plain.tensors()) {
    const GgufTensor* u = skewed.find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    if (t.name != "output.weight") {
      EXPECT_EQ(std::memcmp(t.data, u->data, t.nbytes), 0) << t.name;
      continue;
    }
    const auto* a = reinterpret_cast<const float*>(t.data);
    const auto* b = reinterpret_cast<const float*>(u->data);
    for (int64_t row = 0; row < t.n_rows(); ++row)
      for (int64_t i = 0; i < t.row_length(); ++i)
        ASSERT_NEAR(b[row * t.row_length() + i], a[row * t.row_length() + i] * want_scale[row],
                    1e-5f * std::abs(a[row * t.row_length() + i] * want_scale[row]) + 1e-9f)
            << "row " << row;
  }
}

TEST(Synth, OutputSkewWidensTheFirstTokensRows) {
  ModelConfig c = small_config();  // 256 bytes, 43 fillers, one special token
  auto plain = synth(c, "f32", "unskewed.gguf", 3);
  auto skewed = synth(c, "f32", "skewed.gguf", 3, 2, nullptr, "", 10);
  std::vector<int64_t> fillers;
  for (int64_t id = 256; id < 299; ++id) fillers.push_back(id);
  expect_skewed_output(*plain, *skewed, 10, fillers);
  EXPECT_THROW(synth(c, "f32", "bad.gguf", 3, 2, nullptr, "", 0.5f), Error);
}

TEST(Synth, OutputSkewRanksTheNormalTokensOfACopiedVocabulary) {
  std::string vocab = fixtures() + "/vocab/ggml-vocab-llama-spm.gguf";
  if (!fs::exists(vocab)) GTEST_SKIP() << "fixtures not found at " << fixtures() << " (set TPS_FIXTURES)";
  ModelConfig c = small_config();
  c.dim = 32;  // a 32000-token head, kept small
  auto plain = synth(c, "f32", "spm-unskewed.gguf", 3, 2, nullptr, vocab);
  auto skewed = synth(c, "f32", "spm-skewed.gguf", 3, 2, nullptr, vocab, 4);
  std::vector<int64_t> normal;  // SentencePiece lists <unk>, <s>, </s> and the bytes first, by type
  const auto* types = plain->get_number_array("tokenizer.ggml.token_type");
  ASSERT_NE(types, nullptr);
  for (size_t id = 0; id < types->size(); ++id)
    if ((*types)[id] == 1) normal.push_back(static_cast<int64_t>(id));
  ASSERT_GT(normal.front(), 256);
  expect_skewed_output(*plain, *skewed, 4, normal);
}

int run_tps(const std::string& args) {
  std::string cmd = std::string(TPS_BINARY) + " " + args + " >/dev/null 2>&1";
  return WEXITSTATUS(std::system(cmd.c_str()));
}

TEST(Synth, CommandLine) {
  EXPECT_EQ(run_tps("synth --list"), 0);
  std::string out = temp_path("cli.gguf");
  EXPECT_EQ(run_tps("synth --preset stories260k --type q8_0 --seed 7 -o " + out), 0);
  auto g = GgufFile::open(out);
  expect_model_shape(*g, *find_model_preset("stories260k"));
  EXPECT_EQ(run_tps("synth --preset smollm2-135m --layers 1 --type f16 -o " + out), 0);
  g = GgufFile::open(out);
  EXPECT_EQ(g->get_int("llama.block_count", 0), 1);
  EXPECT_EQ(g->find_tensor("output.weight"), nullptr);  // tied
  fs::remove(out);
  EXPECT_EQ(run_tps("synth --preset no-such-model -o " + out), 2);
  EXPECT_EQ(run_tps("synth --preset stories260k --type q3_z -o " + out), 2);
  EXPECT_EQ(run_tps("synth --preset stories260k"), 2);
  EXPECT_EQ(run_tps("synth --preset stories260k --layers 0 -o " + out), 2);
  EXPECT_EQ(run_tps("synth --preset stories260k --output-skew 0.5 -o " + out), 2);
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace tps
