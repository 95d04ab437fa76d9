#include <initializer_list>
#include <vector>

#include "kernels/matmul_kernels.h"
#include "kernels/packed_weights.h"
#include "quant/quantize.h"

namespace tps {

const std::vector<int64_t>& tile_check_token_counts() {
  // A chunk's last token group has 1..16 tokens, and chunks of more than 4 tokens go to
  // the tiles: 17..32 tokens form every tile height T once after a full group. Past one
  // chunk (6 groups), compact panels are widened first, so 96 + 17..32 forms every
  // height again over the wide layout.
  static const std::vector<int64_t> counts = [] {
    std::vector<int64_t> v;
    for (int64_t base : {int64_t{0}, 6 * Q8Activations::kGroup})
      for (int64_t t = 1; t <= Q8Activations::kGroup; ++t) v.push_back(base + Q8Activations::kGroup + t);
    return v;
  }();
  return counts;
}

// Every weight type with integer panels, each through every tile shape the kernels
// form (tile_check_token_counts), with packed panels and with panels packed on the fly;
// a panel and a half of rows, so pairs and a single panel both run. Small enough to
// take tens of milliseconds on one thread.
bool agrees_with_avx512(const IsaKernels& k) {
  constexpr int64_t kRows = 24, kCols = 256;
  const int64_t max_tokens = tile_check_token_counts().back();
  std::vector<float> wf(kRows * kCols), x(max_tokens * kCols);
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = static_cast<float>(static_cast<int>(i * 7919 % 211) - 105) / 50.0f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i * 104729 % 199) - 99) / 40.0f;
  ThreadPool pool(1);
  for (GgmlType type : kWeightTypes) {
    if (panel_layout(type) == nullptr) continue;
    const size_t rb = row_bytes(type, kCols);
    std::vector<uint8_t> data(rb * kRows);
    for (int64_t r = 0; r < kRows; ++r) quantize_row(type, &wf[r * kCols], &data[r * rb], kCols);
    const WeightMatrix plain{type, kRows, kCols, data.data(), rb};
    const PackedWeights packed = pack_weights(plain);
    WeightMatrix with_packed = plain;
    with_packed.packed = &packed;
    std::vector<float> want(kRows * max_tokens), got(want.size());
    for (const WeightMatrix* w : std::initializer_list<const WeightMatrix*>{&with_packed, &plain}) {
      for (int64_t tokens : tile_check_token_counts()) {
        matmul_parts_with(isa_kernels_avx512(), {{w, want.data()}}, x.data(), tokens, pool);
        matmul_parts_with(&k, {{w, got.data()}}, x.data(), tokens, pool);
        if (got != want) return false;
      }
    }
  }
  return true;
}

}  // namespace tps
