#include "formats/llama2c.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

#include "support/test_files.h"

namespace tps {
namespace {

namespace fs = std::filesystem;

std::string fixtures() {
  const char* env = std::getenv("TPS_FIXTURES");
  return env ? env : TPS_SOURCE_DIR "/../shared/fixtures";
}

std::string model_path(const std::string& name) { return fixtures() + "/models/" + name; }

#define REQUIRE_FIXTURES()                                                              \
  if (!fs::exists(model_path("stories260K.bin")))                                       \
  GTEST_SKIP() << "fixtures not found at " << fixtures() << " (set TPS_FIXTURES)"

using test::read_all;
using test::read_text;
using test::temp_path;

void write_all(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::unique_ptr<GgufFile> convert(const std::string& model, const std::string& out_name) {
  auto m = Llama2cModel::open(model);
  Llama2cVocab vocab = read_llama2c_vocab(model_path("tok512.bin"), m->checkpoint().vocab_size);
  std::string out = temp_path(out_name);
  write_llama2c_gguf(*m, vocab, "stories260K", out);
  auto g = GgufFile::open(out);
  fs::remove(out);  // the map keeps the data alive
  return g;
}

const float* floats(const GgufTensor& t) { return reinterpret_cast<const float*>(t.data); }

TEST(Llama2c, LegacyCheckpointConvertsToLlamaCppsGguf) {
  REQUIRE_FIXTURES();
  auto ours = convert(model_path("stories260K.bin"), "legacy.gguf");
  auto ref = GgufFile::open(model_path("stories260K.gguf"));

  // Tensors: same names, order, shapes and exactly the same values. No permutation of
  // wq/wk is needed: llama2.c and GGUF's llama both rotate adjacent pairs.
  ASSERT_EQ(ours->tensors().size(), ref->tensors().size());
  for (size_t i = 0; i < ref->tensors().size(); ++i) {
    const GgufTensor& r = ref->tensors()[i];
    const GgufTensor& o = ours->tensors()[i];
    ASSERT_EQ(o.name, r.name);
    ASSERT_EQ(o.dims, r.dims) << r.name;
    ASSERT_EQ(o.type, GgmlType::kF32);
    EXPECT_EQ(std::memcmp(o.data, r.data, r.nbytes), 0) << r.name;
  }

  // Metadata: every key llama.cpp wrote, with its value, except the ones that differ
  // on purpose: the name, the context (llama2.c's seq_len rather than the converter's
  // default) and the "none" padding/separator ids.
  for (const auto& [key, value] : ref->metadata()) {
    if (key == "tokenizer.ggml.padding_token_id" || key == "tokenizer.ggml.seperator_token_id") continue;
    const GgufValue* v = ours->find(key);
    ASSERT_NE(v, nullptr) << key;
    if (key == "general.name" || key == "llama.context_length") continue;
    EXPECT_EQ(v->type, value.type) << key;
    EXPECT_EQ(v->str, value.str) << key;
    EXPECT_EQ(v->integer, value.integer) << key;
    EXPECT_EQ(v->real, value.real) << key;
    EXPECT_EQ(v->strings, value.strings) << key;
    EXPECT_EQ(v->numbers, value.numbers) << key;
  }
  EXPECT_EQ(ours->get_int("llama.context_length", 0), 512);
}

TEST(Llama2c, Version2DequantizesGroupsOverTheFlattenedTensor) {
  REQUIRE_FIXTURES();
  auto m = Llama2cModel::open(model_path("stories260K_q80.v2.bin"));
  EXPECT_EQ(m->checkpoint().version, 2);
  EXPECT_EQ(m->checkpoint().group_size, 32);
  auto ours = convert(model_path("stories260K_q80.v2.bin"), "v2.gguf");
  auto ref = GgufFile::open(model_path("stories260K.gguf"));
  // Each group was quantized from the fp32 weights with scale max|w|/127, so every value
  // is within half a step of the original; grouping per row (172 is not a multiple of
  // 32) would put most of the ffn values far outside.
  for (const auto& r : ref->tensors()) {
    const GgufTensor* o = ours->find_tensor(r.name);
    ASSERT_NE(o, nullptr) << r.name;
    ASSERT_EQ(o->dims, r.dims) << r.name;
    int64_t n = r.n_elements();
    if (r.dims.size() == 1) {  // norms stay fp32
      EXPECT_EQ(std::memcmp(o->data, r.data, r.nbytes), 0) << r.name;
      continue;
    }
    for (int64_t g = 0; g < n / 32; ++g) {
      float amax = 0;
      for (int64_t i = g * 32; i < g * 32 + 32; ++i) amax = std::max(amax, std::fabs(floats(r)[i]));
      float half_step = amax / 127 / 2 * 1.001f + 1e-9f;
      for (int64_t i = g * 32; i < g * 32 + 32; ++i)
        ASSERT_LE(std::fabs(floats(*o)[i] - floats(r)[i]), half_step) << r.name << " element " << i;
    }
  }
}

// Builds a version 1 export (fp32, 256-byte header) with an unshared classifier from
// the reference GGUF's tensors, so the version 1 reader and the classifier path are
// checked against known values.
TEST(Llama2c, Version1WithUnsharedClassifier) {
  REQUIRE_FIXTURES();
  auto ref = GgufFile::open(model_path("stories260K.gguf"));
  std::vector<uint8_t> bytes(256, 0);
  int32_t header[9] = {0x616b3432, 1, 64, 172, 5, 8, 4, 512, 512};
  std::memcpy(bytes.data(), header, sizeof(header));
  bytes[36] = 0;  // unshared classifier
  auto put = [&](const std::string& name, float scale) {
    const GgufTensor* t = ref->find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    for (int64_t i = 0; i < t->n_elements(); ++i) {
      float f = floats(*t)[i] * scale;
      uint8_t b[4];
      std::memcpy(b, &f, 4);
      bytes.insert(bytes.end(), b, b + 4);
    }
  };
  auto each_layer = [&](const char* what) {
    for (int l = 0; l < 5; ++l) put("blk." + std::to_string(l) + "." + what + ".weight", 1);
  };
  each_layer("attn_norm");
  each_layer("ffn_norm");
  put("output_norm.weight", 1);
  put("token_embd.weight", 1);
  for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_down", "ffn_up"}) each_layer(w);
  put("output.weight", 0.5f);
  std::string path = temp_path("v1.bin");
  write_all(path, bytes);
  auto ours = convert(path, "v1.gguf");
  fs::remove(path);
  for (const auto& r : ref->tensors()) {
    const GgufTensor* o = ours->find_tensor(r.name);
    ASSERT_NE(o, nullptr) << r.name;
    float scale = r.name == "output.weight" ? 0.5f : 1.0f;
    for (int64_t i = 0; i < r.n_elements(); ++i) ASSERT_EQ(floats(*o)[i], floats(r)[i] * scale) << r.name;
  }
}

// Converts with the command, then generates greedily from BOS with `tps run`.
std::string convert_and_run(const std::string& model, int n) {
  std::string gguf = temp_path("run.gguf"), out = temp_path("run.txt");
  std::string convert = std::string(TPS_BINARY) + " convert --llama2c '" + model + "' --tokenizer '" +
                        model_path("tok512.bin") + "' -o '" + gguf + "' >/dev/null";
  EXPECT_EQ(std::system(convert.c_str()), 0);
  std::string run = std::string(TPS_BINARY) + " run -m '" + gguf + "' --temp 0 -n " + std::to_string(n) +
                    " -p '' -t 1 >'" + out + "' 2>/dev/null";
  EXPECT_EQ(std::system(run.c_str()), 0);
  std::string text = read_text(out);
  fs::remove(gguf);
  fs::remove(out);
  return text;
}

TEST(Llama2c, ConvertedCheckpointGeneratesLlama2csGreedyText) {
  REQUIRE_FIXTURES();
  std::string golden = read_text(fixtures() + "/golden/llama2c/greedy_n200.txt");
  EXPECT_EQ(convert_and_run(model_path("stories260K.bin"), 200), golden);
}

TEST(Llama2c, ConvertedInt8ExportFollowsTheGreedyTextForAHundredTokens) {
  REQUIRE_FIXTURES();
  std::string golden = read_text(fixtures() + "/golden/llama2c/greedy_n200.txt");
  // The text of the golden's first 100 tokens.
  auto ref = GgufFile::open(model_path("stories260K.gguf"));
  auto tok = Tokenizer::from_gguf(*ref);
  std::vector<int32_t> ids = tok->encode(golden, false, false);
  ASSERT_GT(ids.size(), 100u);
  ids.resize(100);
  std::string prefix = tok->decode(ids);
  if (!prefix.empty() && prefix[0] == ' ') prefix.erase(0, 1);  // SentencePiece's dummy prefix
  ASSERT_GT(prefix.size(), 200u);
  std::string text = convert_and_run(model_path("stories260K_q80.v2.bin"), 200);
  EXPECT_EQ(text.substr(0, prefix.size()), prefix);
}

// Runs `tps convert` and returns its exit code and stderr.
std::pair<int, std::string> run_convert(const std::string& model, const std::string& tokenizer) {
  std::string err = temp_path("stderr.txt"), out = temp_path("out.gguf");
  std::string cmd = std::string(TPS_BINARY) + " convert --llama2c '" + model + "' --tokenizer '" + tokenizer +
                    "' -o '" + out + "' >/dev/null 2>'" + err + "'";
  int status = std::system(cmd.c_str());
  auto text = read_all(err);
  fs::remove(err);
  fs::remove(out);
  return {WEXITSTATUS(status), std::string(text.begin(), text.end())};
}

void expect_one_line_error(const std::string& model, const std::string& tokenizer, const std::string& needle) {
  auto [code, err] = run_convert(model, tokenizer);
  EXPECT_EQ(code, 2) << err;
  EXPECT_EQ(err.rfind("tps: error: ", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << err;
}

TEST(Llama2c, BadInputGivesOneLineErrorAndExitCode2) {
  REQUIRE_FIXTURES();
  const std::string tok = model_path("tok512.bin");
  auto legacy = read_all(model_path("stories260K.bin"));
  auto v2 = read_all(model_path("stories260K_q80.v2.bin"));
  std::string p = temp_path("bad.bin");

  write_all(p, std::vector<uint8_t>(legacy.begin(), legacy.end() - 100));
  expect_one_line_error(p, tok, "truncated");
  auto longer = legacy;
  longer.resize(legacy.size() + 8, 0);
  write_all(p, longer);
  expect_one_line_error(p, tok, "trailing data");
  write_all(p, std::vector<uint8_t>(v2.begin(), v2.begin() + 200));
  expect_one_line_error(p, tok, "too short");
  write_all(p, std::vector<uint8_t>(v2.begin(), v2.end() - 1));
  expect_one_line_error(p, tok, "truncated");

  auto bad_version = v2;
  bad_version[4] = 7;
  write_all(p, bad_version);
  expect_one_line_error(p, tok, "unsupported llama2.c export version 7");
  auto bad_header = legacy;
  int32_t heads = 7;  // 64 is not divisible by 7
  std::memcpy(bad_header.data() + 12, &heads, 4);
  write_all(p, bad_header);
  expect_one_line_error(p, tok, "not a valid attention shape");
  write_all(p, std::vector<uint8_t>(64, 0xff));
  expect_one_line_error(p, tok, "not a llama2.c checkpoint");
  expect_one_line_error(model_path("stories260K.gguf"), tok, "is a GGUF file");
  expect_one_line_error(model_path("does-not-exist.bin"), tok, "does-not-exist.bin");

  auto tok_bytes = read_all(tok);
  write_all(p, std::vector<uint8_t>(tok_bytes.begin(), tok_bytes.end() - 50));
  expect_one_line_error(model_path("stories260K.bin"), p, "truncated");
  write_all(p, std::vector<uint8_t>(tok_bytes.begin(), tok_bytes.begin() + 100));
  expect_one_line_error(model_path("stories260K.bin"), p, "but the model's vocabulary has 512");
  auto tok_longer = tok_bytes;
  tok_longer.insert(tok_longer.end(), {0, 0, 0, 0, 1, 0, 0, 0, 'x'});
  write_all(p, tok_longer);
  expect_one_line_error(model_path("stories260K.bin"), p, "larger vocabulary");
  fs::remove(p);
}

}  // namespace
}  // namespace tps
