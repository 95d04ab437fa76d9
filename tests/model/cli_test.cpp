// tps run, inspect and logits on good and bad input: bad input gives one line
// "tps: error: ..." and exit code 2, never a crash.
#include <gtest/gtest.h>

#include "model_files.h"
#include "test_fixtures.h"

namespace tps {

namespace {

std::string tps(const std::string& args) { return std::string(TPS_BINARY) + " " + args; }

// Runs and captures only stderr.
testing::CommandResult run_stderr(const std::string& args) { return testing::run_command(tps(args) + " 2>&1 >/dev/null"); }

void expect_one_line_error(const std::string& args, const std::string& needle) {
  auto r = run_stderr(args);
  EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
  EXPECT_EQ(r.out.rfind("tps: error: ", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
}

}  // namespace

TEST(Cli, BadModelFilesGiveOneLineErrors) {
  TPS_REQUIRE_FIXTURE(src, "models/stories260K.gguf");
  TPS_REQUIRE_FIXTURE(golden, "golden/llama.cpp/stories260K.p1.json");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"/nonexistent/model.gguf", "/nonexistent/model.gguf"},
      {testing::write_bytes("text.gguf", {'h', 'e', 'l', 'l', 'o', '\n'}), "text.gguf"},
      {testing::write_truncated(src, "truncated.gguf"), "truncated.gguf"},
      {testing::write_edited(src, "arch.gguf", testing::ModelEdit::architecture("rwkv")), "architecture 'rwkv'"},
      {testing::write_unknown_type(src, "type.gguf", "blk.1.ffn_up.weight"), "blk.1.ffn_up.weight"},
      {testing::write_edited(src, "shape.gguf", testing::ModelEdit::reshape("blk.0.ffn_down.weight", {172, 32})),
       "blk.0.ffn_down.weight"},
  };
  for (const auto& [path, needle] : bad) {
    expect_one_line_error("inspect " + path, needle);
    expect_one_line_error("run -m " + path + " -p hi -n 2", needle);
    expect_one_line_error("logits -m " + path + " --golden " + golden, needle);
  }
}

TEST(Cli, RunRefusesAPromptPastTheContext) {
  TPS_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  expect_one_line_error("run -m " + model + " -p '' -n 40 -c 32", "prompt of 1 tokens plus 40 to generate exceeds the context of 32");
}

TEST(Cli, RunReadsThePromptFromAFile) {
  TPS_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  const std::string prompt = testing::write_bytes("prompt.txt", {'O', 'n', 'c', 'e', ' ', 'u', 'p', 'o', 'n'});
  auto r = testing::run_command(tps("run -m " + model + " -f " + prompt + " -n 3 --temp 0 -t 1 2>/dev/null"));
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "Once upon a time,\n");
  expect_one_line_error("run -m " + model + " -f /nonexistent/prompt.txt", "/nonexistent/prompt.txt");
}

TEST(Cli, RunJsonReportsTheSummary) {
  TPS_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  auto r = testing::run_command(tps("run -m " + model + " -p '' -n 5 --temp 0 --json -t 1"));
  ASSERT_EQ(r.rc, 0);
  for (const char* key : {"\"ttft_ms\"", "\"prefill_tokens_per_s\"", "\"decode_tokens_per_s\"", "\"itl_p50_ms\"",
                          "\"generated_tokens\": 5", "\"text\": \"Once upon a time"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
}

TEST(Cli, RunLogitBiasBansATokenAndBadFormsAreOneLineErrors) {
  TPS_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  const std::string run = "run -m " + model + " -p 'Once upon a time' -n 2 --temp 0 -t 1 --no-display-prompt";
  // Greedy ", there"; with ',' (token 432) banned the text must start otherwise.
  EXPECT_EQ(testing::run_command(tps(run + " 2>/dev/null")).out, ", there\n");
  for (const char* ban : {" -l 432-inf", " --logit-bias 432-100", " -l 432-inf --spec ngram"}) {
    auto banned = testing::run_command(tps(run + ban + " 2>/dev/null"));
    EXPECT_EQ(banned.rc, 0) << ban;
    EXPECT_NE(banned.out.rfind(",", 0), 0u) << ban << ": " << banned.out;
  }
  for (const char* bad : {"432", "x+1", "+1", "432+", "432+up", "432+nan", "432+1x"})
    expect_one_line_error(run + " -l '" + bad + "'", "expected TOKEN_ID+BIAS or TOKEN_ID-BIAS");
  expect_one_line_error(run + " -l 512+1", "token 512 is outside the vocabulary of 512");
  for (const char* infinite : {"432+inf", "432+1e39"}) expect_one_line_error(run + " -l " + infinite, "must be finite");
}

TEST(Cli, InspectShowsTheShapeAndTensors) {
  TPS_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  auto r = testing::run_command(tps("inspect " + model));
  ASSERT_EQ(r.rc, 0);
  for (const char* s : {"architecture    llama", "heads           8 (kv 4, head dim 8)", "ffn             172",
                        "blk.4.ffn_down.weight", "parameters"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(Cli, LogitsPassesAndFailsOnItsBounds) {
  TPS_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  TPS_REQUIRE_FIXTURE(golden, "golden/llama.cpp/stories260K.p2.json");
  auto pass = testing::run_command(tps("logits -m " + model + " --golden " + golden + " --json -t 1"));
  EXPECT_EQ(pass.rc, 0) << pass.out;
  EXPECT_NE(pass.out.find("\"pass\": true"), std::string::npos) << pass.out;
  auto fail = testing::run_command(tps("logits -m " + model + " --golden " + golden + " --max-rms-rel 0 -t 1"));
  EXPECT_EQ(fail.rc, 1) << fail.out;
  EXPECT_NE(fail.out.find("FAIL"), std::string::npos) << fail.out;
  expect_one_line_error("logits -m " + model + " --golden " + model, "not a reference logits dump");
}

}  // namespace tps
