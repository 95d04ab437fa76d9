#include <cmath>
#include <initializer_list>
#include <vector>

#include "kernels/matmul_kernels.h"
#include "kernels/packed_weights.h"
#include "quant/quantize.h"

namespace tps {

const std::vector<int64_t>& tile_check_token_counts() {
  // The int8 tiles take a matmul's tokens a group (Q8Activations::kGroup) at a time, the
  // last one short: a full group and then 1..kGroup more form every tile height T.
  static const std::vector<int64_t> counts = [] {
    std::vector<int64_t> v;
    for (int64_t t = 1; t <= Q8Activations::kGroup; ++t) v.push_back(Q8Activations::kGroup + t);
    return v;
  }();
  return counts;
}

std::vector<float> check_weights(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i * 7919 % 211) - 105) / 50.0f;
  return v;
}

std::vector<float> check_activations(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>(i * 104729 % 199) - 99) / 40.0f;
  return v;
}

std::vector<uint8_t> check_matrix(GgmlType type, int64_t rows, int64_t cols) {
  const std::vector<float> values = check_weights(static_cast<size_t>(rows * cols));
  const size_t rb = row_bytes(type, cols);
  std::vector<uint8_t> data(rb * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) quantize_row(type, &values[r * cols], &data[r * rb], cols);
  return data;
}

// k's bf16 tiles against the bf16-rounded products summed in double, for every float
// weight type: 1..16 tokens (one partial tile), then 2..4 whole tiles and a partial one,
// and a block of 5 tiles before 4 and a partial one; 77 columns end in a half-empty pair
// and a partial step. The sums are f32 chains over the pairs, whose rounding the bound
// allows for.
bool bf16_tiles_agree(const IsaKernels& k) {
  if (k.float_panel_bf16_tiles == nullptr || !cpu_has_avx512_bf16()) return true;
  constexpr int64_t kRows = 24, kCols = 77;
  std::vector<int64_t> counts;
  for (int64_t t = 1; t <= kPanelRows; ++t) counts.push_back(t);
  for (int64_t tiles = 2; tiles <= 4; ++tiles) counts.push_back(tiles * kPanelRows + tiles);
  counts.push_back(9 * kPanelRows + 15);
  const std::vector<float> x = check_activations(counts.back() * kCols);
  std::vector<float> row(kCols);
  auto bf16 = [](float v) { return static_cast<double>(bf16_to_f32(f32_to_bf16(v))); };
  ThreadPool pool(1);
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    const size_t rb = row_bytes(type, kCols);
    const std::vector<uint8_t> data = check_matrix(type, kRows, kCols);
    const WeightMatrix w{type, kRows, kCols, data.data(), rb};
    for (int64_t tokens : counts) {
      std::vector<float> got(kRows * tokens);
      matmul_parts_with(&k, {{&w, got.data()}}, x.data(), tokens, pool, FloatMath::kBf16);
      for (int64_t r = 0; r < kRows; ++r) {
        dequantize_row(type, &data[r * rb], row.data(), kCols);
        for (int64_t t = 0; t < tokens; ++t) {
          double want = 0, size = 0;
          for (int64_t c = 0; c < kCols; ++c) {
            const double product = bf16(row[c]) * bf16(x[t * kCols + c]);
            want += product;
            size += std::fabs(product);
          }
          if (!(std::fabs(got[t * kRows + r] - want) <= 1e-5 * size)) return false;
        }
      }
    }
  }
  return true;
}

// Every weight type with integer panels, each through every tile shape the kernels
// form (tile_check_token_counts), with packed panels (compact where the type packs
// them so) and with panels packed on the fly (wide); two panels and a half of rows, so
// a pair of panels and a single one both run; an odd number of blocks where the type
// allows one (the int8 tiles alternate C tiles by block, so the last block falls on
// either). Small enough to take tens of milliseconds on one thread.
bool agrees_with_avx512(const IsaKernels& k) {
  constexpr int64_t kRows = 40, kMaxCols = 288;
  const int64_t max_tokens = tile_check_token_counts().back();
  const std::vector<float> x = check_activations(max_tokens * kMaxCols);
  ThreadPool pool(1);
  for (GgmlType type : kWeightTypes) {
    if (panel_layout(type) == nullptr) continue;
    const int64_t cols = type_info(type).block_size == 32 ? kMaxCols : 256;  // 9 blocks, or one super-block
    const std::vector<uint8_t> data = check_matrix(type, kRows, cols);
    const WeightMatrix plain{type, kRows, cols, data.data(), row_bytes(type, cols)};
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
