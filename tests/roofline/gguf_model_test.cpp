#include "roofline/gguf_model.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/error.h"

namespace tps {

namespace {

std::string fixtures() {
  const char* env = std::getenv("TPS_FIXTURES");
  return env ? env : TPS_SOURCE_DIR "/../shared/fixtures";
}

}  // namespace

TEST(GgufModel, ReadsShapeAndStorageFromMetadata) {
  std::string dir = fixtures() + "/models";
  if (!std::filesystem::exists(dir + "/stories260K.gguf")) GTEST_SKIP() << "fixtures absent: " << dir;
  GgufModelInfo s = read_gguf_model(dir + "/stories260K.gguf");
  EXPECT_EQ(s.weight_type, "f32");
  EXPECT_DOUBLE_EQ(s.bits_per_weight, 32.0);
  EXPECT_EQ(s.model.total_params(), find_roofline_preset("stories260k").total_params());
  EXPECT_EQ(s.params, s.model.total_params());

  GgufModelInfo q = read_gguf_model(dir + "/synthetic/llama-gqa-q4_0.gguf");
  EXPECT_EQ(q.weight_type, "q4_0");
  EXPECT_EQ(q.model.base.dim, 256);
  EXPECT_EQ(q.model.base.n_kv_heads, 2);
  EXPECT_GT(q.bits_per_weight, 4.5);  // f32 norms lift the average above the block format's
  EXPECT_LT(q.bits_per_weight, 5.0);

  GgufModelInfo tied = read_gguf_model(dir + "/synthetic/llama3ish-tied-f32.gguf");
  EXPECT_TRUE(tied.model.base.tied_output);
  EXPECT_EQ(tied.params, tied.model.total_params());
  GgufModelInfo qwen = read_gguf_model(dir + "/synthetic/qwen2ish-q8_0.gguf");
  EXPECT_TRUE(qwen.model.base.qkv_bias);
  EXPECT_EQ(qwen.weight_type, "q8_0");
  EXPECT_EQ(qwen.params, qwen.model.total_params());  // biases counted
  EXPECT_THROW(read_gguf_model(dir + "/stories260K.bin"), Error);
}

}  // namespace tps
