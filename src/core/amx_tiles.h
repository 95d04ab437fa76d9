#pragma once
// What every user of AMX tiles needs first: Linux's grant of the tile state, the tile
// configuration ldtilecfg reads, and a way to load it that no optimizer can break (the
// probe's loops and the kernels alike).
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

// ldtilecfg of all 64 bytes of c. GCC 12's _tile_loadconfig(p) tells the optimizer that
// the instruction reads one pointer's worth of *p, so it dropped the stores of rows[]
// and colsb[] as dead: every tile stayed unconfigured and the first tileloadd raised
// #UD (SIGILL) on Sapphire Rapids. Here the asm's memory operand is the whole struct.
// Callers also pass configurations built as constants (tile_config below), so there
// are no stores to lose. Plain inline asm: the assembler takes it without AMX flags.
inline void load_tile_config(const TileConfig& c) {
#if defined(__x86_64__)
  asm volatile("ldtilecfg %0" : : "m"(c));
#else
  (void)c;
#endif
}

// Palette 1 with `n` tiles of the given rows and bytes per row (tiles 0..n-1 in order;
// rows 0 leaves a tile unconfigured), as a constant expression.
struct TileShape {
  uint8_t rows;
  uint16_t colsb;
};
template <size_t N>
constexpr TileConfig tile_config(const TileShape (&tiles)[N]) {
  static_assert(N <= 8, "palette 1 has 8 tiles");
  TileConfig c;
  c.palette_id = 1;
  for (size_t t = 0; t < N; ++t) {
    c.rows[t] = tiles[t].rows;
    c.colsb[t] = tiles[t].colsb;
  }
  return c;
}

}  // namespace tps
