// Matmul micro-benchmarks on TinyLlama-1.1B shapes, 2 threads, the active ISA (cap it
// with TPS_ISA). GEMV cycles through enough copies of the matrix to stream from DRAM,
// and reports GB/s of weights next to a plain streaming-read probe of this machine;
// GEMM streamed does the same with 16 tokens (batched decode) and also reports MAC/s;
// GEMM (512 tokens, prefill) reports MAC/s and the matmul-only tokens/s of a whole
// TinyLlama forward pass (1.03 GMAC per token) at that rate; the panel tile, the integer
// kernels' op/s on one thread with the weights in cache; the panel pair, the decode
// kernel's compute limit in panel bytes per second.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "bench_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_kernels.h"
#include "kernels/packed_weights.h"
#include "quant/quantize.h"

namespace tps {
namespace {

constexpr size_t kStreamBytes = size_t{256} << 20;  // well past the L3
constexpr double kTinyLlamaMacsPerToken = 1.03e9;

// On a shared machine the best of several repetitions is the figure to compare:
// run with --benchmark_repetitions=N and read the _min rows.
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// Streaming read of kStreamBytes on both threads: the bandwidth GEMV should reach.
void BM_ReadBandwidth(benchmark::State& state) {
  static std::vector<uint64_t> buffer(kStreamBytes / 8, 1);
  uint64_t sink = 0;
  for (auto _ : state) {
    uint64_t sums[2] = {};
    bench_pool().parallel_for(static_cast<int64_t>(buffer.size()), 4096, [&](int64_t b, int64_t e, int ti) {
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int64_t i = b; i < e; i += 4) s0 ^= buffer[i], s1 ^= buffer[i + 1], s2 ^= buffer[i + 2], s3 ^= buffer[i + 3];
      sums[ti] = s0 ^ s1 ^ s2 ^ s3;
    });
    sink ^= sums[0] ^ sums[1];
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kStreamBytes));
}
BENCHMARK(BM_ReadBandwidth)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0)->ComputeStatistics("min", min_of);

// One quantized weight matrix and its packed form (not movable: w points into it).
struct Matrix {
  Matrix() = default;
  Matrix(const Matrix&) = delete;
  std::vector<uint8_t> data;
  WeightMatrix w;
  PackedWeights packed;
};

std::vector<uint8_t> random_weights(GgmlType type, int64_t rows, int64_t cols) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  size_t rb = row_bytes(type, cols);
  std::vector<uint8_t> data(rb * static_cast<size_t>(rows));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = dist(rng);
    quantize_row(type, row.data(), data.data() + r * rb, cols);
  }
  return data;
}

void init_matrix(Matrix& m, GgmlType type, int64_t rows, int64_t cols, std::vector<uint8_t> data) {
  m.data = std::move(data);
  m.w = WeightMatrix{type, rows, cols, m.data.data(), row_bytes(type, cols)};
  m.packed = pack_weights(m.w, &bench_pool());
  if (!m.packed.empty()) m.w.packed = &m.packed;
}

std::vector<float> activations(int64_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = dist(rng);
  return x;
}

