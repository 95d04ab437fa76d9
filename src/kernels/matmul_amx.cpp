// The AMX kernels: the AVX-512 one-panel tile with each block's dots for all its
// tokens from one tdpbsud (TileDot), and float weights in bf16 through tdpbf16ps, over
// the hardware's tile instructions. Compiled with AMX flags; only called when the CPU
// has AMX and Linux has granted this process the tile state (isa.cpp).
#include "kernels/matmul_avx512_headers.h"

#include <utility>

#include "core/amx_hardware_tiles.h"

namespace tps {

namespace {

#include "kernels/matmul_avx512_panels.inc"
#include "kernels/bf16_column_pair.inc"
#include "kernels/matmul_amx_bf16.inc"

}  // namespace

const IsaKernels* isa_kernels_amx() { return amx_kernels<HardwareTiles>(); }

}  // namespace tps
