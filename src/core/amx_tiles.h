#pragma once
// What every user of AMX tiles needs first: Linux's grant of the tile state, and the
// tile configuration ldtilecfg reads (the probe's loops and the kernels alike).
#include <cstdint>

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tps {

// Linux hands out the 8 KiB AMX tile state only to processes that ask for it (arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); without it the first tile instruction
// faults. The grant is for the whole process; asking again is harmless.
inline bool request_amx_tile_state() {
#if defined(__x86_64__) && defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

// The 64-byte operand of ldtilecfg, palette 1: per tile (8 of 16 used) its rows and
// its bytes per row; a tile with 0 rows is unconfigured.
struct alignas(64) TileConfig {
  uint8_t palette_id = 0;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

}  // namespace tps