void set_mac_rate(benchmark::State& state, int64_t rows, int64_t cols, int64_t tokens) {
  double macs = static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(tokens);
  state.counters["MAC/s"] = benchmark::Counter(macs, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["model_tok/s"] =
      benchmark::Counter(macs / kTinyLlamaMacsPerToken, benchmark::Counter::kIsIterationInvariantRate);
}

// `tokens` tokens through copies of one matrix that together exceed the caches, one
// copy after another: the weights stream from memory, as in decode.
void run_streamed(benchmark::State& state, GgmlType type, int64_t tokens) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const size_t bytes = row_bytes(type, cols) * static_cast<size_t>(rows);
  // Copies of one matrix (quantizing is slow); only their addresses matter.
  auto data = random_weights(type, rows, cols);
  const size_t copies = std::max<size_t>(2, kStreamBytes / bytes);
  std::vector<Matrix> ms(copies);
  for (auto& m : ms) init_matrix(m, type, rows, cols, data);
  auto x = activations(tokens * cols);
  std::vector<float> y(static_cast<size_t>(rows * tokens));
  size_t i = 0;
  for (auto _ : state) {
    matmul(ms[i].w, x.data(), tokens, y.data(), bench_pool());
    i = (i + 1) % copies;
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetLabel(isa_name(active_isa()));
}

void BM_Gemv(benchmark::State& state, GgmlType type) { run_streamed(state, type, 1); }

// Batched decode: range(2) tokens (16: B=16), the weights from memory as for one.
void BM_GemmStreamed(benchmark::State& state, GgmlType type) {
  run_streamed(state, type, state.range(2));
  set_mac_rate(state, state.range(0), state.range(1), state.range(2));
}

void BM_Gemm(benchmark::State& state, GgmlType type) {
  const int64_t rows = state.range(0), cols = state.range(1), tokens = state.range(2);
  Matrix m;
  init_matrix(m, type, rows, cols, random_weights(type, rows, cols));
  auto x = activations(tokens * cols);
  std::vector<float> y(static_cast<size_t>(rows * tokens));
  for (auto _ : state) {
    matmul(m.w, x.data(), tokens, y.data(), bench_pool());
    benchmark::ClobberMemory();
  }
  set_mac_rate(state, rows, cols, tokens);
  state.SetLabel(isa_name(active_isa()));
}

// Random activations of `tokens` tokens quantized as the integer kernels take them, for
// weights with the given zero point (with the slack after the codes that the AMX int8
// tiles read).
struct QuantizedTokens {
  QuantizedTokens(const IsaKernels& k, int64_t tokens, int64_t cols, int zero_point)
      : q(tokens * cols + 32 * Q8Activations::kGroup), d(tokens * cols / 32), sum32(d.size()), sum16(tokens * cols / 16), zero16(tokens * cols / 16), zero32(d.size()),
        a{tokens, cols, q.data(), d.data(), sum32.data(), sum16.data(), zero16.data(), zero32.data()} {
    auto x = activations(tokens * cols);
    for (int64_t t = 0; t < tokens; ++t) k.quantize_activations(&x[t * cols], cols, zero_point, a.token(t));
  }
  std::vector<int8_t> q;
  std::vector<float> d, sum32, sum16;
  std::vector<int32_t> zero16, zero32;
  Q8Activations a;
};

constexpr int64_t kPanelBenchCols = 2048;

// Two 16-row panels of kPanelBenchCols columns times `tokens` tokens
// (IsaKernels::panels), again and again on one thread, with the weights in cache.
// Returns one panel's bytes, or 0 where the ISA has no panel kernels (the benchmark is
// then skipped).
size_t run_two_panels(benchmark::State& state, GgmlType type, int64_t tokens) {
  const IsaKernels* k = kernels_for(active_isa());
  if (k == nullptr) {
    state.SkipWithError("the scalar path has no panel kernels");
    return 0;
  }
  Matrix m;
  init_matrix(m, type, 2 * kPanelRows, kPanelBenchCols, random_weights(type, 2 * kPanelRows, kPanelBenchCols));
  const PanelLayout& layout = m.packed.layout();
  const QuantizedTokens x(*k, tokens, kPanelBenchCols, layout.offset);
  std::vector<float> y(static_cast<size_t>(tokens * 2 * kPanelRows));
  // The panels as the kernel reads them: compact ones widened first, as the driver does.
  const size_t panel_bytes = layout.wide_panel_bytes(kPanelBenchCols);
  std::vector<uint8_t> wide(m.packed.compact() ? 2 * panel_bytes : 0);
  const uint8_t* panel[2] = {m.packed.panel(0), m.packed.panel(1)};
  for (size_t i = 0; i < wide.size() / panel_bytes; ++i) {
    k->widen_panel(layout, panel[i], kPanelBenchCols, &wide[i * panel_bytes]);
    panel[i] = &wide[i * panel_bytes];
  }
  for (auto _ : state) {
    k->panels(panel[0], panel[1], layout, x.a, 0, tokens, y.data(), 2 * kPanelRows, 0, kPanelRows);
    benchmark::ClobberMemory();
  }
  state.SetLabel(isa_name(active_isa()));
  return panel_bytes;
}

// range(0) tokens (a group; 16: batched decode's 6 + 6 + 4): the integer kernel's
// compute rate with no memory stream or second thread in the way, to set against the
// int8 peak per thread of `tps probe`.
void BM_PanelTile(benchmark::State& state, GgmlType type) {
  const int64_t tokens = state.range(0);
  if (run_two_panels(state, type, tokens) == 0) return;
  state.counters["op/s"] =
      benchmark::Counter(2.0 * 2 * kPanelRows * kPanelBenchCols * tokens, benchmark::Counter::kIsIterationInvariantRate);
}

// One token (the decode kernel): the panel bytes per second its compute could consume,
// which must stay well above a thread's share of the DRAM read.
void BM_PanelPair(benchmark::State& state, GgmlType type) {
  const size_t panel_bytes = run_two_panels(state, type, 1);
  if (panel_bytes == 0) return;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * panel_bytes));
}

