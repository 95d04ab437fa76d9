#include <immintrin.h>

#include <cstring>

#include "core/amx_tiles.h"
#include "roofline/probe_kernels.h"

namespace tps {

namespace {

// Tiles 0-3 accumulate, 4-5 hold A rows, 6-7 hold B: four independent products per round.
constexpr TileShape kFull{16, 64};
constexpr TileConfig kAllTiles = tile_config({kFull, kFull, kFull, kFull, kFull, kFull, kFull, kFull});

template <bool kBf16>
double amx_loop(int64_t iterations) {
  load_tile_config(kAllTiles);
  alignas(64) uint8_t operand[16 * 64];
  std::memset(operand, kBf16 ? 0x3c : 1, sizeof operand);  // bf16 0x3c3c ~ 0.0115
  alignas(64) int32_t out[16 * 16];
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (int64_t i = 0; i < iterations; ++i) {
    if constexpr (kBf16) {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    } else {
      _tile_dpbssd(0, 4, 6);
      _tile_dpbssd(1, 4, 7);
      _tile_dpbssd(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    }
  }
  _tile_stored(0, out, 64);
  _tile_release();
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
