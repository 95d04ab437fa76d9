#include "cli/model_session.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>

#include <fmt/format.h>

#include "cli/command.h"
#include "core/error.h"
#include "engine/shard_steps.h"
#include "parallel/mpi_group.h"

namespace tps::cli {

void add_tensor_parallel_option(CLI::App& sub, int& tp) {
  sub.add_option("--tp", tp, "split the model over this many ranks: run under mpirun -np N with --tp N")
      ->check(in_range(1, 4096));
}

namespace {

// mpirun ends a job one of whose ranks died by sending SIGTERM to the others, and its own
// message names only the dead rank's pid: the leader says what happened to the run.
// (tps serve blocks SIGTERM for its drain, so there this never runs.)
extern "C" void leader_stopped(int) {
  static const char kMessage[] =
      "tps: error: the tensor-parallel group was stopped: a rank died (or mpirun was interrupted); "
      "the run is incomplete\n";
  if (::write(STDERR_FILENO, kMessage, sizeof kMessage - 1) < 0) {
    // Nothing left to tell it to.
  }
  _exit(1);
}

}  // namespace

ModelSession::ModelSession(int tp) {
  if (tp <= 1) return;
  group_ = start_mpi_group();
  if (group_->leader()) std::signal(SIGTERM, leader_stopped);
  if (group_->ranks() != tp)
    end_group(fmt::format("--tp {} needs {} ranks, and this run has {}: start it as mpirun -np {} tps ... --tp {}", tp,
                          tp, group_->ranks(), tp, tp),
              "");
}

void ModelSession::end_group(const std::string& leader_error, const std::string& own_error) {
  if (group_->leader()) std::fprintf(stderr, "tps: error: %s\n", leader_error.c_str());
  else if (!own_error.empty()) std::fprintf(stderr, "tps: rank %d: error: %s\n", group_->rank(), own_error.c_str());
  // No rank leaves before the lines are out: mpirun stops the group at the first
  // non-zero exit, which would cut the leader off before it had said why. The leader
  // has said it, so the SIGTERM that may follow needs no second line.
  std::fflush(stderr);
  if (group_->leader()) std::signal(SIGTERM, SIG_IGN);
  group_->any(false);
  throw QuietExit{2};
}

void ModelSession::load(const std::string& path) {
  if (group_ == nullptr) {
    model_ = Model::load(path);
    return;
  }
  std::string error;
  try {
    model_ = Model::load(path, group_.get());
  } catch (const Error& e) {
    error = e.what();
  }
  if (!group_->any(!error.empty())) return;
  model_.reset();
  // A failure the leader shares (a bad file, a split that does not fit) is reported
  // once, by the leader; one only a follower meets is reported by it.
  const bool leader_failed = group_->any(group_->leader() && !error.empty());
  end_group(leader_failed ? error : "another rank could not load its slice of the model",
            leader_failed ? "" : error);
}

ModelSession::~ModelSession() {
  if (group_ != nullptr && group_->leader() && model_ != nullptr) send_release(*group_);
}

int ModelSession::follow() {
  // mpirun hands a Ctrl-C or SIGTERM to every rank; only the leader acts on it (a
  // server drains its streams) and then releases the others.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  follow_leader(*model_);
  return 0;
}

}  // namespace tps::cli
