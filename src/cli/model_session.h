#pragma once
// A command's model: whole, or split over the ranks of `mpirun -np N tps <cmd> --tp N`
// (docs/tensor-parallel.md). Rank 0, the leader, runs the command; every other rank
// loads its slice and replays the leader's steps until the leader is done.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "model/model.h"

namespace tps::cli {

// Adds --tp to a command.
void add_tensor_parallel_option(CLI::App& sub, int& tp);

// Thrown on the ranks that stay silent about an error the leader reports: main() exits
// with `code` and prints nothing.
struct QuietExit {
  int code;
};

class ModelSession {
 public:
  // Loads `path` whole (tp <= 1; a failure throws tps::Error), or this rank's slice of it
  // after starting MPI. Every rank checks the group and the load together: on a failure
  // the leader prints one line, and every rank throws QuietExit{2} once it is out.
  ModelSession(const std::string& path, int tp) : ModelSession(tp) { load(path); }
  // In two steps, for a command that acts between them (a server that listens while its
  // model loads): starts MPI and checks the group (tp > 1), then loads.
  explicit ModelSession(int tp);
  void load(const std::string& path);
  ~ModelSession();  // the leader releases the other ranks
  ModelSession(const ModelSession&) = delete;
  ModelSession& operator=(const ModelSession&) = delete;

  Model& model() { return *model_; }
  // True on every rank but the leader: the command calls follow() and returns its code.
  bool follower() const { return group_ != nullptr && !group_->leader(); }
  int follow();

 private:
  // Every rank: the leader prints `leader_error`, a follower its `own_error` if any; then
  // all throw QuietExit{2} together.
  [[noreturn]] void end_group(const std::string& leader_error, const std::string& own_error);

  std::unique_ptr<TensorParallelGroup> group_;
  std::unique_ptr<Model> model_;
};

}  // namespace tps::cli
