// TEMPORARY (model branch): F32-only until the quant room lands; replaced on merge.
#include "quant/quantize.h"

#include <cstring>

#include "core/error.h"

namespace tps {

bool is_supported_weight_type(GgmlType t) { return t == GgmlType::kF32; }
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
  if (t != GgmlType::kF32) fail("temporary dequantize: f32 only");
  std::memcpy(dst, src, n * sizeof(float));
}
void quantize_row(GgmlType, const float*, void*, int64_t) { fail("temporary quantize: unsupported"); }

}  // namespace tps
