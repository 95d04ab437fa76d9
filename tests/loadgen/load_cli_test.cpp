// `tps load` and `tps compare` as a user runs them, against the scripted server.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "loadgen/results_file.h"
#include "loadgen/scripted_server.h"

namespace tps::loadgen {
namespace {

struct Outcome {
  int status = -1;
  std::string output;
};

Outcome run_tps(const std::string& args) {
  std::string command = std::string(TPS_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  Outcome o;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) o.output.append(buffer, n);
  int raw = pclose(pipe);
  o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return o;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ScriptedResponse short_stream() {
  ScriptedResponse r;
  for (int i = 0; i < 4; ++i) r.events.push_back({0.002, " w" + std::to_string(i), 1});
  r.per_event_usage = true;
  return r;
}

class LoadCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tps_load_cli_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(LoadCli, WritesResultsCsvAndHtmlAndComparesRuns) {
  ScriptedServer server([](const nlohmann::json&, int64_t) { return short_stream(); });
  std::string common = " load -q --url " + server.url() +
                       " --concurrency 1,2 --requests 6 --warmup 1 --input-tokens 8 --output-tokens 4 --slo ttft=1s ";
  Outcome a = run_tps(common + "-o " + path("a.json") + " --csv " + path("a.csv") + " --html " + path("a.html"));
  ASSERT_EQ(a.status, 0) << a.output;
  EXPECT_NE(a.output.find("== concurrency 2 =="), std::string::npos) << a.output;
  EXPECT_NE(a.output.find("input tokens counted by: server /tokenize"), std::string::npos) << a.output;

  nlohmann::json results = read_results_file(path("a.json"));
  EXPECT_EQ(results["settings"]["values"], nlohmann::json::array({1.0, 2.0}));
  EXPECT_EQ(results["settings"]["model"], "scripted");  // the first model the server lists
  EXPECT_EQ(results["workload"]["prompts_with_exact_input_length"], 14);
  ASSERT_EQ(results["points"].size(), 2u);
  for (const auto& p : results["points"]) {
    EXPECT_EQ(p["requests"].size(), 6u);
    EXPECT_EQ(p["summary"]["requests_ok"], 6);
    EXPECT_EQ(p["summary"]["output_tokens"], 24);
    EXPECT_EQ(p["server_metrics"]["delta"]["scripted_requests_total"], 6.0);
    EXPECT_EQ(p["requests"][0]["token_times_s"].size(), 4u);
    EXPECT_EQ(p["requests"][0]["input_tokens"], 8);
  }
  std::string csv = read_file(path("a.csv"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 13);
  std::string html = read_file(path("a.html"));
  EXPECT_NE(html.find("uPlot"), std::string::npos);
  EXPECT_EQ(html.find("/*TPS_"), std::string::npos);

  Outcome b = run_tps(common + "-o " + path("b.json"));
  ASSERT_EQ(b.status, 0) << b.output;
  Outcome cmp = run_tps(" compare " + path("a.json") + " " + path("b.json"));
  ASSERT_EQ(cmp.status, 0) << cmp.output;
  EXPECT_NE(cmp.output.find("== concurrency 2"), std::string::npos) << cmp.output;
  EXPECT_NE(cmp.output.find("TTFT p99 ms"), std::string::npos) << cmp.output;
}

TEST_F(LoadCli, SavesPartialResultsWhenTheServerGoesAway) {
  std::atomic<bool> stop{false};
  auto server = std::make_unique<ScriptedServer>([&](const nlohmann::json&, int64_t index) {
    if (index == 4) stop = true;
    return short_stream();
  });
  std::thread killer([&] {
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server->stop();
  });
  Outcome o = run_tps(" load -q --url " + server->url() + " --concurrency 2 --requests 500 -o " + path("partial.json"));
  killer.join();
  EXPECT_EQ(o.status, 1) << o.output;
  EXPECT_NE(o.output.find("stopped early"), std::string::npos) << o.output;
  nlohmann::json results = read_results_file(path("partial.json"));
  EXPECT_NE(results["stopped_early"].get<std::string>(), "");
  ASSERT_EQ(results["points"].size(), 1u);
  EXPECT_GE(results["points"][0]["summary"]["requests_ok"].get<int>(), 4);
  EXPECT_GE(results["points"][0]["summary"]["requests_failed"].get<int>(), 3);
}

TEST_F(LoadCli, CtrlCStopsSendingAndSavesWhatWasMeasured) {
  std::atomic<int64_t> seen{0};
  ScriptedServer server([&](const nlohmann::json&, int64_t index) {
    seen = index + 1;
    return short_stream();
  });
  std::string out = path("interrupted.json"), log = path("interrupted.log");
  std::vector<std::string> args = {TPS_BINARY, "load", "-q", "--url", server.url(), "--concurrency", "1",
                                   "--duration", "60", "--prompt-pool", "8", "-o", out};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, TPS_BINARY, &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  for (int i = 0; i < 20000 && seen < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  kill(pid, SIGINT);
  int raw = 0;
  waitpid(pid, &raw, 0);
  ASSERT_TRUE(WIFEXITED(raw)) << read_file(log);
  EXPECT_EQ(WEXITSTATUS(raw), 1) << read_file(log);
  nlohmann::json results = read_results_file(out);
  EXPECT_NE(results["stopped_early"].get<std::string>().find("interrupted"), std::string::npos);
  EXPECT_GE(results["points"][0]["summary"]["requests_ok"].get<int>(), 2);
  EXPECT_EQ(results["points"][0]["summary"]["requests_failed"], 0);
}

TEST_F(LoadCli, RejectsBadFlagsWithOneLine) {
  for (const char* args : {" load --url http://127.0.0.1:9 --concurrency 2 --rate 3",
                           " load --url http://127.0.0.1:9 --slo ttft=soon",
                           " load --url http://127.0.0.1:9 --input-tokens 12:x",
                           " load --url ftp://x", " compare /nonexistent/a.json /nonexistent/b.json"}) {
    Outcome o = run_tps(args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.output;
    EXPECT_EQ(o.output.rfind("tps: error: ", 0), 0u) << args << "\n" << o.output;
  }
}

}  // namespace
}  // namespace tps::loadgen
