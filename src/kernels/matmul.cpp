// TEMPORARY (model branch): F32-only matmul until the kernels room lands; replaced on merge.
#include "kernels/matmul.h"

#include "core/error.h"

namespace tps {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAmx: return "amx";
  }
  return "?";
}
Isa active_isa() { return Isa::kScalar; }
bool cpu_supports(Isa isa) { return isa == Isa::kScalar; }
void set_active_isa(Isa) {}

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (w.type != GgmlType::kF32) fail("temporary matmul: f32 only");
  pool.parallel_for(w.rows, 16, [&](int64_t b, int64_t e, int) {
    for (int64_t t = 0; t < n_tokens; ++t)
      for (int64_t r = b; r < e; ++r) {
        const float* row = reinterpret_cast<const float*>(w.data + r * w.row_bytes);
        const float* xt = x + t * w.cols;
        float s = 0;
        for (int64_t c = 0; c < w.cols; ++c) s += row[c] * xt[c];
        y[t * w.rows + r] = s;
      }
  });
}

void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  ThreadPool pool(1);
  matmul(w, x, n_tokens, y, pool);
}

}  // namespace tps
