// What bounds the integer panel tiles on this core: 16 independent vpdpbusd chains on
// one thread, with register operands, with a broadcast load per vpdpbusd (the one-panel
// tile's pattern), and with one broadcast load per two (the two-panel tile's). On Ice
// Lake (2026-12-03): 5.3, 2.8-3.1 and 4.6-5.1 G vpdpbusd/s, so the tiles are bound by
// loads, not multiplies (kernels/matmul_avx512_panels.inc). Skipped without
// AVX512_VNNI.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "core/cpu_features.h"

namespace tps {
namespace {

alignas(64) int8_t g_activations[4096];

// Four chains, each step `chain(i)` for chains i .. i + 3 (zmm0-15 accumulate; zmm16
// and zmm17 hold codes, zmm18 a broadcast; %0 points at activations).
#define TPS_REG(i) "vpdpbusd %%zmm18, %%zmm16, %%zmm" #i "\n\t"
#define TPS_BCAST(i) "vpbroadcastd " #i "*4(%0), %%zmm18\n\tvpdpbusd %%zmm18, %%zmm16, %%zmm" #i "\n\t"
#define TPS_SHARED(i, j)                                                                   \
  "vpbroadcastd " #i "*4(%0), %%zmm18\n\tvpdpbusd %%zmm18, %%zmm16, %%zmm" #i "\n\t" \
  "vpdpbusd %%zmm18, %%zmm17, %%zmm" #j "\n\t"
#define TPS_SIXTEEN(step) step(0) step(1) step(2) step(3) step(4) step(5) step(6) step(7) \
  step(8) step(9) step(10) step(11) step(12) step(13) step(14) step(15)
#define TPS_CLOBBERS                                                                                              \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
      "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18"

enum class Operands { kRegisters, kBroadcastEach, kBroadcastShared };

// One loop per operand pattern, each its own function: a loop that also branches on the
// pattern ran the shared broadcast a third slower.
template <Operands kMode>
[[gnu::target("avx512f,avx512vnni"), gnu::noinline]] void run_chains(int64_t iterations) {
  const int8_t* x = g_activations;
  for (int64_t i = 0; i < iterations; ++i) {
    if constexpr (kMode == Operands::kRegisters) {
      asm volatile(TPS_SIXTEEN(TPS_REG)::"r"(x) : TPS_CLOBBERS);
    } else if constexpr (kMode == Operands::kBroadcastEach) {
      asm volatile(TPS_SIXTEEN(TPS_BCAST)::"r"(x) : "memory", TPS_CLOBBERS);
    } else {
      asm volatile(TPS_SHARED(0, 1) TPS_SHARED(2, 3) TPS_SHARED(4, 5) TPS_SHARED(6, 7) TPS_SHARED(8, 9)
                       TPS_SHARED(10, 11) TPS_SHARED(12, 13) TPS_SHARED(14, 15)::"r"(x)
                   : "memory", TPS_CLOBBERS);
    }
  }
}

template <Operands kMode>
void BM_VnniOperands(benchmark::State& state) {
  if (!read_cpu_features().avx512vnni) {
    state.SkipWithError("the CPU lacks AVX512_VNNI");
    return;
  }
  constexpr int64_t kIterations = 100000;
  for (auto _ : state) run_chains<kMode>(kIterations);
  state.counters["vpdpbusd/s"] = benchmark::Counter(16.0 * kIterations, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_TEMPLATE(BM_VnniOperands, Operands::kRegisters)->Name("BM_VnniOperands/registers");
BENCHMARK_TEMPLATE(BM_VnniOperands, Operands::kBroadcastEach)->Name("BM_VnniOperands/broadcast_each");
BENCHMARK_TEMPLATE(BM_VnniOperands, Operands::kBroadcastShared)->Name("BM_VnniOperands/broadcast_per_two");

}  // namespace
}  // namespace tps
