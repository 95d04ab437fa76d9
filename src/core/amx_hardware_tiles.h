#pragma once
// The AMX tile instructions the kernels and the probe use, on the hardware: the
// interface of EmulatedTiles (kernels/amx_tiles.h). Only for code that runs where the
// CPU has AMX and Linux granted the tile state (request_amx_tile_state).
//
// Plain inline asm instead of GCC 12's intrinsics: those paste tile numbers into the
// text, and their tileloadd names no memory it reads, so the optimizer may drop or
// sink the stores that fill a tile's source (the same flaw as their ldtilecfg, which
// left tiles unconfigured: amx_tiles.h). Here every load and store clobbers memory,
// and tile numbers are immediates ("i", printed bare by %c).
#include <cstddef>

#include "core/amx_tiles.h"

namespace tps {

struct HardwareTiles {
  static void configure(const TileConfig& c) { load_tile_config(c); }
  static void release() { asm volatile("tilerelease" ::: "memory"); }
  template <int D>
  static void zero() {
    asm volatile("tilezero %%tmm%c0" : : "i"(D));
  }
  template <int D>
  static void load(const void* p, size_t stride) {
    asm volatile("tileloadd (%0,%1,1), %%tmm%c2" : : "r"(p), "r"(stride), "i"(D) : "memory");
  }
  template <int D>
  static void store(void* p, size_t stride) {
    asm volatile("tilestored %%tmm%c2, (%0,%1,1)" : : "r"(p), "r"(stride), "i"(D) : "memory");
  }
  template <int C, int A, int B>
  static void dot_signed() {
    asm volatile("tdpbssd %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(C), "i"(A), "i"(B));
  }
  template <int C, int A, int B>
  static void dot_bf16() {
    asm volatile("tdpbf16ps %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(C), "i"(A), "i"(B));
  }
};

}  // namespace tps
