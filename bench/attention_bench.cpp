// Attention micro-benchmarks on TinyLlama-1.1B's shape (32 query heads in 4 KV groups
// of head_dim 64, 16-position KV blocks), 2 threads (bench_pool.h), the active ISA (cap
// it with TPS_ISA): a 128-token prompt attending causally to itself (prefill), and 16
// sequences of 192 cached positions decoding one token each (batched decode), on one
// layer (its 3 MB of K/V stay in L3), on all 22 (69 MB: read from memory, as in a real
// decode step), and 2 sequences on one layer (0.4 MB: in L2, the kernel's own pace).
// Reports the attention FLOP/s (2 x 2 x head_dim flops per query head and key visited).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "bench_pool.h"
#include "kernels/matmul.h"
#include "model/attention.h"

namespace tps {
namespace {

struct Setup {
  ModelConfig config;
  KvCache kv;
  std::vector<std::vector<int32_t>> tables;
  ForwardBatch batch;
  std::vector<float> q, out;
  std::vector<AttentionBlock> scratch;
  double flops = 0;

  static ModelConfig preset(const char* name, int64_t layers) {
    ModelConfig c = *find_model_preset(name);
    if (layers > 0) c.n_layers = layers;
    return c;
  }

  // `sequences` sequences of `length` positions; the last `rows` of each are queried.
  // layers: how many of the preset's (0: all).
  Setup(int64_t sequences, int64_t length, int64_t rows, int64_t layers = 1, const char* model = "tinyllama-1.1b")
      : config(preset(model, layers)), kv(config, sequences * ((length + 15) / 16)), tables(sequences) {
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    const int64_t kv_dim = config.kv_dim(), blocks = (length + 15) / 16;
    std::vector<float> key(kv_dim), value(kv_dim);
    for (int64_t s = 0; s < sequences; ++s) {
      for (int64_t b = 0; b < blocks; ++b) tables[s].push_back(static_cast<int32_t>(s * blocks + b));
      batch.sequences.push_back({tables[s].data(), blocks});
      for (int64_t p = 0; p < length; ++p) {
        for (auto& x : key) x = dist(rng);
        for (auto& x : value) x = dist(rng);
        for (int64_t layer = 0; layer < config.n_layers; ++layer)
          kv.store(layer, tables[s][p / 16], p % 16, key.data(), value.data());
        if (p >= length - rows) {
          batch.add(0, static_cast<int32_t>(p), static_cast<int32_t>(s), false);
          flops += 4.0 * config.head_dim * config.n_heads * static_cast<double>(p + 1) * static_cast<double>(config.n_layers);
        }
      }
    }
    q.resize(batch.size() * config.q_dim());
    for (auto& x : q) x = dist(rng);
    out.resize(q.size());
  }
};

void run(benchmark::State& state, Setup& s) {
  ThreadPool& pool = bench_pool();
  const AttentionShape shape{s.config.n_heads, s.config.n_kv_heads, s.config.head_dim};
  for (auto _ : state) {
    for (int64_t layer = 0; layer < s.config.n_layers; ++layer)
      attention(s.q.data(), s.batch, s.kv, layer, shape, s.out.data(), s.scratch, pool);
    benchmark::ClobberMemory();
  }
  state.counters["flop/s"] = benchmark::Counter(s.flops, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(isa_name(active_isa()));
}

void BM_AttentionPrefill128(benchmark::State& state) {
  static Setup s(1, 128, 128);
  run(state, s);
}

void BM_AttentionDecode16x192(benchmark::State& state) {
  static Setup s(16, 192, 1);
  run(state, s);
}

void BM_AttentionDecode2x192(benchmark::State& state) {
  static Setup s(2, 192, 1);
  run(state, s);
}

void BM_AttentionDecode16x192AllLayers(benchmark::State& state) {
  static Setup s(16, 192, 1, 22);
  run(state, s);
}

void BM_AttentionDecodeStories260K(benchmark::State& state) {
  static Setup s(1, 192, 1, 0, "stories260k");
  run(state, s);
}

BENCHMARK(BM_AttentionPrefill128)->UseRealTime();
BENCHMARK(BM_AttentionDecode16x192)->UseRealTime();
BENCHMARK(BM_AttentionDecode2x192)->UseRealTime();
BENCHMARK(BM_AttentionDecode16x192AllLayers)->UseRealTime();
BENCHMARK(BM_AttentionDecodeStories260K)->UseRealTime();

}  // namespace
}  // namespace tps
