#include "model/model.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/thread_pool.h"

#include "core/error.h"
#include "model_files.h"
#include "test_fixtures.h"

namespace tps {

namespace {

// The message of the tps::Error that loading `path` throws ("" when it loads).
std::string load_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Kilobytes of the file `path` that this process's mappings of it keep resident
// (/proc/self/smaps).
int64_t resident_kb_of(const std::string& path) {
  const std::string target = std::filesystem::canonical(path).string();
  std::ifstream smaps("/proc/self/smaps");
  int64_t kb = 0;
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') < line.find(' ')) {
      inside = line.size() >= target.size() && line.compare(line.size() - target.size(), target.size(), target) == 0;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      kb += std::stoll(line.substr(4));
    }
  }
  return kb;
}

}  // namespace

// The kernels read the packed copy of every matrix, so the file's pages of them leave
// the resident set once packed: memory counts them once, not twice.
TEST(ModelLoad, KeepsOnlyThePackedMatricesResident) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  const auto file_kb = static_cast<int64_t>(std::filesystem::file_size(path) / 1024);
  auto model = Model::load(path);
  ThreadPool pool(2);
  KvCache kv(model->config(), 1, 8);
  std::vector<int32_t> table = {0};
  ForwardBatch b;
  b.sequences.push_back({table.data(), 1});
  for (int32_t i = 0; i < 4; ++i) b.add(1 + i, i, 0, true);
  std::vector<float> logits(4 * static_cast<size_t>(model->config().vocab_size));
  model->forward(b, kv, logits.data(), pool);
  // What stays: the metadata and vocabulary, the token embeddings (looked up in place)
  // and the norms. The layer and output matrices are most of the file.
  EXPECT_LT(resident_kb_of(path), file_kb / 2) << "of " << file_kb << " kB";
}

TEST(ModelLoad, ReadsTheConfigurationFromMetadataAndTensors) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.arch, "llama");
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.ffn_dim, 172);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_FLOAT_EQ(c.rope_base, 10000.0f);  // absent key: the default
  EXPECT_FALSE(c.tied_output);
  EXPECT_EQ(c.rope_style, RopeStyle::kAdjacent);
}

TEST(ModelLoad, Qwen2HasBiasesNeoxRopeAndATiedOutput) {
  TPS_REQUIRE_FIXTURE(path, "models/synthetic/qwen2ish-f32.gguf");
  auto model = Model::load(path);
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.arch, "qwen2");
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.tied_output);
  EXPECT_EQ(c.rope_style, RopeStyle::kHalves);
  EXPECT_FLOAT_EQ(c.rope_base, 1e6f);
}

TEST(ModelLoad, RefusesBrokenFilesNamingWhatIsWrong) {
  TPS_REQUIRE_FIXTURE(src, "models/stories260K.gguf");
  using testing::write_edited;
  EXPECT_NE(load_error(write_edited(src, "arch.gguf", testing::ModelEdit::architecture("mamba"))).find("unsupported architecture 'mamba'"),
            std::string::npos);
  EXPECT_NE(load_error(write_edited(src, "missing.gguf", testing::ModelEdit::drop("blk.2.ffn_up.weight")))
                .find("missing tensor 'blk.2.ffn_up.weight'"),
            std::string::npos);
  EXPECT_NE(load_error(write_edited(src, "shape.gguf", testing::ModelEdit::reshape("blk.1.attn_k.weight", {64, 64})))
                .find("tensor 'blk.1.attn_k.weight' has shape [64, 64], expected [64, 32]"),
            std::string::npos);
  EXPECT_NE(load_error(write_edited(src, "i32.gguf", testing::ModelEdit::retype("blk.0.attn_q.weight")))
                .find("'blk.0.attn_q.weight' has type i32"),
            std::string::npos);
  EXPECT_NE(load_error(testing::write_unknown_type(src, "unknown.gguf", "blk.1.ffn_up.weight")).find("unknown type"),
            std::string::npos);
  EXPECT_NE(load_error(write_edited(src, "layers.gguf", testing::ModelEdit::set_u32("llama.block_count", 0xffffffffu)))
                .find("missing tensor 'blk.5.attn_norm.weight'"),
            std::string::npos);
  EXPECT_NE(load_error(write_edited(src, "heads.gguf", testing::ModelEdit::set_u32("llama.attention.head_count_kv", 3)))
                .find("not a multiple of the KV head count 3"),
            std::string::npos);
  EXPECT_FALSE(load_error(testing::write_truncated(src, "truncated.gguf")).empty());
  EXPECT_FALSE(load_error("/nonexistent/model.gguf").empty());
}

TEST(ModelLoad, TiedOutputWhenOutputWeightIsAbsent) {
  TPS_REQUIRE_FIXTURE(src, "models/stories260K.gguf");
  auto model = Model::load(testing::write_edited(src, "tied.gguf", testing::ModelEdit::drop("output.weight")));
  EXPECT_TRUE(model->config().tied_output);
}

}  // namespace tps
