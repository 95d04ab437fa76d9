#pragma once
// Whether the AMX int8 tiles beat the AVX-512 kernels on this CPU, and from how many
// tokens: the dispatcher times both once (under TPS_ISA=amx) and sends a matmul to the
// tiles only where they measured faster. The tiles are exact (bit for bit the AVX-512
// kernels), so the choice changes speed, never a result.
#include <cstdint>

#include "kernels/matmul_kernels.h"

namespace tps {

// Token counts the two are timed at: a batch of decoding sequences, and a prefill chunk.
constexpr int64_t kFewTokens = 16, kManyTokens = 128;
// Where only the many-token matmul went faster, the tiles take matmuls from this many
// tokens (between the two timed counts, on a whole number of token groups).
constexpr int64_t kManyTokensFrom = 4 * Q8Activations::kGroup;
// Faster means faster by this much at least, so that noise does not flip the choice.
constexpr double kFasterBy = 1.05;

// AVX-512's time over the tiles' for each count (above 1: the tiles are faster).
struct Int8TileSpeedups {
  double few = 0, many = 0;
};

// Both kernel sets' matmuls of a Q4_0 matrix that stays in L2, on one thread, in
// alternating runs; the best run of each.
Int8TileSpeedups time_int8_tiles(const IsaKernels& tiles);

// The fewest tokens to send to the tiles (IsaKernels::int8_tiles_from): kAmxMinTokens
// where they were faster at both counts, kManyTokensFrom where at the many only, 0 (none)
// where they were not faster at the many.
int64_t int8_tiles_from(const Int8TileSpeedups& s);

}  // namespace tps
