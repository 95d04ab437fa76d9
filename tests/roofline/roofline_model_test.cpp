#include "roofline/roofline_model.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "roofline/estimator.h"

namespace tps {

namespace {

double kv_bytes_f16(const std::string& preset) {
  return static_cast<double>(find_roofline_preset(preset).kv_values_per_token()) * 2;
}

}  // namespace

TEST(RooflineModel, KvBytesPerTokenMatchHandWorkedFigures) {
  // 2 (K and V) x layers x KV heads x head_dim x 2 bytes.
  EXPECT_EQ(kv_bytes_f16("llama-2-7b"), 524288);   // 2 x 32 x 32 x 128 x 2
  EXPECT_EQ(kv_bytes_f16("llama-3-8b"), 131072);   // 2 x 32 x 8 x 128 x 2
  EXPECT_EQ(kv_bytes_f16("llama-3-70b"), 327680);  // 2 x 80 x 8 x 128 x 2
  // MLA caches the 512-wide latent plus the 64-wide shared rope key per layer.
  EXPECT_EQ(kv_bytes_f16("deepseek-v2-lite"), 27 * (512 + 64) * 2);
}

TEST(RooflineModel, ParameterCountsMatchPublishedSizes) {
  EXPECT_NEAR(find_roofline_preset("llama-3-70b").total_params() / 1e9, 70.55, 0.01);
  RooflineModel mixtral = find_roofline_preset("mixtral-8x7b");
  EXPECT_NEAR(mixtral.total_params() / 1e9, 46.70, 0.01);  // resident
  EXPECT_NEAR(mixtral.active_params() / 1e9, 12.88, 0.01);  // per token
  RooflineModel ds = find_roofline_preset("deepseek-v2-lite");
  EXPECT_NEAR(ds.total_params() / 1e9, 15.71, 0.01);
  // Published 2.4B active excludes the embedding table (0.21B).
  EXPECT_NEAR((ds.active_params() - ds.embedding_params()) / 1e9, 2.45, 0.01);
  // Dense presets agree with the shared model presets' own count.
  for (const auto& p : model_presets())
    EXPECT_EQ(find_roofline_preset(p.name).total_params(), p.config.parameter_count()) << p.name;
}

TEST(RooflineModel, ParsesHuggingFaceConfigs) {
  auto llama = nlohmann::json::parse(R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
      "max_position_embeddings": 8192, "rope_theta": 500000.0, "tie_word_embeddings": false})");
  RooflineModel m = roofline_model_from_hf_config(llama, "config.json");
  EXPECT_EQ(m.total_params(), find_roofline_preset("llama-3-8b").total_params());
  EXPECT_EQ(m.kv_values_per_token() * 2, 131072);
  EXPECT_EQ(m.base.context_length, 8192);

  auto qwen = nlohmann::json::parse(R"({"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24,
      "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864, "vocab_size": 151936,
      "tie_word_embeddings": true})");
  RooflineModel q = roofline_model_from_hf_config(qwen, "qwen");
  EXPECT_TRUE(q.base.qkv_bias);
  EXPECT_EQ(q.total_params(), find_roofline_preset("qwen2.5-0.5b").total_params());

  auto mixtral = nlohmann::json::parse(R"({"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
      "num_local_experts": 8, "num_experts_per_tok": 2})");
  RooflineModel mx = roofline_model_from_hf_config(mixtral, "mixtral");
  EXPECT_EQ(mx.total_params(), find_roofline_preset("mixtral-8x7b").total_params());
  EXPECT_EQ(mx.active_params(), find_roofline_preset("mixtral-8x7b").active_params());

  auto ds = nlohmann::json::parse(R"({"model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 27,
      "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 10944, "vocab_size": 102400,
      "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
      "first_k_dense_replace": 1, "kv_lora_rank": 512, "q_lora_rank": null, "qk_rope_head_dim": 64,
      "qk_nope_head_dim": 128, "v_head_dim": 128})");
  RooflineModel d = roofline_model_from_hf_config(ds, "ds");
  EXPECT_EQ(d.total_params(), find_roofline_preset("deepseek-v2-lite").total_params());
  EXPECT_EQ(d.kv_values_per_token(), find_roofline_preset("deepseek-v2-lite").kv_values_per_token());
}

TEST(RooflineModel, RejectsBadConfigs) {
  EXPECT_THROW(roofline_model_from_hf_config(nlohmann::json::parse(R"({"hidden_size": 64})"), "x"), Error);
  EXPECT_THROW(roofline_model_from_hf_config(nlohmann::json::parse("[1, 2]"), "x"), Error);
  auto bad_heads = nlohmann::json::parse(R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8,
      "num_key_value_heads": 3, "intermediate_size": 128, "vocab_size": 100})");
  EXPECT_THROW(roofline_model_from_hf_config(bad_heads, "x"), Error);
  EXPECT_THROW(load_hf_config("/nonexistent/config.json"), Error);
  EXPECT_THROW(find_roofline_preset("no-such-model"), Error);
  EXPECT_THROW(find_weight_format("q9_9"), Error);
  EXPECT_THROW(find_kv_format("int3"), Error);
}

TEST(RooflineModel, ShapeJsonRoundTrips) {
  for (const char* name : {"tinyllama-1.1b", "mixtral-8x7b", "deepseek-v2-lite", "qwen2.5-0.5b"}) {
    RooflineModel m = find_roofline_preset(name);
    RooflineModel back = roofline_model_from_json(roofline_model_to_json(m));
    EXPECT_EQ(back.total_params(), m.total_params()) << name;
    EXPECT_EQ(back.active_params(), m.active_params()) << name;
    EXPECT_EQ(back.kv_values_per_token(), m.kv_values_per_token()) << name;
  }
}

}  // namespace tps
