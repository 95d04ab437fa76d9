#pragma once
// Per-format row conversions behind quantize_row/dequantize_row. n is a multiple of the
// format's block size.
#include <cmath>
#include <cstdint>

namespace tps {

// The element of largest magnitude, with its sign (the first of equals): symmetric
// formats map it to the most negative code so the full code range is used.
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void dequantize_row_q4_0(const void* src, float* dst, int64_t n);
void dequantize_row_q4_1(const void* src, float* dst, int64_t n);
void dequantize_row_q5_0(const void* src, float* dst, int64_t n);
void dequantize_row_q5_1(const void* src, float* dst, int64_t n);
void dequantize_row_q8_0(const void* src, float* dst, int64_t n);
void dequantize_row_q2_k(const void* src, float* dst, int64_t n);
void dequantize_row_q3_k(const void* src, float* dst, int64_t n);
void dequantize_row_q4_k(const void* src, float* dst, int64_t n);
void dequantize_row_q5_k(const void* src, float* dst, int64_t n);
void dequantize_row_q6_k(const void* src, float* dst, int64_t n);
void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n);
void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n);

void quantize_row_q4_0(const float* src, void* dst, int64_t n);
void quantize_row_q4_1(const float* src, void* dst, int64_t n);
void quantize_row_q5_0(const float* src, void* dst, int64_t n);
void quantize_row_q5_1(const float* src, void* dst, int64_t n);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q2_k(const float* src, void* dst, int64_t n);
void quantize_row_q3_k(const float* src, void* dst, int64_t n);
void quantize_row_q4_k(const float* src, void* dst, int64_t n);
void quantize_row_q5_k(const float* src, void* dst, int64_t n);
void quantize_row_q6_k(const float* src, void* dst, int64_t n);
void quantize_row_iq4_nl(const float* src, void* dst, int64_t n);
void quantize_row_iq4_xs(const float* src, void* dst, int64_t n);

}  // namespace tps
