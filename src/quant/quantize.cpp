#include "quant/quantize.h"

#include <cstring>

#include "core/error.h"
#include "quant/codecs.h"

namespace tps {

bool is_supported_weight_type(GgmlType t) {
  for (GgmlType w : kWeightTypes)
    if (w == t) return true;
  return false;
}

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case GgmlType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case GgmlType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
      return;
    }
    case GgmlType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
      return;
    }
    case GgmlType::kQ4_0: dequantize_row_q4_0(src, dst, n); return;
    case GgmlType::kQ4_1: dequantize_row_q4_1(src, dst, n); return;
    case GgmlType::kQ5_0: dequantize_row_q5_0(src, dst, n); return;
    case GgmlType::kQ5_1: dequantize_row_q5_1(src, dst, n); return;
    case GgmlType::kQ8_0: dequantize_row_q8_0(src, dst, n); return;
    case GgmlType::kQ2_K: dequantize_row_q2_k(src, dst, n); return;
    case GgmlType::kQ3_K: dequantize_row_q3_k(src, dst, n); return;
    case GgmlType::kQ4_K: dequantize_row_q4_k(src, dst, n); return;
    case GgmlType::kQ5_K: dequantize_row_q5_k(src, dst, n); return;
    case GgmlType::kQ6_K: dequantize_row_q6_k(src, dst, n); return;
    case GgmlType::kIQ4_NL: dequantize_row_iq4_nl(src, dst, n); return;
    case GgmlType::kIQ4_XS: dequantize_row_iq4_xs(src, dst, n); return;
    default: fail("cannot dequantize tensor type {}", type_name(t));
  }
}

void quantize_row(GgmlType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case GgmlType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case GgmlType::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]);
      return;
    }
    case GgmlType::kBF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
      return;
    }
    case GgmlType::kQ4_0: quantize_row_q4_0(src, dst, n); return;
    case GgmlType::kQ4_1: quantize_row_q4_1(src, dst, n); return;
    case GgmlType::kQ5_0: quantize_row_q5_0(src, dst, n); return;
    case GgmlType::kQ5_1: quantize_row_q5_1(src, dst, n); return;
    case GgmlType::kQ8_0: quantize_row_q8_0(src, dst, n); return;
    case GgmlType::kQ2_K: quantize_row_q2_k(src, dst, n); return;
    case GgmlType::kQ3_K: quantize_row_q3_k(src, dst, n); return;
    case GgmlType::kQ4_K: quantize_row_q4_k(src, dst, n); return;
    case GgmlType::kQ5_K: quantize_row_q5_k(src, dst, n); return;
    case GgmlType::kQ6_K: quantize_row_q6_k(src, dst, n); return;
    case GgmlType::kIQ4_NL: quantize_row_iq4_nl(src, dst, n); return;
    case GgmlType::kIQ4_XS: quantize_row_iq4_xs(src, dst, n); return;
    default: fail("cannot quantize to tensor type {}", type_name(t));
  }
}

}  // namespace tps
