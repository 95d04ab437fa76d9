#pragma once
// A check run in a forked child process, so that an instruction the CPU faults on ends
// the child instead of this process: the AMX kernels' start-up checks run their tiles
// on hardware they were written without, where a wrong tile shape raises #UD (SIGILL).
#include <functional>
#include <string>
#include <string_view>

namespace tps {

enum class TrialOutcome { kTrue, kFalse, kCrashed };

struct TrialRun {
  TrialOutcome outcome;
  int signal = 0;          // what ended the child, where it crashed by a signal
  bool timed_out = false;  // it had not answered in time, and was killed
};

// check() in a child process: its answer, or kCrashed where a signal ended it, it
// threw, or it had not answered after timeout_ms (then it is killed: SIGKILL). Where
// the process cannot fork, check() runs here. Call it while the process has one
// thread: a child forked beside other threads may find a lock held for ever.
TrialRun run_in_child(const std::function<bool()>& check, int timeout_ms = 60'000);

// What went wrong in a run that did not answer true, for a warning: `if_false` where
// the check answered false, else "crashed in a trial run (signal 4)", "hung in a trial
// run" or "threw in a trial run".
std::string trial_failure(const TrialRun& run, std::string_view if_false);

}  // namespace tps
