// Checks run in a child process: answers come back, and a fault or a throw in the
// child is reported without ending the test process.
#include "core/trial_run.h"

#include <gtest/gtest.h>

#include <csignal>
#include <stdexcept>

namespace tps {
namespace {

TEST(TrialRun, BringsBackTheChildsAnswer) {
  EXPECT_EQ(run_in_child([] { return true; }).outcome, TrialOutcome::kTrue);
  EXPECT_EQ(run_in_child([] { return false; }).outcome, TrialOutcome::kFalse);
}

// ud2, the #UD an unconfigured AMX tile raises, is SIGILL: the child ends, this
// process goes on.
TEST(TrialRun, ReportsAnIllegalInstructionInTheChild) {
  const TrialRun run = run_in_child([]() -> bool { __builtin_trap(); });
  EXPECT_EQ(run.outcome, TrialOutcome::kCrashed);
  EXPECT_EQ(run.signal, SIGILL);
}

TEST(TrialRun, ReportsAThrowInTheChildAsACrash) {
  const TrialRun run = run_in_child([]() -> bool { throw std::runtime_error("model fault"); });
  EXPECT_EQ(run.outcome, TrialOutcome::kCrashed);
  EXPECT_EQ(run.signal, 0);
}

}  // namespace
}  // namespace tps
