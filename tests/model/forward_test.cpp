// The forward pass's batching contract: a prompt run as one batch gives the same logits
// as token by token; sequences sharing a batch do not see each other; block tables
// may place a sequence's positions in any blocks.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "core/error.h"
#include "model/model.h"
#include "quant/quantize.h"
#include "test_fixtures.h"

namespace tps {

namespace {

const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378, 300, 289, 270, 411, 290, 263, 372, 281, 355, 330, 267, 290, 325, 294};

// Relative RMS difference of two logit vectors.
double rel_diff(const float* a, const float* b, int64_t n) {
  double err = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    err += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(err / norm);
}

// Logits after each token of `tokens`, run one token per forward call.
std::vector<float> step_by_step(Model& m, const std::vector<int32_t>& tokens, ThreadPool& pool) {
  const int64_t vocab = m.config().vocab_size;
  KvCache kv(m.config(), 4, 8);
  std::vector<int32_t> table = {0, 1, 2, 3};
  std::vector<float> out(tokens.size() * vocab);
  for (size_t i = 0; i < tokens.size(); ++i) {
    ForwardBatch b;
    b.sequences.push_back({table.data(), 4});
    b.add(tokens[i], static_cast<int32_t>(i), 0, true);
    m.forward(b, kv, &out[i * vocab], pool);
  }
  return out;
}

class Forward : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST_P(Forward, OneBatchEqualsTokenByToken) {
  TPS_REQUIRE_FIXTURE(path, GetParam());
  auto m = Model::load(path);
  ThreadPool serial(1), pool(2);  // the batch on two threads, the reference on one
  const int64_t vocab = m->config().vocab_size;
  std::vector<float> expected = step_by_step(*m, kPrompt, serial);

  KvCache kv(m->config(), 4, 8);
  std::vector<int32_t> table = {3, 1, 0, 2};  // any blocks, in position order
  ForwardBatch b;
  b.sequences.push_back({table.data(), 4});
  for (size_t i = 0; i < kPrompt.size(); ++i) b.add(kPrompt[i], static_cast<int32_t>(i), 0, true);
  std::vector<float> got(kPrompt.size() * vocab);
  m->forward(b, kv, got.data(), pool);
  for (size_t i = 0; i < kPrompt.size(); ++i)
    EXPECT_LT(rel_diff(&got[i * vocab], &expected[i * vocab], vocab), 1e-4) << "row " << i;
}

TEST_P(Forward, SequencesInOneBatchAreIndependent) {
  TPS_REQUIRE_FIXTURE(path, GetParam());
  auto m = Model::load(path);
  ThreadPool pool(1);
  const int64_t vocab = m->config().vocab_size;
  std::vector<int32_t> other = {1, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309};
  std::vector<float> expected_a = step_by_step(*m, kPrompt, pool);
  std::vector<float> expected_b = step_by_step(*m, other, pool);

  // Sequence a prefills all but its last token while b prefills its start; then both
  // finish in one batch with interleaved rows, logits only where asked.
  KvCache kv(m->config(), 8, 8);
  std::vector<int32_t> table_a = {5, 2, 7}, table_b = {0, 6};
  ForwardBatch b;
  b.sequences = {{table_a.data(), 3}, {table_b.data(), 2}};
  const size_t a_split = kPrompt.size() - 1, b_split = 6;
  for (size_t i = 0; i < a_split; ++i) b.add(kPrompt[i], static_cast<int32_t>(i), 0, false);
  for (size_t i = 0; i < b_split; ++i) b.add(other[i], static_cast<int32_t>(i), 1, false);
  std::vector<float> none;
  m->forward(b, kv, none.data(), pool);

  ForwardBatch step;
  step.sequences = b.sequences;
  step.add(other[b_split], static_cast<int32_t>(b_split), 1, true);
  step.add(kPrompt[a_split], static_cast<int32_t>(a_split), 0, true);
  for (size_t i = b_split + 1; i < other.size(); ++i) step.add(other[i], static_cast<int32_t>(i), 1, i + 1 == other.size());
  std::vector<float> got(3 * vocab);
  m->forward(step, kv, got.data(), pool);
  EXPECT_LT(rel_diff(&got[0], &expected_b[b_split * vocab], vocab), 1e-4);
  EXPECT_LT(rel_diff(&got[vocab], &expected_a[a_split * vocab], vocab), 1e-4);
  EXPECT_LT(rel_diff(&got[2 * vocab], &expected_b[(other.size() - 1) * vocab], vocab), 1e-4);
}

TEST_P(Forward, RefusesRowsOutsideTheVocabularyOrTheBlocks) {
  TPS_REQUIRE_FIXTURE(path, GetParam());
  auto m = Model::load(path);
  ThreadPool pool(1);
  KvCache kv(m->config(), 2, 8);
  std::vector<int32_t> table = {0, 1};
  std::vector<float> logits(m->config().vocab_size);
  ForwardBatch b;
  b.sequences.push_back({table.data(), 2});
  b.add(static_cast<int32_t>(m->config().vocab_size), 0, 0, true);
  EXPECT_THROW(m->forward(b, kv, logits.data(), pool), Error);
  b.tokens[0] = 1;
  b.positions[0] = 16;  // past two blocks of 8
  EXPECT_THROW(m->forward(b, kv, logits.data(), pool), Error);
  table[0] = 9;  // no such block
  b.positions[0] = 0;
  EXPECT_THROW(m->forward(b, kv, logits.data(), pool), Error);
}

INSTANTIATE_TEST_SUITE_P(Models, Forward,
                         ::testing::Values("models/stories260K.gguf", "models/synthetic/qwen2ish-f32.gguf"),
                         [](const auto& info) { return info.index == 0 ? std::string("llama") : std::string("qwen2"); });

// One KV head of head_dim values per layer.
ModelConfig single_head_config(int64_t layers, int64_t head_dim) {
  ModelConfig c;
  c.n_layers = layers;
  c.n_heads = c.n_kv_heads = 1;
  c.head_dim = head_dim;
  return c;
}

TEST(KvCache, CopyBlockCopiesEveryLayer) {
  KvCache kv(single_head_config(2, 2), 3, 2);
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int slot = 0; slot < 2; ++slot) {
      const float key[2] = {10.0f * layer + slot, 0.5f}, value[2] = {-10.0f * layer - slot, 0.25f};
      kv.store(layer, 1, slot, key, value);
    }
  kv.copy_block(1, 2);
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int slot = 0; slot < 2; ++slot) {
      // Keys transposed ([dim][slot]), values by slot ([slot][dim]).
      EXPECT_EQ(f16_to_f32(kv.head_keys(layer, 2, 0)[slot]), 10.0f * layer + slot);
      EXPECT_EQ(f16_to_f32(kv.head_keys(layer, 2, 0)[2 + slot]), 0.5f);
      EXPECT_EQ(f16_to_f32(kv.head_values(layer, 2, 0)[2 * slot]), -10.0f * layer - slot);
      EXPECT_EQ(f16_to_f32(kv.head_values(layer, 2, 0)[2 * slot + 1]), 0.25f);
      EXPECT_EQ(kv.head_keys(layer, 0, 0)[slot], 0);
    }
}

