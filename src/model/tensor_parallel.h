#pragma once
// The ranks one model is split over (tensor parallelism, Megatron-style). Each rank holds
// a slice of every layer's heads and FFN rows and of the vocabulary (model_shard.h); the
// forward pass sums the ranks' partial outputs twice per layer and gathers the logits on
// rank 0, the leader, which also sends every rank each step (engine/shard_steps.h).
// The MPI implementation is parallel/mpi_group.h.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tps {

class TensorParallelGroup {
 public:
  virtual ~TensorParallelGroup() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  bool leader() const { return rank() == 0; }

  // Elementwise sum of `data` over all ranks, left in `data` on every rank.
  virtual void sum(float* data, size_t n) = 0;
  // Rank r's `part` (counts[r] floats) placed in rank order into `all` on the leader;
  // `all` is unused on the other ranks.
  virtual void gather(const float* part, std::span<const int> counts, float* all) = 0;
  // The leader's `bytes` to every rank (resized to fit on the others).
  virtual void broadcast(std::vector<uint8_t>& bytes) = 0;
  // Whether any rank passed true: how the ranks agree that one of them failed.
  virtual bool any(bool mine) = 0;

  // Wall seconds spent in sum, gather and broadcast since the start: what `tps bench`
  // reports as the time in collectives.
  double collective_seconds() const { return collective_seconds_; }

 protected:
  double collective_seconds_ = 0;
};

}  // namespace tps
