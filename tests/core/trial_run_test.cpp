// Checks run in a child process: answers come back, and a fault or a throw in the
// child is reported without ending the test process.
#include "core/trial_run.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <stdexcept>

namespace tps {
namespace {

TEST(TrialRun, BringsBackTheChildsAnswer) {
  EXPECT_EQ(run_in_child([] { return true; }).outcome, TrialOutcome::kTrue);
  const TrialRun no = run_in_child([] { return false; });
  EXPECT_EQ(no.outcome, TrialOutcome::kFalse);
  EXPECT_EQ(trial_failure(no, "disagree"), "disagree");
}

// ud2, the #UD an unconfigured AMX tile raises, is SIGILL: the child ends, this
// process goes on.
TEST(TrialRun, ReportsAnIllegalInstructionInTheChild) {
  const TrialRun run = run_in_child([]() -> bool { __builtin_trap(); });
  EXPECT_EQ(run.outcome, TrialOutcome::kCrashed);
  EXPECT_EQ(run.signal, SIGILL);
  EXPECT_EQ(trial_failure(run, "disagree"), "crashed in a trial run (signal 4)");
}

TEST(TrialRun, ReportsAThrowInTheChildAsACrash) {
  const TrialRun run = run_in_child([]() -> bool { throw std::runtime_error("model fault"); });
  EXPECT_EQ(run.outcome, TrialOutcome::kCrashed);
  EXPECT_EQ(run.signal, 0);
  EXPECT_EQ(trial_failure(run, "disagree"), "threw in a trial run");
}

// The parent's own arrangements do not change the answer: with SIGCHLD ignored (the
// kernel then reaps the child itself) the answer still comes back, and a handler the
// parent set for SIGILL does not turn the child's fault into an answer.
TEST(TrialRun, HoldsWhateverTheParentDidWithSignals) {
  auto old_chld = std::signal(SIGCHLD, SIG_IGN);
  EXPECT_EQ(run_in_child([] { return true; }).outcome, TrialOutcome::kTrue);
  std::signal(SIGCHLD, old_chld);
  auto old_ill = std::signal(SIGILL, [](int) { _exit(1); });
  const TrialRun run = run_in_child([]() -> bool { __builtin_trap(); });
  std::signal(SIGILL, old_ill);
  EXPECT_EQ(run.outcome, TrialOutcome::kCrashed);
  EXPECT_EQ(run.signal, SIGILL);
}

TEST(TrialRun, KillsAChildThatDoesNotAnswerInTime) {
  const TrialRun run = run_in_child(
      [] {
        pause();
        return true;
      },
      100);
  EXPECT_EQ(run.outcome, TrialOutcome::kCrashed);
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(run.signal, SIGKILL);
  EXPECT_EQ(trial_failure(run, "disagree"), "hung in a trial run");
}

}  // namespace
}  // namespace tps
