// The AMX integer panel kernel of matmul_amx.cpp over the software model of the tile
// instructions (amx_tiles.h) instead of the hardware: the same kernel code, runnable on
// any AVX-512 machine, so tests check it bit for bit against the AVX-512 kernels where
// no AMX is at hand. Slow; for tests only.
#pragma GCC diagnostic ignored "-Wuninitialized"  // as in matmul_avx512.cpp
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/amx_tiles.h"
#include "kernels/matmul_kernels.h"

namespace tps {

namespace {

#include "kernels/matmul_avx512_panels.inc"

void panel(const uint8_t* p, const PanelLayout& layout, const Q8Activations& a, int64_t t0, int64_t t1, float* y,
           int64_t rows, int64_t r0) {
  panel_for<TileDot<EmulatedTiles>>(p, layout, a, t0, t1, y, rows, r0);
}

}  // namespace

const IsaKernels* isa_kernels_amx_emulated() {
  static const IsaKernels kernels = [] {
    IsaKernels k = *isa_kernels_avx512();
    k.panel = panel;
    return k;
  }();
  return &kernels;
}

}  // namespace tps
