// Scratch files for tests: one directory per test process, so tests that ctest runs
// in parallel (and concurrent CI runs on one host) never share a file.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tps::test {

inline std::filesystem::path temp_dir() {
  return std::filesystem::temp_directory_path() / ("tps_test_" + std::to_string(::getpid()));
}

// Removes this process's directory at exit.
struct TempDirCleanup {
  ~TempDirCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(temp_dir(), ec);
  }
};
inline TempDirCleanup temp_dir_cleanup;

inline std::string temp_path(const std::string& name) {
  std::filesystem::create_directories(temp_dir());
  return (temp_dir() / name).string();
}

inline std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace tps::test
