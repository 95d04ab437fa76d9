#include "core/trial_run.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace tps {

TrialRun run_in_child(const std::function<bool()>& check) {
  std::fflush(nullptr);  // else the child's copy of unwritten output could be written twice
  const pid_t pid = fork();
  if (pid < 0) return {check() ? TrialOutcome::kTrue : TrialOutcome::kFalse};
  if (pid == 0) {
    const rlimit no_core{0, 0};  // a fault here is an answer, not a core file to leave behind
    setrlimit(RLIMIT_CORE, &no_core);
    int code = 2;
    try {
      code = check() ? 0 : 1;
    } catch (...) {
    }
    _exit(code);  // no atexit handlers or stream flushes of the parent's state
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return {TrialOutcome::kCrashed};
  if (WIFSIGNALED(status)) return {TrialOutcome::kCrashed, WTERMSIG(status)};
  if (WIFEXITED(status) && WEXITSTATUS(status) <= 1)
    return {WEXITSTATUS(status) == 0 ? TrialOutcome::kTrue : TrialOutcome::kFalse};
  return {TrialOutcome::kCrashed};
}

}  // namespace tps
