#include "core/trial_run.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>

#include <fmt/format.h>

namespace tps {

namespace {

// The child: faults end it as the CPU raised them (whatever handlers the parent set),
// leave no core file, and its answer goes down the pipe as one byte.
[[noreturn]] void run_child(const std::function<bool()>& check, int answer_fd) {
  for (int sig : {SIGILL, SIGSEGV, SIGBUS, SIGFPE}) {
    std::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
  }
  prctl(PR_SET_DUMPABLE, 0);  // a fault here is an answer, not a crash for coredump handlers
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  char answer = 'x';  // 'x': it threw
  try {
    answer = check() ? 't' : 'f';
  } catch (...) {
  }
  if (answer != 'x') (void)!write(answer_fd, &answer, 1);
  _exit(0);  // no atexit handlers or stream flushes of the parent's state
}

// Where the process cannot fork: the check here, a throw counted as a crash.
TrialRun run_here(const std::function<bool()>& check) {
  try {
    return {check() ? TrialOutcome::kTrue : TrialOutcome::kFalse};
  } catch (...) {
    return {TrialOutcome::kCrashed};
  }
}

}  // namespace

TrialRun run_in_child(const std::function<bool()>& check, int timeout_ms) {
  int fds[2];
  if (pipe(fds) != 0) return run_here(check);
  std::fflush(nullptr);  // else the child's copy of unwritten output could be written twice
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return run_here(check);
  }
  if (pid == 0) {
    close(fds[0]);
    run_child(check, fds[1]);
  }
  close(fds[1]);
  // The answer comes down the pipe (waitpid alone loses it where SIGCHLD is ignored or
  // another handler reaps children); a child that hangs is killed at the deadline.
  char answer = 0;
  pollfd p{fds[0], POLLIN, 0};
  int ready;
  while ((ready = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  bool answered = false;
  const bool timed_out = ready == 0;
  if (ready > 0) {
    ssize_t n;
    while ((n = read(fds[0], &answer, 1)) < 0 && errno == EINTR) {
    }
    answered = n == 1;
  } else {
    kill(pid, SIGKILL);
  }
  close(fds[0]);
  int status = 0;
  pid_t reaped;
  while ((reaped = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (answered) return {answer == 't' ? TrialOutcome::kTrue : TrialOutcome::kFalse};
  if (reaped == pid && WIFSIGNALED(status)) return {TrialOutcome::kCrashed, WTERMSIG(status), timed_out};
  return {TrialOutcome::kCrashed, 0, timed_out};
}

std::string trial_failure(const TrialRun& run, std::string_view if_false) {
  if (run.outcome == TrialOutcome::kFalse) return std::string(if_false);
  if (run.timed_out) return "hung in a trial run";
  if (run.signal != 0) return fmt::format("crashed in a trial run (signal {})", run.signal);
  return "threw in a trial run";
}

}  // namespace tps
