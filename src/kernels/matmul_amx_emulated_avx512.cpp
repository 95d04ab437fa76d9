// The AMX integer panel kernel of matmul_amx.cpp over the software model of the tile
// instructions (amx_tiles.h) instead of the hardware: the same kernel code, runnable on
// any AVX-512 machine, so tests check it bit for bit against the AVX-512 kernels where
// no AMX is at hand. Slow; for tests only.
#include "kernels/matmul_avx512_headers.h"

namespace tps {

namespace {

#include "kernels/matmul_avx512_panels.inc"

}  // namespace

const IsaKernels* isa_kernels_amx_emulated() { return avx512_kernels_with<tile_panels<EmulatedTiles>>(); }

}  // namespace tps
