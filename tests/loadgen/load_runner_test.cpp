#include <algorithm>
// The load generator against a scripted server whose every event time is known: the
// reported TTFT, ITL, TPOT and counts must match the schedule (within 1 ms) and the
// client's own arrival times (exactly).
#include "loadgen/load_runner.h"

#include <gtest/gtest.h>

#include <sstream>

#include "loadgen/scripted_server.h"

namespace tps::loadgen {
namespace {

constexpr double kTolerance = 1e-3;  // seconds

// role chunk at 10 ms, text at 30 ms, then +20 ms (1 token), +40 ms (3 tokens), +20 ms (1 token).
ScriptedResponse known_schedule() {
  ScriptedResponse r;
  r.events = {{0.010, "", 0}, {0.020, "Hello", 1}, {0.020, " big", 1}, {0.040, " wide world", 3}, {0.020, "!", 1}};
  r.per_event_usage = true;
  r.prompt_tokens = 7;
  return r;
}

RunSettings settings_for(const ScriptedServer& server, const std::string& kind = "completions") {
  RunSettings s;
  s.endpoint = parse_endpoint_url(server.url());
  s.endpoint.kind = kind;
  s.endpoint.timeout_s = 10;
  s.requests = 1;
  s.progress = false;
  return s;
}

std::vector<Prompt> prompts(size_t n) {
  std::vector<Prompt> out(n);
  for (auto& p : out) {
    p.text = "one two three";
    p.input_tokens = 3;
    p.output_tokens = 6;
  }
  return out;
}

RunResult run(const RunSettings& s, size_t n_prompts = 16, TokenCounter* counter = nullptr) {
  std::ostringstream progress;
  return run_load(s, prompts(n_prompts), counter, progress);
}

// How far the client's event times are from the server's: the times the server really
// wrote each event, which the script sets and the OS delays a little.
double worst_timing_error(const RequestRecord& r, const std::vector<double>& written, double origin) {
  // written[0] is the role chunk, which carries no text and is not an arrival.
  double worst = 0;
  for (size_t i = 0; i < r.arrivals.size(); ++i)
    worst = std::max(worst, std::abs(r.arrivals[i].time - (written.at(i + 1) - origin)));
  return worst;
}

TEST(LoadRunner, MatchesAKnownScheduleWithMultiTokenEventsAndRoleChunks) {
  for (const char* kind : {"completions", "chat"}) {
    // A loaded machine can wake the client late now and then: the timing must be within
    // 1 ms in one of a few tries, while counts and arithmetic are checked exactly in each.
    double best_error = 1e9;
    for (int attempt = 0; attempt < 5 && best_error > kTolerance; ++attempt) {
      ScriptedServer server([](const nlohmann::json&, int64_t) { return known_schedule(); });
      RunResult result = run(settings_for(server, kind));
      ASSERT_EQ(result.points.size(), 1u);
      ASSERT_EQ(result.points[0].records.size(), 1u);
      const RequestRecord& r = result.points[0].records[0];
      ASSERT_TRUE(r.ok) << r.error;
      EXPECT_EQ(r.output_tokens, 6);
      EXPECT_EQ(r.output_tokens_source, "usage");
      EXPECT_EQ(r.event_tokens_source, "usage");
      EXPECT_EQ(r.prompt_tokens, 7);
      ASSERT_EQ(r.arrivals.size(), 4u);  // the role chunk carries no text
      std::vector<int64_t> tokens;
      for (const auto& a : r.arrivals) tokens.push_back(a.tokens);
      EXPECT_EQ(tokens, (std::vector<int64_t>{1, 1, 3, 1}));

      // The arithmetic on the client's own arrival times is exact.
      RequestMetrics m = compute_request_metrics(r);
      const auto& a = r.arrivals;
      EXPECT_DOUBLE_EQ(m.ttft, a[0].time - r.send_time);
      EXPECT_DOUBLE_EQ(m.e2e, a[3].time - r.send_time);
      EXPECT_DOUBLE_EQ(m.tpot, (a[3].time - a[0].time) / 5);
      ASSERT_EQ(m.itl.size(), 5u);
      EXPECT_DOUBLE_EQ(m.itl[0], a[1].time - a[0].time);
      for (size_t i = 1; i <= 3; ++i) EXPECT_DOUBLE_EQ(m.itl[i], (a[2].time - a[1].time) / 3);
      EXPECT_DOUBLE_EQ(m.itl[4], a[3].time - a[2].time);

      const SweepSummary& s = result.points[0].summary;
      EXPECT_EQ(s.requests_ok, 1);
      EXPECT_EQ(s.output_tokens, 6);
      EXPECT_EQ(s.input_tokens, 7);  // the server's usage wins over the client's count
      EXPECT_EQ(s.itl.count, 5);
      EXPECT_EQ(s.short_outputs, 0);

      // The schedule as written: every event time, hence TTFT, ITL, TPOT and E2E.
      auto written = server.event_times().at(0);
      ASSERT_EQ(written.size(), 5u);
      double origin = result.points[0].origin;
      double error = worst_timing_error(r, written, origin);
      // The script's gaps hold as written (the server sleeps until each event's due time).
      EXPECT_GE(written[1] - server.arrival_times().at(0), 0.030);
      EXPECT_GE(written[4] - server.arrival_times().at(0), 0.110);
      best_error = std::min(best_error, error);
    }
    EXPECT_LE(best_error, kTolerance) << kind;
  }
}

TEST(LoadRunner, CountsOneTokenPerEventWithoutUsageAndSaysSo) {
  ScriptedServer server([](const nlohmann::json&, int64_t) {
    ScriptedResponse r = known_schedule();
    r.per_event_usage = false;
    r.final_usage = false;
    return r;
  });
  RunResult result = run(settings_for(server));
  const RequestRecord& r = result.points[0].records[0];
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.event_tokens_source, "events");
  EXPECT_EQ(r.output_tokens_source, "events");
  EXPECT_EQ(r.output_tokens, 4);
  EXPECT_EQ(r.requested_output_tokens, 6);
  EXPECT_EQ(result.points[0].summary.short_outputs, 1);
}

TEST(LoadRunner, RecountsOutputsWithAnExactTokenizerWhenTheServerGivesNoUsage) {
  ScriptedServer server([](const nlohmann::json&, int64_t) {
    ScriptedResponse r = known_schedule();
    r.per_event_usage = false;
    r.final_usage = false;
    return r;
  });
  auto counter = make_server_token_counter(parse_endpoint_url(server.url()));
  ASSERT_TRUE(counter);
  RunResult result = run(settings_for(server), 16, counter.get());
  const RequestRecord& r = result.points[0].records[0];
  EXPECT_EQ(r.output_tokens_source, "tokenizer");
  EXPECT_EQ(r.output_tokens, 4);  // "Hello big wide world!": 4 words for the scripted tokenizer
  EXPECT_EQ(result.points[0].summary.assumed_event_counts_off, 0);
}

TEST(LoadRunner, SplitsAFinalUsageOverItsEventsByTextLengthWithoutATokenizer) {
  ScriptedServer server([](const nlohmann::json&, int64_t) {
    ScriptedResponse r = known_schedule();
    r.per_event_usage = false;  // only the final usage: 6 tokens in 4 text events
    return r;
  });
  RunResult result = run(settings_for(server));
  const RequestRecord& r = result.points[0].records[0];
  EXPECT_EQ(r.output_tokens, 6);
  EXPECT_EQ(r.output_tokens_source, "usage");
  EXPECT_EQ(r.event_tokens_source, "text_length");
  int64_t placed = 0;
  for (const auto& a : r.arrivals) placed += a.tokens;
  EXPECT_EQ(placed, 6);
  EXPECT_EQ(result.points[0].summary.assumed_event_counts_off, 0);
}

TEST(LoadRunner, CountsHttpErrorsAndDroppedConnectionsAsFailures) {
  ScriptedServer server([](const nlohmann::json&, int64_t index) {
    ScriptedResponse r = known_schedule();
    if (index == 1) r.status = 503;
    if (index == 2) r.drop = true;
    return r;
  });
  RunSettings s = settings_for(server);
  s.requests = 4;
  RunResult result = run(s);
  ASSERT_EQ(result.points[0].records.size(), 4u);
  const auto& records = result.points[0].records;
  EXPECT_TRUE(records[0].ok);
  EXPECT_FALSE(records[1].ok);
  EXPECT_EQ(records[1].http_status, 503);
  EXPECT_NE(records[1].error.find("HTTP 503"), std::string::npos) << records[1].error;
  EXPECT_FALSE(records[2].ok);
  EXPECT_NE(records[2].error.find("connection error"), std::string::npos) << records[2].error;
  EXPECT_EQ(records[2].arrivals.size(), 4u);  // what came before the drop is kept
  EXPECT_TRUE(records[3].ok);
  EXPECT_EQ(result.points[0].summary.requests_ok, 2);
  EXPECT_EQ(result.points[0].summary.requests_failed, 2);
  EXPECT_TRUE(result.stopped.empty());
}

// llama-server closes the connection after each stream though it says keep-alive; the
// client's next request on it fails at once, unanswered. It is sent again on a new
// connection: every request succeeds, each reaching the server once.
TEST(LoadRunner, SendsAgainWhereAServerClosedAKeptAliveConnection) {
  ScriptedServer server([](const nlohmann::json&, int64_t) {
    ScriptedResponse r = known_schedule();
    r.close_after = true;
    return r;
  });
  RunSettings s = settings_for(server);
  s.requests = 5;
  RunResult result = run(s);
  ASSERT_EQ(result.points[0].records.size(), 5u);
  for (const auto& r : result.points[0].records) EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(server.requests(), 5);
}

// Holds a request's answer until `count` requests have reached the server (or 10 s pass):
// a load shape that keeps that many in flight lets it through, a weaker one cannot.
void note_arrival(std::atomic<int64_t>& seen, int64_t index) {
  int64_t current = seen.load();
  while (current < index + 1 && !seen.compare_exchange_weak(current, index + 1)) {
  }
}

bool wait_for_requests(const std::atomic<int64_t>& seen, int64_t count) {
  for (int i = 0; i < 10000 && seen.load() < count; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return seen.load() >= count;
}

TEST(LoadRunner, ClosedLoopKeepsEveryClientBusyAndSweeps) {
  std::atomic<int64_t> seen{0};
  std::atomic<bool> four_in_flight{false};
  ScriptedServer server([&](const nlohmann::json&, int64_t index) {
    note_arrival(seen, index);
    // Indices 0-9: concurrency 1 (2 warm-up + 8); 10-11 warm-up of concurrency 4; 12-15 are
    // the first requests of its four clients, all sent before any of them is answered.
    if (index == 12) four_in_flight = wait_for_requests(seen, 16);
    return known_schedule();
  });
  RunSettings s = settings_for(server);
  s.values = {1, 4};
  s.requests = 8;
  s.warmup = 2;
  RunResult result = run(s, 64);
  ASSERT_EQ(result.points.size(), 2u);
  EXPECT_EQ(server.requests(), 2 * (8 + 2));
  EXPECT_TRUE(four_in_flight);
  for (const auto& p : result.points) {
    EXPECT_EQ(p.summary.requests_ok, 8);
    EXPECT_EQ(p.summary.output_tokens, 48);
    EXPECT_GT(p.summary.output_tok_per_s, 0);
    EXPECT_FALSE(p.metrics_before.is_null());
    EXPECT_EQ(p.metrics_after["scripted_requests_total"].get<double>() -
                  p.metrics_before["scripted_requests_total"].get<double>(), 8);
  }
}

TEST(LoadRunner, OpenLoopSendsWithoutWaitingForAnswers) {
  std::atomic<int64_t> seen{0};
  std::atomic<bool> all_in_flight{false};
  ScriptedServer server([&](const nlohmann::json&, int64_t index) {
    note_arrival(seen, index);
    if (index == 0) all_in_flight = wait_for_requests(seen, 6);
    return known_schedule();
  });
  RunSettings s = settings_for(server);
  s.mode = "rate";
  s.values = {std::numeric_limits<double>::infinity()};
  s.requests = 6;
  RunResult result = run(s);
  ASSERT_EQ(result.points[0].records.size(), 6u);
  EXPECT_TRUE(all_in_flight);
  for (const auto& r : result.points[0].records) EXPECT_TRUE(r.ok) << r.error;
}

TEST(LoadRunner, ADurationBoundsSendingAndTimeoutsAreFailures) {
  ScriptedServer server([](const nlohmann::json&, int64_t index) {
    ScriptedResponse r = known_schedule();
    if (index == 0) r.events.front().delay_s = 1.0;  // stalls past the timeout
    return r;
  });
  RunSettings s = settings_for(server);
  s.endpoint.timeout_s = 0.3;
  s.requests = 0;
  s.duration_s = 0.5;
  s.values = {2};
  RunResult result = run(s, 64);
  const auto& records = result.points[0].records;
  ASSERT_GE(records.size(), 3u);
  for (const auto& r : records) EXPECT_LT(r.send_time, 0.6);  // claimed before 0.5 s, sent right after
  // The server stalls the first request it receives, which either client may send first.
  auto stalled = std::find_if(records.begin(), records.end(), [](const auto& r) { return !r.ok; });
  ASSERT_NE(stalled, records.end());
  EXPECT_NE(stalled->error.find("timed out"), std::string::npos) << stalled->error;
  EXPECT_EQ(result.points[0].summary.requests_failed, 1);
}

TEST(LoadRunner, AServerThatGoesAwayEndsTheRunWithPartialResults) {
  std::atomic<bool> stop{false};
  auto server = std::make_unique<ScriptedServer>([&](const nlohmann::json&, int64_t index) {
    if (index == 3) stop = true;
    return known_schedule();
  });
  RunSettings s = settings_for(*server);
  s.values = {2, 4};
  s.requests = 50;
  std::thread killer([&] {
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    server->stop();
  });
  RunResult result = run(s, 200);
  killer.join();
  EXPECT_NE(result.stopped.find("stopped answering"), std::string::npos) << result.stopped;
  ASSERT_EQ(result.points.size(), 1u);  // the second sweep value never starts
  const auto& summary = result.points[0].summary;
  EXPECT_GE(summary.requests_ok, 3);
  EXPECT_GE(summary.requests_failed, 3);
  EXPECT_LT(summary.requests_ok + summary.requests_failed, 50);
}

TEST(LoadRunner, AnUnreachableServerFailsFastAndSaysWhy) {
  int port;
  {
    ScriptedServer server([](const nlohmann::json&, int64_t) { return known_schedule(); });
    port = server.port();
  }
  RunSettings s;
  s.endpoint = parse_endpoint_url("http://127.0.0.1:" + std::to_string(port));
  s.requests = 20;
  s.progress = false;
  RunResult result = run(s);
  EXPECT_FALSE(result.stopped.empty());
  ASSERT_EQ(result.points.size(), 1u);
  EXPECT_EQ(result.points[0].summary.requests_failed, 3);
}

}  // namespace
}  // namespace tps::loadgen
