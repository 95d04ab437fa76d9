#include <vector>

#include "kernels/matmul_kernels.h"
#include "kernels/packed_weights.h"
#include "quant/quantize.h"

namespace tps {

// Products small enough to take a millisecond: a panel and a half of each code width
// and block size the tiles take (8-bit codes straight from the panel, 4-bit codes
// unpacked first, blocks of 16), times 30 tokens (two token groups, then a partial
// one), on one thread.
bool agrees_with_avx512(const IsaKernels& k) {
  constexpr int64_t kRows = 24, kCols = 256, kTokens = 2 * Q8Activations::kGroup + 6;
  std::vector<float> wf(kRows * kCols), x(kTokens * kCols);
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = static_cast<float>(static_cast<int>(i * 7919 % 211) - 105) / 50.0f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i * 104729 % 199) - 99) / 40.0f;
  ThreadPool pool(1);
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ6_K}) {
    const size_t rb = row_bytes(type, kCols);
    std::vector<uint8_t> data(rb * kRows);
    for (int64_t r = 0; r < kRows; ++r) quantize_row(type, &wf[r * kCols], &data[r * rb], kCols);
    WeightMatrix w{type, kRows, kCols, data.data(), rb};
    PackedWeights packed = pack_weights(w);
    w.packed = &packed;
    std::vector<float> want(kRows * kTokens), got(want.size());
    matmul_parts_with(isa_kernels_avx512(), {{&w, want.data()}}, x.data(), kTokens, pool);
    matmul_parts_with(&k, {{&w, got.data()}}, x.data(), kTokens, pool);
    if (got != want) return false;
  }
  return true;
}

}  // namespace tps
