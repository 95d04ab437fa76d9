// `tps tokenize` run as a process: ids on one line, and one-line errors with exit 2.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>

#include "fixtures.h"
#include "formats/gguf.h"

#include "support/test_files.h"

namespace tps {
namespace {

struct Result {
  int rc;
  std::string out;  // stdout and stderr
};

Result run_tps(const std::string& args) {
  const std::string cmd = std::string(TPS_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  Result r{-1, {}};
  if (!pipe) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

TEST(TokenizeCli, MatchesConformanceLine) {
  const auto path = test::fixtures_dir() / "vocab" / "ggml-vocab-llama-spm.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture absent: " << path;
  const auto cases = test::read_conformance(path);
  const auto& c = cases.at(11);  // "Hello world": plain ASCII, safe to quote
  ASSERT_EQ(c.text.find('\''), std::string::npos);
  std::string expected;
  for (int32_t id : c.ids) {
    if (!expected.empty()) expected += ' ';
    expected += std::to_string(id);
  }
  const auto r = run_tps("tokenize --no-bos -m " + quote(path.string()) + " " + quote(c.text));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out, expected + "\n");
}

TEST(TokenizeCli, FileAndBosAndPieces) {
  const auto path = test::fixtures_dir() / "models" / "stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture absent: " << path;
  const auto text_file = std::filesystem::path(tps::test::temp_path("tokenize_cli.txt"));
  { std::ofstream(text_file) << "Once upon a time"; }
  auto r = run_tps("tokenize -m " + quote(path.string()) + " --file " + quote(text_file.string()));
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "1 403 407 261 378\n");
  r = run_tps("tokenize -m " + quote(path.string()) + " --pieces --no-bos 'Once upon'");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "403\t\xE2\x96\x81Once\n407\t\xE2\x96\x81upon\n");
  r = run_tps("tokenize -m " + quote(path.string()) + " --parse-special --no-bos '<s>'");
  EXPECT_EQ(r.out, "1\n");
  std::filesystem::remove(text_file);
}

TEST(TokenizeCli, BadInputsGiveOneLineErrors) {
  const auto dir = tps::test::temp_dir();
  std::filesystem::create_directories(dir);
  const auto not_gguf = dir / "tps_tokenize_not_gguf.bin";
  { std::ofstream(not_gguf) << "this is not a gguf file at all"; }
  const auto no_vocab = dir / "tps_tokenize_no_vocab.gguf";
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.write(no_vocab.string());
  for (const auto& file : {dir / "tps_no_such_file.gguf", not_gguf, no_vocab}) {
    const auto r = run_tps("tokenize -m " + quote(file.string()) + " hello");
    EXPECT_EQ(r.rc, 2) << file;
    EXPECT_EQ(r.out.rfind("tps: error: ", 0), 0u) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
  const auto missing_text = run_tps("tokenize -m " + quote(no_vocab.string()) + " --file " + quote((dir / "tps_no_such.txt").string()));
  EXPECT_EQ(missing_text.rc, 2);
  EXPECT_EQ(missing_text.out.rfind("tps: error: ", 0), 0u) << missing_text.out;
  std::filesystem::remove(not_gguf);
  std::filesystem::remove(no_vocab);
}

}  // namespace
}  // namespace tps
