// kernels/matmul_avx2_impl.inc compiled for AVX2 alone.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/matmul_kernels.h"
#include "quant/quantize.h"

namespace tps {

namespace {
constexpr bool kAvxVnni = false;
#include "kernels/matmul_avx2_impl.inc"
}  // namespace

const IsaKernels* isa_kernels_avx2() { return &kKernels; }

}  // namespace tps
