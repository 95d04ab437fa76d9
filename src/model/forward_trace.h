#pragma once
// Where a forward pass's time goes, phase by phase (`tps bench --breakdown`): wall time
// on the calling thread, the part of it that thread spent waiting for the pool's other
// threads at the ends of parallel regions, and the weight bytes each phase streamed.
#include <array>
#include <cstddef>
#include <initializer_list>

#include "kernels/matmul.h"

namespace tps {

enum class ForwardPhase { kEmbed, kNorm, kQkv, kRopeKv, kAttention, kAttnOut, kFfnUp, kFfnAct, kFfnDown, kOutput,
                          kCollective };  // tensor-parallel sums across ranks
constexpr size_t kForwardPhases = 11;
const char* phase_name(ForwardPhase phase);

struct ForwardTrace {
  std::array<double, kForwardPhases> seconds{};
  std::array<double, kForwardPhases> wait_seconds{};
  std::array<double, kForwardPhases> weight_bytes{};
  double waited = 0;  // the pool's running total of waits (ThreadPool::count_waits)
};

// Adds the wall time between construction and destruction, the pool's waits in between,
// and the bytes a matmul reads from `weights` (packed panels, else rows) to the phase;
// costs a branch when `trace` is null.
class PhaseClock {
 public:
  PhaseClock(ForwardTrace* trace, ForwardPhase phase, std::initializer_list<const WeightMatrix*> weights = {});
  ~PhaseClock();
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;

 private:
  ForwardTrace* trace_;
  size_t phase_;
  double start_ = 0, waited_at_start_ = 0;
};

}  // namespace tps
