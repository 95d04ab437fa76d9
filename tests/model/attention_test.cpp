// Paged causal attention (online softmax over transposed key blocks) on every ISA this
// CPU runs, against softmax(q k / sqrt(d)) v computed directly in double precision.
// Keys and values are drawn as halves, which the cache stores exactly.
#include "model/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/matmul.h"
#include "quant/quantize.h"
#include "support/scoped_isa.h"

namespace tps {
namespace {

struct Case {
  int64_t n_heads, n_kv_heads, head_dim, block_tokens;
};

class Attention : public testing::TestWithParam<std::tuple<Isa, Case>> {};

// Two sequences in a scattered block order, as a block table may hold them: a long one
// (up to 7 chunks of 16 keys: rows with several of the chunk pairs AVX-512, and AVX2
// for heads of at most 16 elements, take at once, with and without one left over) and
// one shorter than a block; keys, values and queries at random, every position a row
// of `batch` (a prompt of each).
struct Sequences {
  static constexpr int64_t kLayer = 1;
  static constexpr int64_t kLengths[] = {100, 3};
  ModelConfig config;
  std::vector<std::vector<int32_t>> tables{2};
  std::vector<std::vector<float>> keys{2}, values{2};
  KvCache kv;
  ForwardBatch batch;
  std::vector<float> q;

  static ModelConfig shape(const Case& c) {
    ModelConfig config;
    config.n_layers = 2;
    config.n_heads = c.n_heads;
    config.n_kv_heads = c.n_kv_heads;
    config.head_dim = c.head_dim;
    return config;
  }
  static int64_t blocks(int64_t bt) { return (kLengths[0] + bt - 1) / bt + (kLengths[1] + bt - 1) / bt; }

  explicit Sequences(const Case& c) : config(shape(c)), kv(config, blocks(c.block_tokens), c.block_tokens) {
    const int64_t kv_dim = config.kv_dim(), bt = c.block_tokens;
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<int32_t> ids(blocks(bt));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    size_t next_id = 0;
    for (int s = 0; s < 2; ++s) {
      for (int64_t b = 0; b < (kLengths[s] + bt - 1) / bt; ++b) tables[s].push_back(ids[next_id++]);
      keys[s].resize(kLengths[s] * kv_dim);
      values[s].resize(kLengths[s] * kv_dim);
      for (auto& x : keys[s]) x = f16_to_f32(f32_to_f16(dist(rng)));
      for (auto& x : values[s]) x = f16_to_f32(f32_to_f16(dist(rng)));
      for (int64_t p = 0; p < kLengths[s]; ++p) {
        kv.store(kLayer, tables[s][p / bt], p % bt, &keys[s][p * kv_dim], &values[s][p * kv_dim]);
        batch.add(0, static_cast<int32_t>(p), s, false);
      }
    }
    batch.sequences = sequence_blocks();
    q.resize(batch.size() * config.q_dim());
    for (auto& x : q) x = 2.0f * dist(rng);  // peaked softmaxes too
  }

  std::vector<SequenceBlocks> sequence_blocks() const {
    return {{tables[0].data(), static_cast<int64_t>(tables[0].size())},
            {tables[1].data(), static_cast<int64_t>(tables[1].size())}};
  }

