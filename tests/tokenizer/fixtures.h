#pragma once
// Locates the shared fixtures and reads llama.cpp's tokenizer conformance vectors.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tps::test {

inline std::filesystem::path fixtures_dir() {
  if (const char* env = std::getenv("TPS_FIXTURES")) return env;
  return std::filesystem::path(TPS_SOURCE_DIR) / ".." / "shared" / "fixtures";
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// .inp: every test string is followed by "\n__ggml_vocab_test__\n" (so an empty
// string is just the separator). .out: one line of space-separated ids per string.
struct ConformanceCase {
  std::string text;
  std::vector<int32_t> ids;
};

inline std::vector<ConformanceCase> read_conformance(const std::filesystem::path& gguf) {
  const std::string inp = read_file(gguf.string() + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<ConformanceCase> cases;
  for (size_t pos = 0;;) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) break;
    cases.push_back({inp.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::ifstream out(gguf.string() + ".out");
  std::string line;
  for (size_t i = 0; std::getline(out, line); ++i) {
    if (i >= cases.size()) {
      cases.push_back({});  // more lines than strings: the caller's size check fails
      continue;
    }
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) cases[i].ids.push_back(id);
  }
  return cases;
}

}  // namespace tps::test
