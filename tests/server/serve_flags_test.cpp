// `tps serve`'s flags: every number is range-checked before anything loads, with one
// line that names the flag and what it accepts, and exit status 2.
#include <gtest/gtest.h>

#include "serve_helpers.h"

namespace tps::testing {
namespace {

CommandResult serve_with(const std::string& model, const std::string& flags) {
  return run_command(std::string(TPS_BINARY) + " serve -m " + model + " " + flags + " 2>&1 >/dev/null");
}

TEST(ServeFlags, OutOfRangeNumbersAreOneLineErrorsNamingTheFlagAndItsRange) {
  REQUIRE_MODEL(model, kStories);
  struct Case {
    const char* flags;
    const char* flag;   // named in the message
    const char* range;  // named in the message: "LO to HI"
  };
  const Case cases[] = {
      {"--port 70000", "--port", "0 to 65535"},
      {"--port -1", "--port", "0 to 65535"},
      {"--threads 0", "--threads", "1 to 4096"},
      {"--ctx-size -5", "--ctx-size", "2 to "},
      {"--ctx-size 1", "--ctx-size", "2 to "},
      {"--kv-blocks 0", "--kv-blocks", "2 to "},
      {"--max-seqs 0", "--max-seqs", "1 to 4096"},
      {"--block-size 0", "--block-size", "1 to 4096"},
      {"--batch-tokens 0", "--batch-tokens", "1 to "},
      {"--max-queue 0", "--max-queue", "1 to "},
      {"--request-timeout -1", "--request-timeout", "0 to "},
      {"--max-body 0", "--max-body", "64 to "},
      {"--draft-max 0", "--draft-max", "1 to 64"},
      {"--draft-p-min 2", "--draft-p-min", "0 to 1"},
      {"--tp 0", "--tp", "1 to 4096"},
      {"--shutdown-timeout -1", "--shutdown-timeout", "0 to 86400"},
      {"--max-connections 0", "--max-connections", "1 to 65536"},
      {"--read-timeout 0", "--read-timeout", "0.1 to 3600"},
      {"--idle-timeout 0", "--idle-timeout", "0.1 to 3600"},
      {"--port abc", "--port", "0 to 65535"},
  };
  for (const auto& c : cases) {
    const CommandResult r = serve_with(model, c.flags);
    EXPECT_EQ(r.status, 2) << c.flags << ": " << r.output;
    EXPECT_EQ(r.output.rfind("tps: error: ", 0), 0u) << c.flags << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << c.flags << ": " << r.output;
    EXPECT_NE(r.output.find(c.flag), std::string::npos) << c.flags << ": " << r.output;
    EXPECT_NE(r.output.find(c.range), std::string::npos) << c.flags << ": " << r.output;
  }
  // A cross-check between two flags is one line too.
  const CommandResult r = serve_with(model, "--max-seqs 8 --batch-tokens 4");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output, "tps: error: --batch-tokens must be at least --max-seqs (8)\n");
}

TEST(ServeFlags, HelpSaysWhatZeroMeans) {
  REQUIRE_MODEL(model, kStories);
  const CommandResult r = run_command(std::string(TPS_BINARY) + " serve --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("0: any free port"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("0: no limit"), std::string::npos) << r.output;
}

// --request-timeout 0 is no limit, not a limit of 0 s that would time every request out.
TEST(ServeFlags, RequestTimeoutZeroMeansNoLimit) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--request-timeout", "0"}), "");
  const Reply plain = post(*server.client(), "/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 8}});
  EXPECT_EQ(plain.status, 200) << plain.raw;
  const StreamResult stream = post_stream(*server.client(), "/v1/completions",
                                          json{{"prompt", "Once"}, {"max_tokens", 8}, {"stream", true}});
  EXPECT_EQ(stream.status, 200);
  EXPECT_TRUE(stream.done);
  ASSERT_FALSE(stream.chunks.empty());
  EXPECT_EQ(stream.chunks.back()["choices"][0]["finish_reason"], "length");
}

}  // namespace
}  // namespace tps::testing
