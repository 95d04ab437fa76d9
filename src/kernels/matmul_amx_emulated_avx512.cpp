// The AMX kernels of matmul_amx.cpp over the software model of the tile instructions
// (amx_tiles.h) instead of the hardware: the same kernel code, runnable on any AVX-512
// machine (the bf16 tiles also need AVX512-BF16), so tests check it where no AMX is at
// hand. Slow; for tests only.
#include "kernels/matmul_avx512_headers.h"

#include <utility>

namespace tps {

namespace {

#include "kernels/amx_loaded_tiles.inc"
#include "kernels/matmul_avx512_panels.inc"
#include "kernels/bf16_column_pair.inc"
#include "kernels/matmul_amx_bf16.inc"
#include "kernels/matmul_amx_int8.inc"
#include "kernels/matmul_amx_kernels.inc"

}  // namespace

const IsaKernels* isa_kernels_amx_emulated() { return amx_kernels<EmulatedTiles>(); }

}  // namespace tps
