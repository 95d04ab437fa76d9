// The AMX integer panel kernel: the AVX-512 one-panel tile with each block's dots for
// all its tokens from one tdpbsud (TileDot over the hardware's tile
// instructions). Compiled with AMX flags; only called when the CPU has AMX and Linux
// has granted this process the tile state (isa.cpp).
#include "kernels/matmul_avx512_headers.h"

namespace tps {

namespace {

// The tile instructions take tile numbers as immediates (GCC's intrinsics paste them
// into the assembly text), so each number the kernel uses is spelled out.
struct HardwareTiles {
  static void configure(const TileConfig& c) { load_tile_config(c); }
  static void release() { _tile_release(); }
  template <int D>
  static void zero() {
    static_assert(D == 0, "the kernel zeroes C tile 0");
    _tile_zero(0);
  }
  template <int D>
  static void load(const void* p, size_t stride) {
    static_assert(D == 2 || D == 4, "the kernel loads A tile 2 and B tile 4");
    if constexpr (D == 2) _tile_loadd(2, p, stride);
    else _tile_loadd(4, p, stride);
  }
  template <int D>
  static void store(void* p, size_t stride) {
    static_assert(D == 0, "the kernel stores C tile 0");
    _tile_stored(0, p, stride);
  }
  template <int C, int A, int B>
  static void dot_signed_unsigned() {
    static_assert(C == 0 && A == 2 && B == 4, "the kernel's product is 0 += 2 x 4");
    _tile_dpbsud(0, 2, 4);
  }
};

#include "kernels/matmul_avx512_panels.inc"

}  // namespace

const IsaKernels* isa_kernels_amx() { return avx512_kernels_with<tile_panels<HardwareTiles>>(); }

}  // namespace tps
