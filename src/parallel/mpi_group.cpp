#include "parallel/mpi_group.h"

#include <cstdlib>

#include "core/error.h"
#include "core/timer.h"

#if TPS_HAVE_MPI
#include <mpi.h>
#endif

namespace tps {

#if TPS_HAVE_MPI

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, text, &n);
  fail("{}: {}", what, std::string(text, n));
}

// Adds the wall time of one collective to the group's total.
class CollectiveClock {
 public:
  explicit CollectiveClock(double& total) : total_(total), start_(now_seconds()) {}
  ~CollectiveClock() { total_ += now_seconds() - start_; }

 private:
  double& total_;
  double start_;
};

class MpiGroup final : public TensorParallelGroup {
 public:
  MpiGroup() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
  }
  ~MpiGroup() override { MPI_Finalize(); }
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }

  void sum(float* data, size_t n) override {
    CollectiveClock clock(collective_seconds_);
    check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }

  void gather(const float* part, std::span<const int> counts, float* all) override {
    CollectiveClock clock(collective_seconds_);
    displacements_.assign(counts.size(), 0);
    for (size_t r = 1; r < counts.size(); ++r) displacements_[r] = displacements_[r - 1] + counts[r - 1];
    check(MPI_Gatherv(part, counts[rank_], MPI_FLOAT, all, counts.data(), displacements_.data(), MPI_FLOAT, 0,
                      MPI_COMM_WORLD),
          "MPI_Gatherv");
  }

  void broadcast(std::vector<uint8_t>& bytes) override {
    CollectiveClock clock(collective_seconds_);
    auto n = static_cast<uint64_t>(bytes.size());
    check(MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    bytes.resize(n);
    check(MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }

  bool any(bool mine) override {
    int flag = mine ? 1 : 0;
    check(MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return flag != 0;
  }

 private:
  int rank_ = 0, ranks_ = 1;
  std::vector<int> displacements_;
};

}  // namespace

std::unique_ptr<TensorParallelGroup> start_mpi_group() {
  // A rank waiting on a peer across a network must let the kernel run the network
  // stack: on 2 cores, two busy-polling ranks left veth packets for the scheduler
  // tick (4 ms an allreduce instead of 69 us). The user's setting wins.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  int provided = 0;
  // The engine's step thread, not main, runs the collectives; one thread at a time.
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED) fail("this MPI cannot be called from more than the main thread");
  return std::make_unique<MpiGroup>();
}

#else

std::unique_ptr<TensorParallelGroup> start_mpi_group() {
  fail("--tp needs MPI, and this tps was built without it: install openmpi-bin and libopenmpi-dev and rebuild");
}

#endif

}  // namespace tps
