// kernels/ops_impl.inc compiled for AVX512.
// GCC 12's _mm512_cvtph_ps starts from a self-initialized "undefined" vector, which
// -Wmaybe-uninitialized reports once inlined: a spurious warning.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/ops_kernels.h"
#include "kernels/unmerged.h"
#include "quant/quantize.h"

namespace tps {
namespace ops_avx512 {
#include "kernels/ops_impl.inc"
}  // namespace ops_avx512

const OpsKernels& ops_kernels_avx512() {
  static constexpr OpsKernels k{ops_avx512::axpy, ops_avx512::rmsnorm,
                                ops_avx512::silu_mul, ops_avx512::rope, ops_avx512::to_f16,
                                ops_avx512::attend};
  return k;
}

}  // namespace tps
