// The AVX-512 integer panel kernels again, compiled with GFNI: the high nibbles of
// 4-bit codes come from one gf2p8affineqb instead of a shift and a mask, a vector
// instruction fewer per code vector on the pipes vpdpbusd needs (BM_PanelTile on Ice
// Lake, medians of alternating rounds: Q4_0 -1 to +27 %, Q4_K +4 to +19 %). Only
// called when the CPU has GFNI (matmul.cpp's kernels_for).
#include "kernels/matmul_avx512_headers.h"

namespace tps {

namespace {

#include "kernels/matmul_avx512_panels.inc"

}  // namespace

const IsaKernels* isa_kernels_avx512_gfni() { return avx512_kernels_with_panels(); }

}  // namespace tps
