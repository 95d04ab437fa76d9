#pragma once
// The tensor-parallel group of `mpirun -np N tps ... --tp N`: MPI_COMM_WORLD, one rank
// per process, each with its own thread pool. The collectives are MPI's own (Open MPI
// picks shared memory on one host and TCP across hosts).
#include <memory>

#include "model/tensor_parallel.h"

namespace tps {

// Starts MPI (finalized when the group is destroyed). Throws tps::Error when this tps
// was built without MPI.
std::unique_ptr<TensorParallelGroup> start_mpi_group();

}  // namespace tps
