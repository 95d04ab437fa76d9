#include "model/model_config.h"

#include <gtest/gtest.h>

namespace tps {

TEST(ModelPresets, ParameterCountsMatchPublishedSizes) {
  // Published sizes: TinyLlama 1.10B, Llama-2-7B 6.74B, Llama-3-8B 8.03B, Qwen2.5-0.5B 0.49B,
  // stories15M 15M (llama2.c's count with the classifier shared with the embedding).
  EXPECT_NEAR(find_model_preset("tinyllama-1.1b")->parameter_count() / 1e9, 1.100, 0.005);
  EXPECT_NEAR(find_model_preset("llama-2-7b")->parameter_count() / 1e9, 6.738, 0.005);
  EXPECT_NEAR(find_model_preset("llama-3-8b")->parameter_count() / 1e9, 8.030, 0.005);
  EXPECT_NEAR(find_model_preset("qwen2.5-0.5b")->parameter_count() / 1e9, 0.494, 0.005);
  EXPECT_NEAR(find_model_preset("stories15m")->parameter_count() / 1e6, 15.19, 0.01);
  EXPECT_FALSE(find_model_preset("no-such-model").has_value());
}

}  // namespace tps
