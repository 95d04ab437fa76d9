// The AMX integer panel kernel: the AVX-512 panel tile with each block's dots for all
// its tokens from one tdpbsud per token group (TileDot over the hardware's tile
// instructions). Compiled with AMX flags; only called when the CPU has AMX and Linux
// has granted this process the tile state (isa.cpp).
#include "kernels/matmul_avx512_headers.h"

namespace tps {

namespace {

// The tile instructions take tile numbers as immediates (GCC's intrinsics paste them
// into the assembly text), so each number the kernel uses is spelled out.
struct HardwareTiles {
  static void configure(const TileConfig& c) { _tile_loadconfig(&c); }
  static void release() { _tile_release(); }
  template <int D>
  static void zero() {
    static_assert(D == 0 || D == 1, "the kernel zeroes C tiles 0 and 1");
    if constexpr (D == 0) _tile_zero(0);
    else _tile_zero(1);
  }
  template <int D>
  static void load(const void* p, size_t stride) {
    static_assert(D >= 2 && D <= 4, "the kernel loads A tiles 2, 3 and B tile 4");
    if constexpr (D == 2) _tile_loadd(2, p, stride);
    else if constexpr (D == 3) _tile_loadd(3, p, stride);
    else _tile_loadd(4, p, stride);
  }
  template <int D>
  static void store(void* p, size_t stride) {
    static_assert(D == 0 || D == 1, "the kernel stores C tiles 0 and 1");
    if constexpr (D == 0) _tile_stored(0, p, stride);
    else _tile_stored(1, p, stride);
  }
  template <int C, int A, int B>
  static void dot_signed_unsigned() {
    static_assert(B == 4 && ((C == 0 && A == 2) || (C == 1 && A == 3)), "the kernel's products are 0+=2x4, 1+=3x4");
    if constexpr (C == 0) _tile_dpbsud(0, 2, 4);
    else _tile_dpbsud(1, 3, 4);
  }
};

#include "kernels/matmul_avx512_panels.inc"

}  // namespace

const IsaKernels* isa_kernels_amx() { return tile_kernels<HardwareTiles>(); }

}  // namespace tps
