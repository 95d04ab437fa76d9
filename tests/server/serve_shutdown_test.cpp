// Graceful shutdown of the real `tps serve`: on SIGTERM or SIGINT new requests get 503,
// the streams in flight finish (or, past --shutdown-timeout, end with finish_reason
// "abort"), every one ends with [DONE], and the process exits 0.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "serve_helpers.h"

namespace tps::testing {
namespace {

// A model slow enough that streams of a few hundred tokens last seconds.
constexpr const char* kPreset = "smollm2-135m";

json long_stream(int max_tokens) {
  return {{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"ignore_eos", true}, {"stream", true}};
}

// Starts `n` streams and returns once each has received its first event.
struct Streams {
  Streams(const ServeProcess& server, int n, int max_tokens) : results(n) {
    for (int i = 0; i < n; ++i)
      threads.emplace_back([&, i] {
        auto c = server.client();
        bool first = true;
        results[i] = post_stream_timed(*c, "/v1/completions", long_stream(max_tokens), [&] {
          if (first) ++started;
          first = false;
        });
        if (first) ++started;  // failed before any event: do not wait for it
      });
    const double give_up = now_seconds() + 60;
    while (started < n && now_seconds() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  void join() {
    for (auto& t : threads) t.join();
  }
  std::vector<TimedStream> results;
  std::vector<std::thread> threads;
  std::atomic<int> started{0};
};

std::string last_finish_reason(const StreamResult& r) {
  return r.chunks.empty() ? "" : r.chunks.back()["choices"][0]["finish_reason"].dump();
}

TEST(ServeShutdown, SigtermDuringEightStreamsLetsThemFinishAndExitsZero) {
  const std::string model = synthesized_model(kPreset, "q8_0");
  ASSERT_FALSE(model.empty());
  ServeProcess server;
  // A timeout no loaded machine reaches: every stream must finish, not end with abort.
  constexpr double kShutdownTimeout = 600;
  ASSERT_EQ(server.start(model, {"--max-seqs", "8", "--shutdown-timeout", "600"}), "");
  Streams streams(server, 8, 300);
  ASSERT_EQ(streams.started, 8);
  const double signalled = now_seconds();
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  // Draining: the port still answers, with 503, and /health says so.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto c = server.client();
  const Reply refused = post(*c, "/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 2}});
  EXPECT_EQ(refused.status, 503) << refused.raw;
  EXPECT_EQ(refused.body["error"]["code"], "server_shutting_down") << refused.raw;
  auto health = server.client()->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  streams.join();
  const int status = server.wait_exit(kShutdownTimeout + 5);
  EXPECT_EQ(status, 0);
  EXPECT_LT(now_seconds() - signalled, kShutdownTimeout);
  for (const auto& s : streams.results) {
    EXPECT_EQ(s.result.status, 200);
    EXPECT_TRUE(s.result.done) << "no [DONE] after " << s.result.chunks.size() << " chunks";
    EXPECT_EQ(last_finish_reason(s.result), "\"length\"");
    // Still streaming when the signal came: the drain let it run on.
    EXPECT_GT(s.last_event, signalled);
    ASSERT_FALSE(s.result.chunks.empty());
    EXPECT_EQ(s.result.chunks.back()["timings"]["predicted_n"], 300);
  }
}

TEST(ServeShutdown, PastTheShutdownTimeoutRequestsEndWithAbort) {
  const std::string model = synthesized_model(kPreset, "q8_0");
  ASSERT_FALSE(model.empty());
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--max-seqs", "8", "--shutdown-timeout", "1"}), "");
  Reply plain;
  std::thread plain_thread([&] {
    plain = post(*server.client(), "/v1/completions",
                 json{{"prompt", "Once upon a time"}, {"max_tokens", 3000}, {"ignore_eos", true}});
  });
  Streams streams(server, 4, 3000);
  ASSERT_EQ(streams.started, 4);
  const double signalled = now_seconds();
  ASSERT_EQ(kill(server.pid(), SIGTERM), 0);
  streams.join();
  plain_thread.join();
  EXPECT_EQ(server.wait_exit(30), 0);
  EXPECT_GE(now_seconds() - signalled, 1.0);
  for (const auto& s : streams.results) {
    EXPECT_EQ(s.result.status, 200);
    EXPECT_TRUE(s.result.done);
    EXPECT_EQ(last_finish_reason(s.result), "\"abort\"");
  }
  EXPECT_EQ(plain.status, 200) << plain.raw;
  EXPECT_EQ(plain.body["choices"][0]["finish_reason"], "abort") << plain.raw;
  EXPECT_LT(plain.body["usage"]["completion_tokens"].get<int>(), 3000);
}

TEST(ServeShutdown, AnIdleServerExitsZeroAtOnceOnSigtermAndOnSigintInTheBackground) {
  REQUIRE_MODEL(model, kStories);
  {
    ServeProcess server;
    ASSERT_EQ(server.start(model), "");
    auto c = server.client();  // a kept-alive idle connection does not hold the exit up
    ASSERT_TRUE(c->Get("/health"));
    const double t = now_seconds();
    EXPECT_EQ(server.signal_and_wait(SIGTERM, 10), 0);
    EXPECT_LT(now_seconds() - t, 2.0);
  }
  {
    ServeProcess server;
    ASSERT_EQ(server.start(model, {}, {.sigint_ignored = true}), "");
    EXPECT_EQ(server.signal_and_wait(SIGINT, 10), 0);
  }
}

}  // namespace
}  // namespace tps::testing
