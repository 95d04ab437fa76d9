// kernels/matmul_avx2_impl.inc compiled for AVX2 with AVX-VNNI.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/matmul_kernels.h"
#include "quant/quantize.h"

namespace tps {

namespace {
constexpr bool kAvxVnni = true;
#include "kernels/matmul_avx2_impl.inc"
}  // namespace

const IsaKernels* isa_kernels_avx_vnni() { return &kKernels; }

}  // namespace tps
