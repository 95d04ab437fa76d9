#include "kernels/amx_calibration.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "core/thread_pool.h"
#include "core/timer.h"
#include "kernels/packed_weights.h"
#include "quant/quantize.h"

namespace tps {

Int8TileSpeedups time_int8_tiles(const IsaKernels& tiles) {
  // 512 x 2048 Q4_0: 0.6 MB of panels, in L2 once the first run has read them, so the
  // runs time the kernels, not the memory. About 20 ms in all on a Sapphire Rapids core.
  constexpr int64_t kRows = 512, kCols = 2048, kRuns = 5;
  const GgmlType type = GgmlType::kQ4_0;
  const std::vector<float> x = check_activations(kManyTokens * kCols);
  const std::vector<uint8_t> data = check_matrix(type, kRows, kCols);
  WeightMatrix w{type, kRows, kCols, data.data(), row_bytes(type, kCols)};
  const PackedWeights packed = pack_weights(w);
  w.packed = &packed;
  std::vector<float> y(kRows * kManyTokens);
  ThreadPool pool(1);
  auto speedup = [&](int64_t tokens) {
    double best[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
    // Against the AVX-512 kernels the dispatcher would use instead (GFNI's where the CPU has it).
    const IsaKernels* kernels[2] = {kernels_for(Isa::kAvx512), &tiles};
    for (int64_t run = 0; run <= kRuns; ++run) {
      for (int i = 0; i < 2; ++i) {
        const int k = (run + i) % 2;  // the order alternates, so drift falls on both
        const double t0 = now_seconds();
        matmul_parts_with(kernels[k], {{&w, y.data()}}, x.data(), tokens, pool);
        if (run > 0) best[k] = std::min(best[k], now_seconds() - t0);  // run 0 warms the caches
      }
    }
    return best[0] / best[1];
  };
  return {speedup(kFewTokens), speedup(kManyTokens)};
}

int64_t int8_tiles_from(const Int8TileSpeedups& s) {
  if (s.many < kFasterBy) return 0;  // prefill, where most matmul time goes, would lose
  return s.few >= kFasterBy ? kAmxMinTokens : kManyTokensFrom;
}

}  // namespace tps
