#include "model/model_config.h"

#include <gtest/gtest.h>

namespace tps {

TEST(ModelPresets, ParameterCountsMatchPublishedSizes) {
  // Published sizes: TinyLlama 1.10B, Llama-2-7B 6.74B, Llama-3-8B 8.03B, Qwen2.5-0.5B 0.49B.
  EXPECT_NEAR(find_model_preset("tinyllama-1.1b")->parameter_count() / 1e9, 1.100, 0.005);
  EXPECT_NEAR(find_model_preset("llama-2-7b")->parameter_count() / 1e9, 6.738, 0.005);
  EXPECT_NEAR(find_model_preset("llama-3-8b")->parameter_count() / 1e9, 8.030, 0.005);
  EXPECT_NEAR(find_model_preset("qwen2.5-0.5b")->parameter_count() / 1e9, 0.494, 0.005);
  EXPECT_FALSE(find_model_preset("no-such-model").has_value());
}

}  // namespace tps
