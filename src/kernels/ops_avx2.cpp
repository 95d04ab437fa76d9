// kernels/ops_impl.inc compiled for AVX2.
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
namespace ops_avx2 {
#include "kernels/ops_impl.inc"
}  // namespace ops_avx2

const OpsKernels& ops_kernels_avx2() {
  static constexpr OpsKernels k{ops_avx2::axpy, ops_avx2::rmsnorm,
                                ops_avx2::silu_mul, ops_avx2::rope, ops_avx2::to_f16,
                                ops_avx2::attend};
  return k;
}

}  // namespace tps
