// Paged causal attention (online softmax over transposed key blocks) on every ISA this
// CPU runs, against softmax(q k / sqrt(d)) v computed directly in double precision.
// Keys and values are drawn as halves, which the cache stores exactly.
#include "model/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

TEST_P(Attention, MatchesDirectSoftmaxOverEveryPosition) {
  const auto [isa, c] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << "CPU lacks " << isa_name(isa);
  test::ScopedIsa forced(isa);
  ModelConfig config;
  config.n_layers = 2;
  config.n_heads = c.n_heads;
  config.n_kv_heads = c.n_kv_heads;
  config.head_dim = c.head_dim;
  const int64_t kv_dim = config.kv_dim(), q_dim = config.q_dim(), bt = c.block_tokens;
  // A long sequence (up to 7 chunks of 16 keys: rows with several of the chunk pairs
  // AVX-512 takes at once, with and without one left over) and one shorter than a block.
  const int64_t lengths[] = {100, 3};
  const int64_t layer = 1;

  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  // Blocks in a scattered order, as a block table may hold them.
  std::vector<std::vector<int32_t>> tables(2);
  int64_t n_blocks = 0;
  for (int s = 0; s < 2; ++s) n_blocks += (lengths[s] + bt - 1) / bt;
  std::vector<int32_t> ids(n_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  KvCache kv(config, n_blocks, bt);
  std::vector<std::vector<float>> keys(2), values(2);
  ForwardBatch batch;
  size_t next_id = 0;
  for (int s = 0; s < 2; ++s) {
    for (int64_t b = 0; b < (lengths[s] + bt - 1) / bt; ++b) tables[s].push_back(ids[next_id++]);
    batch.sequences.push_back({tables[s].data(), static_cast<int64_t>(tables[s].size())});
    keys[s].resize(lengths[s] * kv_dim);
    values[s].resize(lengths[s] * kv_dim);
    for (auto& x : keys[s]) x = f16_to_f32(f32_to_f16(dist(rng)));
    for (auto& x : values[s]) x = f16_to_f32(f32_to_f16(dist(rng)));
    for (int64_t p = 0; p < lengths[s]; ++p) {
      kv.store(layer, tables[s][p / bt], p % bt, &keys[s][p * kv_dim], &values[s][p * kv_dim]);
      batch.add(0, static_cast<int32_t>(p), s, false);
    }
  }
  const int64_t rows = static_cast<int64_t>(batch.size());
  std::vector<float> q(rows * q_dim), out(rows * q_dim);
  for (auto& x : q) x = 2.0f * dist(rng);  // peaked softmaxes too
  std::vector<AttentionBlock> scratch;
  ThreadPool pool(2);
  attention(q.data(), batch, kv, layer, {c.n_heads, c.n_kv_heads, c.head_dim}, out.data(), scratch, pool);

  const int64_t group = c.n_heads / c.n_kv_heads;
  for (int64_t r = 0; r < rows; ++r) {
    const int s = batch.sequence[r];
    const int64_t pos = batch.positions[r];
    for (int64_t h = 0; h < c.n_heads; ++h) {
      const int64_t kv_off = (h / group) * c.head_dim;
      std::vector<double> w(pos + 1);
      double max = -INFINITY, sum = 0;
      for (int64_t p = 0; p <= pos; ++p) {
        double dot = 0;
        for (int64_t d = 0; d < c.head_dim; ++d)
          dot += static_cast<double>(q[r * q_dim + h * c.head_dim + d]) * keys[s][p * kv_dim + kv_off + d];
        w[p] = dot / std::sqrt(static_cast<double>(c.head_dim));
        max = std::max(max, w[p]);
      }
      for (auto& x : w) sum += (x = std::exp(x - max));
      for (int64_t d = 0; d < c.head_dim; ++d) {
        double want = 0;
        for (int64_t p = 0; p <= pos; ++p) want += w[p] / sum * values[s][p * kv_dim + kv_off + d];
        ASSERT_NEAR(out[r * q_dim + h * c.head_dim + d], want, 1e-5 + 1e-5 * std::fabs(want))
            << "row " << r << " head " << h << " dim " << d;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllPaths, Attention,
    testing::Combine(testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512),
                     testing::Values(Case{8, 2, 64, 16},    // GQA, llama shapes
                                     Case{32, 4, 64, 16},   // TinyLlama: groups of 8 heads
                                     Case{13, 1, 48, 16},   // 8 + 4 + 1 heads, head_dim off 32
                                     Case{4, 4, 18, 16},    // MHA, head_dim off the 4-wide unroll
                                     Case{8, 4, 8, 16},     // stories260K: head_dim in 8-lane registers
                                     Case{4, 2, 27, 16},    // head_dim 16 + 8 + 3
                                     Case{6, 3, 32, 5},     // blocks shorter than a key row
                                     Case{2, 1, 16, 40})),  // blocks longer than a key row
    [](const auto& info) {
      const Case c = std::get<1>(info.param);
      return std::string(isa_name(std::get<0>(info.param))) + "_h" + std::to_string(c.n_heads) + "_kv" +
             std::to_string(c.n_kv_heads) + "_d" + std::to_string(c.head_dim) + "_bt" +
             std::to_string(c.block_tokens);
    });

}  // namespace
}  // namespace tps
