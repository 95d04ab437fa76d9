#pragma once
// The allreduce probe of `mpirun -np N tps probe --allreduce`: how long the group's sum
// takes by message size, the α and β that `tps roofline --tp N` prices each layer's two
// sums with.
#include <vector>

#include "model/tensor_parallel.h"
#include "roofline/probe.h"

namespace tps {

// Every rank calls it together. Times sum() of 4 B to 4 MiB of floats, the median call
// of many per size, each call after the ranks have computed for as long as a sum keeps
// the link busy, as in a forward pass (the leader's figures are the ones returned).
std::vector<AllreduceSample> time_allreduce(TensorParallelGroup& group);

}  // namespace tps