// A grown cache keeps the first blocks of every layer; caches of other shapes refuse.
TEST(KvCache, CopyBlocksFromKeepsEveryLayersBlocks) {
  KvCache small(single_head_config(2, 2), 2, 2), grown(single_head_config(2, 2), 4, 2);
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t block = 0; block < 2; ++block) {
      const float key[2] = {1.0f + layer, 2.0f + block}, value[2] = {3.0f + layer, 4.0f + block};
      small.store(layer, block, 1, key, value);
    }
  grown.copy_blocks_from(small, 2);
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t block = 0; block < 2; ++block) {
      EXPECT_EQ(f16_to_f32(grown.head_keys(layer, block, 0)[2 + 1]), 2.0f + block);
      EXPECT_EQ(f16_to_f32(grown.head_values(layer, block, 0)[2 * 1]), 3.0f + layer);
    }
  KvCache other(single_head_config(2, 4), 4, 2);
  EXPECT_THROW(other.copy_blocks_from(small, 2), Error);
  EXPECT_THROW(grown.copy_blocks_from(small, 3), Error);
}

// The cache holds halves: a stored value comes back rounded to the nearest one.
TEST(KvCache, StoresHalves) {
  KvCache kv(single_head_config(1, 1), 1, 1);
  const float key = 0.1f, value = 3.14159f;
  kv.store(0, 0, 0, &key, &value);
  EXPECT_EQ(kv.head_keys(0, 0, 0)[0], f32_to_f16(key));
  EXPECT_NEAR(f16_to_f32(kv.head_keys(0, 0, 0)[0]), key, 1e-4);
  EXPECT_NEAR(f16_to_f32(kv.head_values(0, 0, 0)[0]), value, 2e-3);
  EXPECT_EQ(kv.bytes(), 2 * sizeof(uint16_t));
}

// A block holds each head's keys, then its values, then the next head's: what one head
// reads of a block is one contiguous run.
TEST(KvCache, EachHeadsKeysAndValuesFollowEachOther) {
  ModelConfig c = single_head_config(1, 2);
  c.n_heads = c.n_kv_heads = 2;
  KvCache kv(c, 1, 2);
  const float key[4] = {1, 2, 3, 4}, value[4] = {5, 6, 7, 8};
  kv.store(0, 0, 1, key, value);
  EXPECT_EQ(kv.head_values(0, 0, 0), kv.head_keys(0, 0, 0) + 4);
  EXPECT_EQ(kv.head_keys(0, 0, 1), kv.head_values(0, 0, 0) + 4);
  for (int64_t head = 0; head < 2; ++head)
    for (int64_t d = 0; d < 2; ++d) {
      EXPECT_EQ(f16_to_f32(kv.head_keys(0, 0, head)[d * 2 + 1]), key[2 * head + d]);
      EXPECT_EQ(f16_to_f32(kv.head_values(0, 0, head)[1 * 2 + d]), value[2 * head + d]);
      EXPECT_EQ(kv.head_keys(0, 0, head)[d * 2], 0);  // slot 0 untouched
    }
}

}  // namespace tps
