// The tensor-parallel split without MPI: which slice each rank gets, the splits that are
// refused, and that the slices' products add up to the whole model's on every ISA path.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/error.h"
#include "model/model_shard.h"
#include "support/random_weights.h"
#include "support/scoped_isa.h"

namespace tps {
namespace {

// Layers whose matrices have types but no data: enough for plan_model_shard.
ModelWeights typed_layers(const ModelConfig& c, GgmlType type) {
  ModelWeights w;
  for (int64_t i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = w.layers.emplace_back();
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) m->type = type;
  }
  return w;
}

ModelConfig small_config(int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t ffn) {
  ModelConfig c;
  c.n_layers = 1;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.dim = heads * head_dim;
  c.ffn_dim = ffn;
  c.vocab_size = 97;
  return c;
}

TEST(ModelShard, SplitsTinyLlamaEvenlyOverTwoRanks) {
  ModelConfig c = *find_model_preset("tinyllama-1.1b");
  c.vocab_size = 32000;
  const ModelWeights w = typed_layers(c, GgmlType::kQ4_K);
  for (int r = 0; r < 2; ++r) {
    const ModelShard s = plan_model_shard(c, w, r, 2);
    EXPECT_EQ(s.q_heads.begin, 16 * r);
    EXPECT_EQ(s.q_heads.size(), 16);
    EXPECT_EQ(s.kv_heads.begin, 2 * r);
    EXPECT_EQ(s.kv_heads.size(), 2);
    EXPECT_EQ(s.ffn_rows.begin, 2816 * r);  // 11 of the 22 blocks of 256
    EXPECT_EQ(s.ffn_rows.size(), 2816);
    EXPECT_EQ(s.vocab_rows.begin, 16000 * r);
    EXPECT_EQ(s.vocab_rows_per_rank, (std::vector<int64_t>{16000, 16000}));
    const ModelConfig local = shard_config(c, s);
    EXPECT_EQ(local.q_dim(), 1024);
    EXPECT_EQ(local.kv_dim(), 128);
    EXPECT_EQ(local.dim, 2048);
  }
}

TEST(ModelShard, ReplicatesKvHeadsThatDivideTheRanks) {
  // 4 query heads share 1 KV head (the llama3-like fixture): both ranks keep it.
  const ModelConfig one = small_config(4, 1, 64, 512);
  for (int r = 0; r < 2; ++r) {
    const ModelShard s = plan_model_shard(one, typed_layers(one, GgmlType::kF32), r, 2);
    EXPECT_EQ(s.kv_heads.begin, 0);
    EXPECT_EQ(s.kv_heads.size(), 1);
  }
  // 8 query heads in 2 groups over 4 ranks: ranks 0-1 keep KV head 0, ranks 2-3 head 1,
  // the one their query heads (2 each) read.
  const ModelConfig two = small_config(8, 2, 32, 512);
  for (int r = 0; r < 4; ++r) {
    const ModelShard s = plan_model_shard(two, typed_layers(two, GgmlType::kF32), r, 4);
    EXPECT_EQ(s.q_heads.begin, 2 * r);
    EXPECT_EQ(s.kv_heads.begin, r / 2) << "rank " << r;
    EXPECT_EQ(s.kv_heads.size(), 1);
  }
}

TEST(ModelShard, RefusesSplitsThatDoNotFit) {
  auto error_of = [](const ModelConfig& c, GgmlType type, int ranks) -> std::string {
    try {
      plan_model_shard(c, typed_layers(c, type), 0, ranks);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(small_config(8, 2, 32, 512), GgmlType::kF32, 3).find("8 attention heads do not split evenly over 3"),
            std::string::npos);
  EXPECT_NE(error_of(small_config(6, 3, 32, 512), GgmlType::kF32, 2).find("3 KV heads neither split"),
            std::string::npos);
  // Q4_K blocks are 256 wide; half of 8 heads of 32 is column 128.
  EXPECT_NE(error_of(small_config(8, 2, 32, 512), GgmlType::kQ4_K, 2).find("inside one of its 256-wide"),
            std::string::npos);
  // One 256-row block of FFN for two ranks.
  EXPECT_NE(error_of(small_config(4, 2, 128, 256), GgmlType::kQ4_K, 2).find("FFN's 256 rows"), std::string::npos);
  EXPECT_EQ(error_of(small_config(8, 2, 32, 512), GgmlType::kQ8_0, 2), "");
}

// One layer of random weights, and its whole-model products to compare slices with.
struct RandomLayer {
  ModelConfig config;
  std::vector<std::unique_ptr<test::Matrix>> storage;
  ModelWeights weights;
};

RandomLayer random_layer(GgmlType type, ThreadPool& pool) {
  RandomLayer m;
  m.config = small_config(4, 2, 128, 1024);  // dim 512: Q4_K's 256-wide blocks split between heads
  const ModelConfig& c = m.config;
  auto matrix = [&](int64_t rows, int64_t cols) {
    m.storage.push_back(test::random_matrix(type, rows, cols, static_cast<uint32_t>(m.storage.size() + 1), pool));
    return m.storage.back()->w;
  };
  LayerWeights& l = m.weights.layers.emplace_back();
  l.wq = matrix(c.q_dim(), c.dim);
  l.wk = matrix(c.kv_dim(), c.dim);
  l.wv = matrix(c.kv_dim(), c.dim);
  l.wo = matrix(c.dim, c.q_dim());
  l.w_gate = matrix(c.ffn_dim, c.dim);
  l.w_up = matrix(c.ffn_dim, c.dim);
  l.w_down = matrix(c.dim, c.ffn_dim);
  m.weights.output = matrix(c.vocab_size, c.dim);
  m.weights.token_embd = m.weights.output;
  return m;
}

// The view packed as the model loader packs a shard's matrices.
struct PackedView {
  PackedWeights packed;
  WeightMatrix w;
  PackedView(const WeightMatrix& view, ThreadPool& pool) : packed(pack_weights(view, &pool)), w(view) {
    w.packed = packed.empty() ? nullptr : &packed;
  }
};

std::vector<float> product(const WeightMatrix& w, const std::vector<float>& x, int64_t tokens, ThreadPool& pool) {
  std::vector<float> y(static_cast<size_t>(w.rows * tokens));
  matmul(w, x.data(), tokens, y.data(), pool);
  return y;
}

// Columns [begin, end) of each of `tokens` rows of width `width`.
std::vector<float> columns(const std::vector<float>& x, int64_t tokens, int64_t width, int64_t begin, int64_t end) {
  std::vector<float> out;
  for (int64_t t = 0; t < tokens; ++t) out.insert(out.end(), x.begin() + t * width + begin, x.begin() + t * width + end);
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (float v : want) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * scale + 1e-6) << what << " at " << i;
}

class ShardedProducts : public ::testing::TestWithParam<std::tuple<Isa, GgmlType>> {};

TEST_P(ShardedProducts, AddUpToTheWholeModels) {
  const auto [isa, type] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << isa_name(isa) << " is not on this CPU";
  test::ScopedIsa scoped(isa);
  ThreadPool pool(2);
  const RandomLayer m = random_layer(type, pool);
  const ModelConfig& c = m.config;
  const LayerWeights& whole = m.weights.layers[0];
  constexpr int64_t kTokens = 5;
  const auto x = test::gaussian(kTokens * c.dim, 7);
  const auto att = test::gaussian(kTokens * c.q_dim(), 8);
  const auto act = test::gaussian(kTokens * c.ffn_dim, 9);
  std::vector<float> wo_sum(kTokens * c.dim, 0.0f), down_sum(kTokens * c.dim, 0.0f);
  constexpr int kRanks = 2;
  for (int r = 0; r < kRanks; ++r) {
    const ModelShard s = plan_model_shard(c, m.weights, r, kRanks);
    const ModelWeights w = shard_weights(m.weights, c, s);
    const LayerWeights& l = w.layers[0];
    const int64_t q0 = s.q_heads.begin * c.head_dim, q1 = s.q_heads.end * c.head_dim;
    const int64_t k0 = s.kv_heads.begin * c.head_dim, k1 = s.kv_heads.end * c.head_dim;
    // Column-parallel: the rank's rows of the whole product.
    expect_close(product(PackedView(l.wq, pool).w, x, kTokens, pool),
                 columns(product(whole.wq, x, kTokens, pool), kTokens, c.q_dim(), q0, q1), "wq");
    expect_close(product(PackedView(l.wv, pool).w, x, kTokens, pool),
                 columns(product(whole.wv, x, kTokens, pool), kTokens, c.kv_dim(), k0, k1), "wv");
    expect_close(product(PackedView(l.w_up, pool).w, x, kTokens, pool),
                 columns(product(whole.w_up, x, kTokens, pool), kTokens, c.ffn_dim, s.ffn_rows.begin, s.ffn_rows.end),
                 "w_up");
    expect_close(product(PackedView(w.output, pool).w, x, kTokens, pool),
                 columns(product(m.weights.output, x, kTokens, pool), kTokens, c.vocab_size, s.vocab_rows.begin,
                         s.vocab_rows.end),
                 "output");
    // Row-parallel: partial sums over the rank's columns.
    const auto wo_part = product(PackedView(l.wo, pool).w, columns(att, kTokens, c.q_dim(), q0, q1), kTokens, pool);
    const auto down_part = product(PackedView(l.w_down, pool).w,
                                   columns(act, kTokens, c.ffn_dim, s.ffn_rows.begin, s.ffn_rows.end), kTokens, pool);
    for (size_t i = 0; i < wo_sum.size(); ++i) {
      wo_sum[i] += wo_part[i];
      down_sum[i] += down_part[i];
    }
  }
  expect_close(wo_sum, product(whole.wo, att, kTokens, pool), "wo, summed over ranks");
  expect_close(down_sum, product(whole.w_down, act, kTokens, pool), "w_down, summed over ranks");
}

INSTANTIATE_TEST_SUITE_P(
    IsasAndTypes, ShardedProducts,
    ::testing::Combine(::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx),
                       ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                                         GgmlType::kQ4_K, GgmlType::kQ6_K)),
    [](const auto& info) {
      return std::string(isa_name(std::get<0>(info.param))) + "_" + type_name(std::get<1>(info.param));
    });

}  // namespace
}  // namespace tps
