#include "kernels/matmul.h"

#include <vector>

#include "core/error.h"
#include "kernels/matmul_kernels.h"
#include "quant/quantize.h"

namespace tps {

namespace {

MatmulKernel select_kernel(Isa isa, GgmlType type) {
  (void)isa;
  (void)type;
  return matmul_scalar;
}

void check_shape(const WeightMatrix& w) {
  if (!is_supported_weight_type(w.type)) fail("matmul: unsupported weight type {}", type_name(w.type));
  if (w.cols % type_info(w.type).block_size != 0)
    fail("matmul: {} columns is not a multiple of the {} block size", w.cols, type_name(w.type));
}

// row_bytes 0 means rows are packed back to back.
WeightMatrix with_row_bytes(const WeightMatrix& w) {
  WeightMatrix m = w;
  if (m.row_bytes == 0) m.row_bytes = row_bytes(w.type, w.cols);
  return m;
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  check_shape(w);
  if (w.rows == 0 || n_tokens <= 0) return;
  select_kernel(active_isa(), w.type)(with_row_bytes(w), x, n_tokens, y, pool);
}

// Dequantizes each row once into a per-thread buffer, then dots it with every token.
void matmul_scalar(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  pool.parallel_for(w.rows, 1, [&](int64_t r0, int64_t r1, int) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(w.cols));
    for (int64_t r = r0; r < r1; ++r) {
      dequantize_row(w.type, w.data + r * w.row_bytes, row.data(), w.cols);
      for (int64_t t = 0; t < n_tokens; ++t) {
        const float* xt = x + t * w.cols;
        float acc[8] = {};
        int64_t c = 0;
        for (; c + 8 <= w.cols; c += 8)
          for (int k = 0; k < 8; ++k) acc[k] += row[c + k] * xt[c + k];
        for (; c < w.cols; ++c) acc[0] += row[c] * xt[c];
        y[t * w.rows + r] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
      }
    }
  });
}

void matmul_reference(const WeightMatrix& weights, const float* x, int64_t n_tokens, float* y) {
  check_shape(weights);
  WeightMatrix w = with_row_bytes(weights);
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, w.data + r * w.row_bytes, row.data(), w.cols);
    for (int64_t t = 0; t < n_tokens; ++t) {
      double acc = 0;
      for (int64_t c = 0; c < w.cols; ++c) acc += static_cast<double>(row[c]) * x[t * w.cols + c];
      y[t * w.rows + r] = static_cast<float>(acc);
    }
  }
}

}  // namespace tps
