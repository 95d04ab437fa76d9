#pragma once
// A software model of the AMX tile instructions the kernels use. The model lets the AMX kernels (matmul_avx512_panels.inc over
// HardwareTiles, matmul_amx.cpp) be checked bit for bit on any AVX-512 machine
// (matmul_amx_emulated_avx512.cpp), and it faults where the hardware faults (#UD on a
// tile shape the configuration does not allow), so a wrong shape fails a test here
// instead of crashing there.
#include <cstddef>
#include <cstdint>

#include "core/amx_tiles.h"

namespace tps {

// The tile instructions, on a per-thread model of the 8 tiles of 16 rows x 64 bytes.
// Tile numbers are template arguments, as the hardware's are immediates.
struct EmulatedTiles {
  static void configure(const TileConfig& c);
  static void release();
  // How many configurations this thread has loaded (for tests of how often kernels do).
  static int64_t configurations();
  template <int D>
  static void zero() { zero_tile(D); }
  template <int D>
  static void load(const void* p, size_t stride) { load_tile(D, p, stride); }
  template <int D>
  static void store(void* p, size_t stride) { store_tile(D, p, stride); }
  // tdpbssd: C[m][n] += sum over k of A[m][k] * B[k / 4][4 n + k % 4], signed bytes
  // both, into int32.
  template <int C, int A, int B>
  static void dot_signed() { dot_ss(C, A, B); }
  // tdpbf16ps, as the SDM's pseudocode has it: per C[m][n] (f32), one sum from 0 of the
  // even products A[m][2k] B[k][2n] and one of the odd ones A[m][2k + 1] B[k][2n + 1]
  // (bf16 pairs), over k in order, each product added on its own; then C += even +
  // odd. Every add rounds to nearest even; bf16 subnormal inputs count as 0 and
  // subnormal sums become 0.
  template <int C, int A, int B>
  static void dot_bf16() { dot_bf16_pairs(C, A, B); }

 private:
  static void zero_tile(int t);
  static void load_tile(int t, const void* p, size_t stride);
  static void store_tile(int t, void* p, size_t stride);
  static void dot_ss(int c, int a, int b);
  static void dot_bf16_pairs(int c, int a, int b);
};

}  // namespace tps
