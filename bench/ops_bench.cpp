// Element-wise kernel micro-benchmarks on TinyLlama-1.1B's widths, one thread, the
// active ISA (cap it with TPS_ISA): each op over a prompt chunk of 64 rows, reporting
// the bytes it reads and writes per second and its elements per second. They are
// small beside the matmuls (a few % of a step), so one thread shows their cost alone.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/matmul_kernels.h"
#include "kernels/ops.h"

namespace tps {
namespace {

constexpr int64_t kRows = 64, kDim = 2048, kFfnDim = 5632, kHeads = 32, kHeadDim = 64;

std::vector<float> gaussian(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

// bytes: read and written per iteration; elements: values produced per iteration.
void report(benchmark::State& state, int64_t bytes, int64_t elements) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * elements);
  state.SetLabel(isa_name(active_isa()));
}

void BM_Axpy(benchmark::State& state) {  // the residual add
  const int64_t n = kRows * kDim;
  auto x = gaussian(n, 1), y = gaussian(n, 2);
  for (auto _ : state) {
    axpy(1e-3f, x.data(), y.data(), n);
    benchmark::ClobberMemory();
  }
  report(state, 3 * n * 4, n);
}
BENCHMARK(BM_Axpy);

void BM_RmsNorm(benchmark::State& state) {
  auto x = gaussian(kRows * kDim, 1), w = gaussian(kDim, 2), out = x;
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r) rmsnorm(&x[r * kDim], w.data(), kDim, 1e-5f, &out[r * kDim]);
    benchmark::ClobberMemory();
  }
  report(state, 2 * kRows * kDim * 4, kRows * kDim);
}
BENCHMARK(BM_RmsNorm);

void BM_SiluMul(benchmark::State& state) {  // SwiGLU between gate/up and down
  const int64_t n = kRows * kFfnDim;
  auto gate = gaussian(n, 1), up = gaussian(n, 2), out = gate;
  for (auto _ : state) {
    silu_mul(gate.data(), up.data(), n, out.data());
    benchmark::ClobberMemory();
  }
  report(state, 3 * n * 4, n);
}
BENCHMARK(BM_SiluMul);

void BM_Rope(benchmark::State& state) {  // queries of 64 positions
  auto q = gaussian(kRows * kHeads * kHeadDim, 1);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r) rope(&q[r * kHeads * kHeadDim], kHeads, kHeadDim, 100 + r, 10000.0f, RopeStyle::kAdjacent);
    benchmark::ClobberMemory();
  }
  report(state, 2 * kRows * kHeads * kHeadDim * 4, kRows * kHeads * kHeadDim);
}
BENCHMARK(BM_Rope);

// The integer matmuls' activation quantization (int8 codes, scales and the sums per 16 and 32).
void BM_QuantizeActivations(benchmark::State& state) {
  const IsaKernels* k = kernels_for(active_isa());
  auto quantize = k != nullptr ? k->quantize_activations : quantize_activations_scalar;
  auto x = gaussian(kRows * kDim, 1);
  std::vector<int8_t> q(static_cast<size_t>(kRows * kDim));
  std::vector<float> d(kRows * kDim / 32), sum32(kRows * kDim / 32), sum16(kRows * kDim / 16);
  std::vector<int32_t> zero16(kRows * kDim / 16), zero32(kRows * kDim / 32);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r)
      quantize(&x[r * kDim], kDim, 8,
               {&q[r * kDim], &d[r * kDim / 32], &sum32[r * kDim / 32], &sum16[r * kDim / 16], &zero16[r * kDim / 16], &zero32[r * kDim / 32], 1});
    benchmark::ClobberMemory();
  }
  report(state, kRows * kDim * (4 + 1) + (d.size() + sum32.size() + sum16.size() + zero16.size() + zero32.size()) * 4, kRows * kDim);
}
BENCHMARK(BM_QuantizeActivations);

}  // namespace
}  // namespace tps