  // Attention of `rows` (indices into `batch`) in one batch of their own, in order.
  std::vector<float> attend(const std::vector<int64_t>& rows) const {
    const int64_t q_dim = config.q_dim();
    ForwardBatch sub;
    sub.sequences = sequence_blocks();
    std::vector<float> sub_q;
    for (int64_t r : rows) {
      sub.add(0, batch.positions[r], batch.sequence[r], false);
      sub_q.insert(sub_q.end(), q.begin() + r * q_dim, q.begin() + (r + 1) * q_dim);
    }
    std::vector<float> out(sub_q.size());
    std::vector<AttentionBlock> scratch;
    ThreadPool pool(2);
    attention(sub_q.data(), sub, kv, kLayer, {config.n_heads, config.n_kv_heads, config.head_dim}, out.data(), scratch,
              pool);
    return out;
  }
};

TEST_P(Attention, MatchesDirectSoftmaxOverEveryPosition) {
  const auto [isa, c] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << "CPU lacks " << isa_name(isa);
  test::ScopedIsa forced(isa);
  const Sequences seqs(c);
  const int64_t q_dim = seqs.config.q_dim(), kv_dim = seqs.config.kv_dim();
  const int64_t rows = static_cast<int64_t>(seqs.batch.size());
  std::vector<int64_t> all(rows);
  std::iota(all.begin(), all.end(), 0);
  const std::vector<float> out = seqs.attend(all);
  const std::vector<float>& q = seqs.q;

  const int64_t group = c.n_heads / c.n_kv_heads;
  for (int64_t r = 0; r < rows; ++r) {
    const int s = seqs.batch.sequence[r];
    const int64_t pos = seqs.batch.positions[r];
    const std::vector<float>& keys = seqs.keys[s];
    const std::vector<float>& values = seqs.values[s];
    for (int64_t h = 0; h < c.n_heads; ++h) {
      const int64_t kv_off = (h / group) * c.head_dim;
      std::vector<double> w(pos + 1);
      double max = -INFINITY, sum = 0;
      for (int64_t p = 0; p <= pos; ++p) {
        double dot = 0;
        for (int64_t d = 0; d < c.head_dim; ++d)
          dot += static_cast<double>(q[r * q_dim + h * c.head_dim + d]) * keys[p * kv_dim + kv_off + d];
        w[p] = dot / std::sqrt(static_cast<double>(c.head_dim));
        max = std::max(max, w[p]);
      }
      for (auto& x : w) sum += (x = std::exp(x - max));
      for (int64_t d = 0; d < c.head_dim; ++d) {
        double want = 0;
        for (int64_t p = 0; p <= pos; ++p) want += w[p] / sum * values[p * kv_dim + kv_off + d];
        ASSERT_NEAR(out[r * q_dim + h * c.head_dim + d], want, 1e-5 + 1e-5 * std::fabs(want))
            << "row " << r << " head " << h << " dim " << d;
      }
    }
  }
}

// Rows of one sequence attended together (a prompt, a verify step's drafts) share
// their key and value reads; each row's output must still be bit for bit its output
// alone, or a token would depend on the batch that carried it.
TEST_P(Attention, EachRowIsBitForBitItsOutputAlone) {
  const auto [isa, c] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << "CPU lacks " << isa_name(isa);
  test::ScopedIsa forced(isa);
  const Sequences seqs(c);
  const int64_t q_dim = seqs.config.q_dim();
  const int64_t rows = static_cast<int64_t>(seqs.batch.size());
  std::vector<int64_t> prompt(rows);
  std::iota(prompt.begin(), prompt.end(), 0);
  // A verify step of 5 rows at the long sequence's end, beside the other's decode row.
  const std::vector<int64_t> verify = {95, 96, 97, 98, 99, rows - 1};
  for (const std::vector<int64_t>& together : {prompt, verify}) {
    const std::vector<float> out = seqs.attend(together);
    for (size_t i = 0; i < together.size(); ++i) {
      const std::vector<float> alone = seqs.attend({together[i]});
      ASSERT_EQ(0, std::memcmp(alone.data(), out.data() + i * q_dim, alone.size() * sizeof(float)))
          << "row " << together[i] << " of " << together.size();
    }
  }
}

// On AVX-512, heads of 64 and 128 in groups of 8 or 4 run with their size as a
// constant (attend_heads_sized), a lone head with it at run time: the same query as
// head 0 of a group and as the lone last head of its KV head must give the same bits.
TEST(AttentionAvx512, ConstantSizeHeadsMatchTheRunTimeSizeBitForBit) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "CPU lacks " << isa_name(Isa::kAvx512);
  test::ScopedIsa forced(Isa::kAvx512);
  for (const int64_t group : {8, 4})
    for (const int64_t head_dim : {64, 128}) {
      Sequences seqs(Case{group + 1, 1, head_dim, 16});
      const int64_t q_dim = seqs.config.q_dim(), rows = static_cast<int64_t>(seqs.batch.size());
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(seqs.q.begin() + r * q_dim, head_dim, seqs.q.begin() + r * q_dim + group * head_dim);
      std::vector<int64_t> all(rows);
      std::iota(all.begin(), all.end(), 0);
      const std::vector<float> out = seqs.attend(all);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(0, std::memcmp(out.data() + r * q_dim, out.data() + r * q_dim + group * head_dim,
                                 head_dim * sizeof(float)))
            << "group " << group << ", head_dim " << head_dim << ", row " << r;
    }
}

// An empty batch is no work (attention is public: the benchmarks and tests call it).
TEST(AttentionBatch, AnEmptyOneIsNoWork) {
  const Sequences seqs(Case{8, 4, 8, 16});
  EXPECT_TRUE(seqs.attend({}).empty());
}

INSTANTIATE_TEST_SUITE_P(
    AllPaths, Attention,
    testing::Combine(testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512),
                     testing::Values(Case{8, 2, 64, 16},    // GQA, llama shapes
                                     Case{32, 4, 64, 16},   // TinyLlama: groups of 8 heads
                                     Case{16, 2, 128, 16},  // head_dim 128 (a constant on AVX-512), groups of 8
                                     Case{8, 2, 128, 16},   // and groups of 4, as Llama 3 8B's
                                     Case{13, 1, 48, 16},   // 8 + 4 + 1 heads, head_dim off 32
                                     Case{4, 4, 18, 16},    // MHA, head_dim off the 4-wide unroll
                                     Case{8, 4, 8, 16},     // stories260K: head_dim in 8-lane registers
                                     Case{4, 2, 27, 16},    // head_dim 16 + 8 + 3
                                     Case{6, 3, 32, 5},     // blocks shorter than a key row
                                     Case{2, 1, 16, 40},    // blocks longer than a key row
                                     Case{5, 1, 8, 5},      // 2 + 2 + 1 small heads, short blocks
                                     Case{4, 1, 16, 16})),  // a group of four small heads
    [](const auto& info) {
      const Case c = std::get<1>(info.param);
      return std::string(isa_name(std::get<0>(info.param))) + "_h" + std::to_string(c.n_heads) + "_kv" +
             std::to_string(c.n_kv_heads) + "_d" + std::to_string(c.head_dim) + "_bt" +
             std::to_string(c.block_tokens);
    });

}  // namespace
}  // namespace tps
