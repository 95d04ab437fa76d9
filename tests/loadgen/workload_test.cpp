#include "loadgen/workload.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "loadgen/scripted_server.h"

namespace tps::loadgen {
namespace {

TEST(Workload, SyntheticPromptsHaveExactLengthsAndSharePrefixes) {
  ScriptedServer server([](const nlohmann::json&, int64_t) { return ScriptedResponse{}; });
  auto counter = make_server_token_counter(parse_endpoint_url(server.url()));
  ASSERT_TRUE(counter);
  WorkloadSpec spec;
  spec.input = {40, 5};
  spec.output = {16, 0};
  spec.shared_prefix = 20;
  Workload w = build_workload(spec, 12, "completions", *counter);
  ASSERT_EQ(w.prompts.size(), 12u);
  EXPECT_EQ(w.exact_inputs, 12);
  EXPECT_EQ(w.input_tokens_source, "server /tokenize");
  std::string prefix = w.prompts[0].text.substr(0, w.prompts[0].text.find(' ', 70));
  for (const auto& p : w.prompts) {
    EXPECT_EQ(counter->count(p.text), p.input_tokens);
    EXPECT_EQ(p.output_tokens, 16);
    EXPECT_EQ(p.text.substr(0, 60), w.prompts[0].text.substr(0, 60));  // 20 shared words ~ 80 bytes
  }
  EXPECT_NE(w.prompts[0].text, w.prompts[1].text);
}

TEST(Workload, EstimatedCountsSaySo) {
  auto counter = make_estimating_token_counter();
  WorkloadSpec spec;
  spec.input = {32, 0};
  Workload w = build_workload(spec, 3, "completions", *counter);
  EXPECT_EQ(w.description["input_tokens_exact"], false);
  EXPECT_NE(w.input_tokens_source.find("estimated"), std::string::npos);
  for (const auto& p : w.prompts) EXPECT_EQ(p.input_tokens, 32);
}

TEST(Workload, ReadsJsonlDatasetsAndNamesBadLines) {
  auto dir = std::filesystem::temp_directory_path();
  auto path = (dir / ("tps_dataset_" + std::to_string(getpid()) + ".jsonl")).string();
  {
    std::ofstream out(path);
    out << R"({"prompt": "tell me a story", "output_tokens": 7})" << "\n\n"
        << R"({"messages": [{"role": "user", "content": "hi there"}]})" << "\n";
  }
  auto counter = make_estimating_token_counter();
  WorkloadSpec spec;
  spec.dataset = path;
  spec.output = {20, 0};
  Workload w = build_workload(spec, 3, "chat", *counter);
  ASSERT_EQ(w.prompts.size(), 3u);
  EXPECT_EQ(w.prompts[0].output_tokens, 7);
  EXPECT_EQ(w.prompts[1].output_tokens, 20);
  EXPECT_TRUE(w.prompts[1].messages.is_array());
  EXPECT_EQ(w.prompts[2].text, w.prompts[0].text);  // reused in order
  EXPECT_THROW(build_workload(spec, 1, "completions", *counter), Error);  // messages need chat
  {
    std::ofstream out(path);
    out << R"({"prompt": "ok"})" << "\n" << "{broken\n";
  }
  try {
    build_workload(spec, 1, "chat", *counter);
    FAIL() << "a broken line must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":2:"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Workload, ParsesLengthSpecs) {
  EXPECT_EQ(parse_length_spec("--input-tokens", "512").mean, 512);
  EXPECT_DOUBLE_EQ(parse_length_spec("--input-tokens", "512:64").stddev, 64);
  EXPECT_THROW(parse_length_spec("--input-tokens", "0"), Error);
  EXPECT_THROW(parse_length_spec("--input-tokens", "12x"), Error);
  EXPECT_THROW(parse_length_spec("--input-tokens", "12:-1"), Error);
}

}  // namespace
}  // namespace tps::loadgen
