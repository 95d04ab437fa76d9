#include "formats/gguf.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"

#include "support/test_files.h"

namespace tps {
namespace {

using test::read_all;
using test::temp_path;

std::string write_sample() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 2);
  w.set_f32("llama.rope.freq_base", 500000.0f);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_string_array("tokenizer.ggml.tokens", {"<s>", "a", "bc"});
  w.set_f32_array("tokenizer.ggml.scores", {0.0f, -1.5f, 2.25f});
  w.add_tensor("w", GgmlType::kF32, {4, 3}, [](std::span<uint8_t> dst) {
    auto* f = reinterpret_cast<float*>(dst.data());
    for (int i = 0; i < 12; ++i) f[i] = static_cast<float>(i);
  });
  w.add_tensor("q", GgmlType::kQ8_0, {64, 2}, [](std::span<uint8_t> dst) {
    for (size_t i = 0; i < dst.size(); ++i) dst[i] = static_cast<uint8_t>(i);
  });
  std::string path = temp_path("sample.gguf");
  w.write(path);
  return path;
}

TEST(Gguf, WriterOutputReadsBack) {
  std::string path = write_sample();
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int("llama.block_count", 0), 2);
  EXPECT_FLOAT_EQ(f->get_float("llama.rope.freq_base", 0), 500000.0f);
  EXPECT_TRUE(f->get_bool("tokenizer.ggml.add_bos_token", false));
  EXPECT_EQ(f->get_int("missing.key", 7), 7);
  ASSERT_NE(f->get_string_array("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->at(2), "bc");
  EXPECT_DOUBLE_EQ(f->get_number_array("tokenizer.ggml.scores")->at(2), 2.25);
  EXPECT_THROW(f->get_int("general.architecture", 0), Error);
  EXPECT_THROW(f->require_int("llama.missing"), Error);
  const GgufTensor* w = f->find_tensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->n_rows(), 3);
  EXPECT_EQ(reinterpret_cast<const float*>(w->data)[11], 11.0f);
  const GgufTensor* q = f->find_tensor("q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->nbytes, 2u * 2 * 34);
  EXPECT_EQ(q->data[5], 5);
  std::remove(path.c_str());
}

TEST(Gguf, EveryTruncationIsAClearError) {
  std::string path = write_sample();
  std::vector<uint8_t> bytes = read_all(path);
  std::remove(path.c_str());
  // Bytes past the last tensor are alignment padding, which a file may lack.
  auto full = GgufFile::parse(bytes.data(), bytes.size(), "full");
  const GgufTensor* last = full->find_tensor("q");
  size_t end = static_cast<size_t>(last->data - bytes.data()) + last->nbytes;
  for (size_t cut = 0; cut < end; ++cut) {
    try {
      GgufFile::parse(bytes.data(), cut, "cut");
      ADD_FAILURE() << "no error at truncation " << cut;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut"), std::string::npos);
    }
  }
}

TEST(Gguf, RejectsBadMagicVersionAndAbsurdCounts) {
  std::string path = write_sample();
  std::vector<uint8_t> bytes = read_all(path);
  std::remove(path.c_str());
  auto expect_error = [](std::vector<uint8_t> b, const std::string& needle) {
    try {
      GgufFile::parse(b.data(), b.size(), "bad");
      ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto b = bytes;
  b[0] = 'X';
  expect_error(b, "not a GGUF");
  b = bytes;
  b[4] = 9;
  expect_error(b, "version");
  b = bytes;
  b[8 + 7] = 0x7f;  // tensor count high byte
  expect_error(b, "tensor count");
  b = bytes;
  b[16 + 7] = 0x7f;  // metadata count high byte
  expect_error(b, "metadata count");
}

TEST(Gguf, MissingFileIsAClearError) {
  EXPECT_THROW(GgufFile::open("/nonexistent/model.gguf"), Error);
}

}  // namespace
}  // namespace tps

namespace tps {
namespace {

std::string fixtures_dir() {
  if (const char* env = std::getenv("TPS_FIXTURES")) return env;
  return std::string(TPS_SOURCE_DIR) + "/../shared/fixtures";
}

TEST(Gguf, ReadsEveryFixtureModel) {
  std::string dir = fixtures_dir() + "/models";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "fixtures not found at " << dir;
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    auto f = GgufFile::open(entry.path().string());
    EXPECT_FALSE(f->get_string("general.architecture").empty()) << entry.path();
    EXPECT_NE(f->find_tensor("token_embd.weight"), nullptr) << entry.path();
    ++files;
  }
  EXPECT_GE(files, 17);
}

}  // namespace
}  // namespace tps
