#pragma once
// Where the shared fixtures are: $TPS_FIXTURES (set by ctest), else next to the source
// tree. Tests that need them skip when they are absent (a user's clone).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tps::testing {

inline std::string fixtures_dir() {
  if (const char* env = std::getenv("TPS_FIXTURES"); env && std::filesystem::is_directory(env)) return env;
  std::string fallback = TPS_SOURCE_DIR "/../shared/fixtures";
  return std::filesystem::is_directory(fallback) ? fallback : "";
}

inline std::string fixture(const std::string& relative) {
  std::string dir = fixtures_dir();
  if (dir.empty()) return "";
  std::string path = dir + "/" + relative;
  return std::filesystem::exists(path) ? path : "";
}

#define TPS_REQUIRE_FIXTURE(var, relative)                                        \
  const std::string var = ::tps::testing::fixture(relative);                      \
  if (var.empty()) GTEST_SKIP() << "fixture " << (relative) << " is absent (../shared/fixtures)"

// Runs a shell command, returning its exit code and standard output.
struct CommandResult {
  int rc = -1;
  std::string out;
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace tps::testing
