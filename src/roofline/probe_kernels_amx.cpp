#include <cstring>

#include "core/amx_hardware_tiles.h"
#include "core/amx_tiles.h"
#include "roofline/probe_kernels.h"

namespace tps {

namespace {

// Tiles 0-3 accumulate, 4-5 hold A rows, 6-7 hold B: four independent products per round.
constexpr TileShape kFull{16, 64};
constexpr TileConfig kAllTiles = tile_config({kFull, kFull, kFull, kFull, kFull, kFull, kFull, kFull});

// Filled through HardwareTiles, whose loads tell the compiler they read the operand
// (GCC 12's _tile_loadd does not: the memset could go, and bf16 garbage with it).
template <bool kBf16>
double amx_loop(int64_t iterations) {
  using T = HardwareTiles;
  T::configure(kAllTiles);
  alignas(64) uint8_t operand[16 * 64];
  std::memset(operand, kBf16 ? 0x3c : 1, sizeof operand);  // bf16 0x3c3c ~ 0.0115
  alignas(64) int32_t out[16 * 16];
  T::zero<0>();
  T::zero<1>();
  T::zero<2>();
  T::zero<3>();
  T::load<4>(operand, 64);
  T::load<5>(operand, 64);
  T::load<6>(operand, 64);
  T::load<7>(operand, 64);
  for (int64_t i = 0; i < iterations; ++i) {
    if constexpr (kBf16) {
      T::dot_bf16<0, 4, 6>();
      T::dot_bf16<1, 4, 7>();
      T::dot_bf16<2, 5, 6>();
      T::dot_bf16<3, 5, 7>();
    } else {
      T::dot_signed<0, 4, 6>();
      T::dot_signed<1, 4, 7>();
      T::dot_signed<2, 5, 6>();
      T::dot_signed<3, 5, 7>();
    }
  }
  T::store<0>(out, 64);
  T::release();
  return static_cast<double>(out[0]);
}

}  // namespace

std::vector<ComputeKernel> compute_kernels_amx() {
  if (!request_amx_tile_state()) return {};
  // One tile product: 16 x 16 outputs, each a dot of 64 int8 (or 32 bf16) pairs.
  return {{"amx_int8", "amx tdpbssd", 4 * 16 * 16 * 64 * 2.0, amx_loop<false>},
          {"amx_bf16", "amx tdpbf16ps", 4 * 16 * 16 * 32 * 2.0, amx_loop<true>}};
}

}  // namespace tps
