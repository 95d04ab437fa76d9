// The real `tps load` against the real `tps serve`: what the client counted must agree
// with what the server says it did, request by request and in its /metrics counters.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "../server/serve_helpers.h"
#include "loadgen/results_file.h"

namespace tps::testing {
namespace {

constexpr int kRequests = 8;
constexpr int kOutputTokens = 16;
const char* kGenerated = "tps_generated_tokens_total";

int run_tps(const std::string& args, std::string& output) {
  FILE* pipe = popen((std::string(TPS_BINARY) + " " + args + " 2>&1").c_str(), "r");
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  int raw = pclose(pipe);
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

TEST(LoadAgainstServe, EveryRequestSucceedsAndClientCountsMatchTheServer) {
  const std::string model = server_fixture("models/stories260K.gguf");
  if (model.empty()) GTEST_SKIP() << "fixture models/stories260K.gguf is absent (../shared/fixtures)";
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--max-seqs", "4"}), "");
  auto http = server.client();
  double generated_before = get_metrics(*http)[kGenerated];

  auto results_path = std::filesystem::temp_directory_path() / ("tps_load_serve_" + std::to_string(getpid()) + ".json");
  std::string output;
  int status = run_tps("load -q --url http://127.0.0.1:" + std::to_string(server.port()) +
                           " --concurrency 1,4 --requests " + std::to_string(kRequests) +
                           " --input-tokens 24 --output-tokens " + std::to_string(kOutputTokens) +
                           " -o " + results_path.string(),
                       output);
  ASSERT_EQ(status, 0) << output;
  nlohmann::json results = loadgen::read_results_file(results_path);
  std::filesystem::remove(results_path);

  ASSERT_EQ(results["points"].size(), 2u);
  double client_tokens = 0;
  for (const auto& point : results["points"]) {
    SCOPED_TRACE("concurrency " + point["value"].dump());
    EXPECT_EQ(point["summary"]["requests_ok"], kRequests);
    EXPECT_EQ(point["summary"]["requests_failed"], 0);
    ASSERT_EQ(point["requests"].size(), size_t(kRequests));
    double point_tokens = 0;
    int itl_values = 0;
    for (const auto& r : point["requests"]) {
      EXPECT_TRUE(r["ok"].get<bool>()) << r.dump();
      // ignore_eos: the server generates exactly what was asked for, and says so in usage.
      EXPECT_EQ(r["output_tokens_source"], "usage") << r.dump();
      EXPECT_EQ(r["output_tokens"], kOutputTokens) << r.dump();
      EXPECT_EQ(r["finish_reason"], "length") << r.dump();
      EXPECT_GT(r["prompt_tokens"].get<int>(), 0) << r.dump();
      ASSERT_GE(r["token_times_s"].size(), 1u) << r.dump();
      EXPECT_GT(r["token_times_s"][0].get<double>(), r["send_s"].get<double>());
      point_tokens += r["output_tokens"].get<double>();
      itl_values += r["output_tokens"].get<int>() - r["token_counts"][0].get<int>();
    }
    EXPECT_EQ(point["summary"]["output_tokens"], point_tokens);
    EXPECT_EQ(point["summary"]["ttft_s"]["count"], kRequests);
    // Tokens a busy server sends together share an event, and those of the first event
    // belong to TTFT: every other token has one ITL value (docs/metrics.md). On a loaded
    // machine a request's 16 tokens can all come in its first event.
    EXPECT_EQ(point["summary"]["itl_s"]["count"].get<int>(), itl_values);
    if (itl_values > 0) {  // a gap inside a request is no longer than the request
      const auto& itl = point["summary"]["itl_s"];
      EXPECT_LE(itl["p50"].get<double>(), itl["max"].get<double>());
      EXPECT_LE(itl["max"].get<double>(), point["summary"]["e2e_s"]["max"].get<double>());
    }
    const auto& metrics = point["server_metrics"];
    ASSERT_TRUE(metrics["before"].contains(kGenerated)) << metrics.dump();
    ASSERT_TRUE(metrics["after"].contains(kGenerated)) << metrics.dump();
    // The server counts a streamed request before its last event, so tps load's own
    // scrape after the level sees exactly what the client counted.
    EXPECT_EQ(metrics["delta"][kGenerated].get<double>(), point_tokens);
    client_tokens += point_tokens;
  }
  EXPECT_EQ(client_tokens, 2.0 * kRequests * kOutputTokens);

  auto after = wait_metrics(*http, [&](auto& m) { return m[kGenerated] - generated_before >= client_tokens; });
  EXPECT_EQ(after[kGenerated] - generated_before, client_tokens);
  EXPECT_EQ(after["tps_requests_total"], 2.0 * kRequests);
  EXPECT_TRUE(server.alive());
}

}  // namespace
}  // namespace tps::testing
