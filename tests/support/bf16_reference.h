#pragma once
// The product the bf16 float math (FloatMath::kBf16) approximates: y = W x with every
// weight and activation rounded to bf16 first, summed in double; and per output the sum
// of the products' magnitudes, which the error of f32 sums scales with.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/matmul.h"
#include "quant/quantize.h"

namespace tps::test {

struct Bf16Reference {
  std::vector<double> y, size;  // y[t * rows + r]
};

inline Bf16Reference bf16_reference(const WeightMatrix& w, const std::vector<float>& x, int64_t tokens) {
  auto bf16 = [](float v) { return static_cast<double>(bf16_to_f32(f32_to_bf16(v))); };
  std::vector<float> row(static_cast<size_t>(w.cols));
  Bf16Reference out{std::vector<double>(static_cast<size_t>(tokens * w.rows)),
                    std::vector<double>(static_cast<size_t>(tokens * w.rows))};
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, w.data + r * w.row_bytes, row.data(), w.cols);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t c = 0; c < w.cols; ++c) {
        const double p = bf16(row[c]) * bf16(x[t * w.cols + c]);
        out.y[t * w.rows + r] += p;
        out.size[t * w.rows + r] += std::fabs(p);
      }
  }
  return out;
}

}  // namespace tps::test