// Two float panels of 256 columns times one group of interleaved tokens, again and
// again on one thread, from L1: the float tile's compute rate with no memory stream or
// second thread in the way, to set against the f32 FMA peak per thread of `tps probe`.
void BM_FloatPanelTile(benchmark::State& state, GgmlType type) {
  constexpr int64_t kCols = 256;
  const IsaKernels* k = kernels_for(active_isa());
  if (k == nullptr) {
    state.SkipWithError("the scalar path has no panel kernels");
    return;
  }
  const int64_t tokens = k->float_group;
  Matrix m;
  init_matrix(m, type, 2 * kPanelRows, kCols, random_weights(type, 2 * kPanelRows, kCols));
  std::vector<float> xt(tokens * kCols, 0.5f), y(tokens * 2 * kPanelRows);
  const InterleavedTokens a{xt.data(), tokens, tokens, 0};
  for (auto _ : state) {
    k->float_panels(type, m.packed.panel(0), m.packed.panel(1), kCols, a, y.data(), 2 * kPanelRows, 0, kPanelRows);
    benchmark::ClobberMemory();
  }
  state.counters["op/s"] =
      benchmark::Counter(2.0 * 2 * kPanelRows * kCols * tokens, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(isa_name(active_isa()));
}

void shapes_gemv(benchmark::internal::Benchmark* b) {
  b->Args({2048, 2048})->Args({5632, 2048})->Args({2048, 5632})->Unit(benchmark::kMicrosecond)->UseRealTime();
  b->ComputeStatistics("min", min_of);
}
void shapes_gemm(benchmark::internal::Benchmark* b) {
  b->Args({2048, 2048, 512})->Args({5632, 2048, 512})->Args({2048, 2048, 16})->Unit(benchmark::kMillisecond)->UseRealTime();
  b->ComputeStatistics("min", min_of);
}

void shapes_streamed(benchmark::internal::Benchmark* b) {
  b->Args({5632, 2048, 16})->Args({2048, 5632, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
  b->ComputeStatistics("min", min_of);
}

#define TPS_MATMUL_BENCH(name, type)                                                \
  BENCHMARK_CAPTURE(BM_Gemv, name, GgmlType::type)->Apply(shapes_gemv);             \
  BENCHMARK_CAPTURE(BM_GemmStreamed, name, GgmlType::type)->Apply(shapes_streamed); \
  BENCHMARK_CAPTURE(BM_Gemm, name, GgmlType::type)->Apply(shapes_gemm)

TPS_MATMUL_BENCH(q4_0, kQ4_0);
TPS_MATMUL_BENCH(q8_0, kQ8_0);
TPS_MATMUL_BENCH(f16, kF16);
TPS_MATMUL_BENCH(q4_k, kQ4_K);
TPS_MATMUL_BENCH(q6_k, kQ6_K);
TPS_MATMUL_BENCH(q4_1, kQ4_1);
TPS_MATMUL_BENCH(q5_0, kQ5_0);
TPS_MATMUL_BENCH(q5_k, kQ5_K);
TPS_MATMUL_BENCH(bf16, kBF16);
TPS_MATMUL_BENCH(iq4_nl, kIQ4_NL);
TPS_MATMUL_BENCH(iq4_xs, kIQ4_XS);
TPS_MATMUL_BENCH(q2_k, kQ2_K);
TPS_MATMUL_BENCH(q3_k, kQ3_K);

// The panel kernels of the integer paths, one per panel shape.
#define TPS_PANEL_BENCH(name, type)                     \
  BENCHMARK_CAPTURE(BM_PanelTile, name, GgmlType::type)->Arg(Q8Activations::kGroup)->Arg(16); \
  BENCHMARK_CAPTURE(BM_PanelPair, name, GgmlType::type)

TPS_PANEL_BENCH(q4_0, kQ4_0);
TPS_PANEL_BENCH(q8_0, kQ8_0);
TPS_PANEL_BENCH(q4_1, kQ4_1);
TPS_PANEL_BENCH(q4_k, kQ4_K);
TPS_PANEL_BENCH(q6_k, kQ6_K);

BENCHMARK_CAPTURE(BM_FloatPanelTile, f32, GgmlType::kF32);
BENCHMARK_CAPTURE(BM_FloatPanelTile, f16, GgmlType::kF16);
BENCHMARK_CAPTURE(BM_FloatPanelTile, bf16, GgmlType::kBF16);

}  // namespace
}  // namespace tps
