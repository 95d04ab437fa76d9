#pragma once
// A check run in a forked child process, so that an instruction the CPU faults on ends
// the child instead of this process: the AMX kernels' start-up checks run their tiles
// on hardware they were written without, where a wrong tile shape raises #UD (SIGILL).
#include <functional>

namespace tps {

enum class TrialOutcome { kTrue, kFalse, kCrashed };

struct TrialRun {
  TrialOutcome outcome;
  int signal = 0;  // what ended the child, where it crashed by a signal
};

// check() in a child process: its answer, or kCrashed where a signal ended it or it
// threw. Where the process cannot fork, check() runs here.
TrialRun run_in_child(const std::function<bool()>& check);

}  // namespace tps
