// The AMX kernels: integer weights of many tokens through int8 tiles (tdpbssd), float
// weights in bf16 through tdpbf16ps, the rest on AVX-512, over the hardware's tile
// instructions. Compiled with AMX flags; only called when the CPU has AMX and Linux has
// granted this process the tile state (isa.cpp).
#include "kernels/matmul_avx512_headers.h"

#include <utility>

#include "core/amx_hardware_tiles.h"

namespace tps {

namespace {

#include "kernels/amx_loaded_tiles.inc"
#include "kernels/matmul_avx512_panels.inc"
#include "kernels/bf16_column_pair.inc"
#include "kernels/matmul_amx_bf16.inc"
#include "kernels/matmul_amx_int8.inc"
#include "kernels/matmul_amx_kernels.inc"

}  // namespace

const IsaKernels* isa_kernels_amx() { return amx_kernels<HardwareTiles>(); }

}  // namespace tps
