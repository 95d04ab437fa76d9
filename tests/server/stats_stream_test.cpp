// GET /v1/stats/stream and GET / on the real `tps serve`: the live numbers follow a
// request and add up to its usage, a profile gives MBU, speculation its acceptance,
// subscribers are capped and a gone one frees its place, the key is needed, closing
// ends every stream cleanly, and / is the self-contained page.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/engine.h"
#include "engine/model_runner.h"
#include "model/model.h"
#include "serve_helpers.h"
#include "server/stats_stream.h"

namespace tps::testing {
namespace {

// One subscriber to /v1/stats/stream on its own connection and thread.
class StatsSubscriber {
 public:
  StatsSubscriber(int port, const httplib::Headers& headers = {}) : client_("127.0.0.1", port) {
    client_.set_read_timeout(30, 0);
    thread_ = std::thread([this, headers] {
      auto res = client_.Get(
          "/v1/stats/stream", headers,
          [this](const httplib::Response& r) {
            std::lock_guard lock(mutex_);
            status_ = r.status;
            content_type_ = r.get_header_value("Content-Type");
            cv_.notify_all();
            return true;
          },
          [this](const char* data, size_t n) {
            std::lock_guard lock(mutex_);
            buffer_.append(data, n);
            for (size_t end; (end = buffer_.find("\n\n")) != std::string::npos; buffer_.erase(0, end + 2))
              if (buffer_.rfind("data: ", 0) == 0) events_.push_back(json::parse(buffer_.substr(6, end - 6)));
            cv_.notify_all();
            return !leaving_.load();
          });
      std::lock_guard lock(mutex_);
      ended_ = true;
      ended_cleanly_ = static_cast<bool>(res);
      cv_.notify_all();
    });
  }
  ~StatsSubscriber() { leave(); }

  // The HTTP status once the headers came (0: none within 30 s).
  int status() {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return status_ != 0 || ended_; });
    return status_;
  }
  std::string content_type() {
    status();
    std::lock_guard lock(mutex_);
    return content_type_;
  }
  // The next event, or nothing when the stream ended or none came within 30 s.
  std::optional<json> next() {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return read_ < events_.size() || ended_; });
    if (read_ == events_.size()) return std::nullopt;
    return events_[read_++];
  }
  // Waits for the end of the response; true when it ended as HTTP allows (not cut).
  bool wait_end() {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return ended_; });
    return ended_ && ended_cleanly_;
  }
  // Closes the connection, as a browser tab that goes away.
  void leave() {
    leaving_ = true;
    client_.stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  httplib::Client client_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<bool> leaving_{false};
  int status_ = 0;
  std::string content_type_, buffer_;
  std::vector<json> events_;
  size_t read_ = 0;
  bool ended_ = false, ended_cleanly_ = false;
};

const char* const kFields[] = {
    "sequence", "time", "interval_s", "output_tokens_per_s", "output_tokens_per_s_per_seq", "prefill_tokens_per_s",
    "output_tokens_total", "prefill_tokens_total", "latency_window_s", "latency_requests", "ttft_ms", "itl_ms",
    "running", "waiting", "kv_blocks_used", "kv_blocks_cached", "kv_blocks_total", "prefix_cache_hit_rate", "steps",
    "batch_tokens", "batch_utilization", "decode_bandwidth_gbps", "profile_bandwidth_gbps", "mbu", "speculative",
    "spec_acceptance_rate"};

// A long request (greedy, past end-of-text) so that it is in flight across snapshots.
json long_request(bool stream) {
  json j = {{"prompt", "Once upon a time"}, {"max_tokens", 1800}, {"ignore_eos", true}, {"temperature", 0},
            {"stream", stream}};
  if (stream) j["stream_options"] = {{"include_usage", true}};
  return j;
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Events from `sub` while `request` runs on another thread, up to the first one made
// after its end. The request runs again until a snapshot has caught it in flight (a
// fast machine can finish one between two snapshots, a second apart); *runs says how
// often it ran.
std::vector<json> events_during(StatsSubscriber& sub, const std::function<void()>& request, int* runs = nullptr) {
  std::atomic<bool> caught{false};
  std::atomic<double> done_at{0};
  std::thread t([&] {
    int n = 0;
    do {
      request();
      ++n;
    } while (!caught && n < 50);
    if (runs != nullptr) *runs = n;
    done_at = unix_seconds();
  });
  std::vector<json> events;
  for (int i = 0; i < 120; ++i) {
    auto e = sub.next();
    if (!e) break;
    events.push_back(*e);
    if ((*e)["running"].get<int>() > 0) caught = true;
    if (done_at > 0 && (*e)["time"].get<double>() > done_at) break;
  }
  t.join();
  return events;
}

TEST(StatsStream, NumbersFollowARequestAndAddUpToItsUsage) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  StatsSubscriber sub(server.port());
  ASSERT_EQ(sub.status(), 200);
  EXPECT_EQ(sub.content_type(), "text/event-stream");
  auto idle = sub.next();
  ASSERT_TRUE(idle);
  for (const char* f : kFields) EXPECT_TRUE(idle->contains(f)) << f << " missing in " << idle->dump();
  EXPECT_EQ((*idle)["running"], 0);
  EXPECT_EQ((*idle)["output_tokens_total"], 0);
  EXPECT_TRUE((*idle)["batch_utilization"].is_null());
  EXPECT_GT((*idle)["kv_blocks_total"].get<int>(), 0);
  EXPECT_EQ((*idle)["batch_tokens"], 256);
  EXPECT_FALSE((*idle)["speculative"].get<bool>());
  EXPECT_TRUE((*idle)["spec_acceptance_rate"].is_null());
  EXPECT_TRUE((*idle)["profile_bandwidth_gbps"].is_null());
  EXPECT_TRUE((*idle)["mbu"].is_null());

  int64_t completion_tokens = 0, prompt_tokens = 0;
  bool all_ok = true;
  int runs = 0;
  auto events = events_during(
      sub,
      [&] {
        auto c = server.client();
        const StreamResult result = post_stream(*c, "/v1/completions", long_request(true));
        all_ok = all_ok && result.status == 200 && result.done && !result.chunks.empty() &&
                 result.chunks.back()["usage"]["completion_tokens"] == 1800;
        if (!result.chunks.empty() && result.chunks.back().contains("usage")) {
          completion_tokens += result.chunks.back()["usage"]["completion_tokens"].get<int64_t>();
          prompt_tokens += result.chunks.back()["usage"]["prompt_tokens"].get<int64_t>();
        }
      },
      &runs);
  ASSERT_TRUE(all_ok) << "a request did not stream 1800 tokens and [DONE]";

  bool saw_running = false;
  int checked_pairs = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    EXPECT_LE(e["running"].get<int>(), 1) << e.dump();
    EXPECT_EQ(e["waiting"], 0) << e.dump();
    if (e["running"] == 1) {
      saw_running = true;
      EXPECT_GT(e["kv_blocks_used"].get<int>(), 0) << e.dump();
    }
    if (e["steps"].get<int>() > 0) {
      const double util = e["batch_utilization"].get<double>();
      EXPECT_GT(util, 0);
      EXPECT_LE(util, 1);
    }
    if (!e["decode_bandwidth_gbps"].is_null()) {
      EXPECT_GT(e["decode_bandwidth_gbps"].get<double>(), 0) << e.dump();
    }
    if (e["output_tokens_per_s"].get<double>() > 0) {
      EXPECT_GT(e["output_tokens_per_s_per_seq"].get<double>(), 0);
    }
    // A rate times its interval is what the total gained since the previous snapshot.
    const json& prev = i > 0 ? events[i - 1] : *idle;
    if (e["sequence"].get<int64_t>() != prev["sequence"].get<int64_t>() + 1) continue;
    for (const char* kind : {"output", "prefill"}) {
      const std::string total = std::string(kind) + "_tokens_total", rate = std::string(kind) + "_tokens_per_s";
      EXPECT_NEAR(e[total].get<double>() - prev[total].get<double>(),
                  e[rate].get<double>() * e["interval_s"].get<double>(), 1e-6)
          << e.dump();
    }
    ++checked_pairs;
  }
  EXPECT_TRUE(saw_running) << "no snapshot while the request ran";
  EXPECT_GT(checked_pairs, 0);

  const json& last = events.back();
  EXPECT_EQ(last["running"], 0);
  EXPECT_EQ(last["kv_blocks_used"], 0);
  EXPECT_GT(last["kv_blocks_cached"].get<int>(), 0);
  EXPECT_EQ(last["output_tokens_total"], completion_tokens);
  EXPECT_EQ(last["prefill_tokens_total"], prompt_tokens);
  EXPECT_EQ(last["latency_requests"], runs);
  for (const char* kind : {"ttft_ms", "itl_ms"}) {
    const json& p = last[kind];
    EXPECT_GT(p["p50"].get<double>(), 0) << last.dump();
    EXPECT_LE(p["p50"].get<double>(), p["p90"].get<double>());
    EXPECT_LE(p["p90"].get<double>(), p["p99"].get<double>());
  }
  auto c = server.client();
  auto m = get_metrics(*c);
  EXPECT_EQ(m["tps_generated_tokens_total"], last["output_tokens_total"].get<double>());
  EXPECT_EQ(m["tps_requests_running"], 0);
}

TEST(StatsStream, ProfileGivesMbuAndSpeculationItsAcceptance) {
  REQUIRE_MODEL(model, kStories);
  const std::string profile = write_test_profile(20.0);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--profile", profile, "--spec", "ngram"}), "");
  StatsSubscriber sub(server.port());
  Reply reply;
  auto events = events_during(sub, [&] {
    auto c = server.client();
    // Greedy text of this model repeats itself: n-gram drafts find matches.
    reply = post(*c, "/v1/completions", long_request(false));
  });
  std::filesystem::remove(profile);
  ASSERT_EQ(reply.status, 200) << reply.raw;
  bool saw_mbu = false, saw_acceptance = false;
  for (const json& e : events) {
    EXPECT_TRUE(e["speculative"].get<bool>());
    EXPECT_EQ(e["profile_bandwidth_gbps"], 20.0);
    if (!e["mbu"].is_null()) {
      saw_mbu = true;
      EXPECT_NEAR(e["mbu"].get<double>(), e["decode_bandwidth_gbps"].get<double>() / 20.0, 1e-9);
    }
    if (!e["spec_acceptance_rate"].is_null()) {
      saw_acceptance = true;
      EXPECT_GE(e["spec_acceptance_rate"].get<double>(), 0);
      EXPECT_LE(e["spec_acceptance_rate"].get<double>(), 1);
    }
  }
  EXPECT_TRUE(saw_mbu);
  EXPECT_TRUE(saw_acceptance);
}

TEST(StatsStream, SubscribersAreCappedAndAGoneOneFreesItsPlace) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  constexpr int kCap = 16;  // StatsStream::kMaxSubscribers
  std::vector<std::unique_ptr<StatsSubscriber>> subs;
  for (int i = 0; i < kCap; ++i) {
    subs.push_back(std::make_unique<StatsSubscriber>(server.port()));
    ASSERT_EQ(subs.back()->status(), 200);
    ASSERT_TRUE(subs.back()->next());
  }
  {
    StatsSubscriber extra(server.port());
    EXPECT_EQ(extra.status(), 503);
    extra.wait_end();
  }
  subs.front()->leave();
  // The gone subscriber is noticed at its next write (a second at most): its place
  // comes free, and with it the HTTP thread it held.
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    StatsSubscriber again(server.port());
    status = again.status();
    if (status == 200) {
      EXPECT_TRUE(again.next());
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  EXPECT_EQ(status, 200);
  EXPECT_EQ(get_status(*server.client(), "/health"), 200);
}

TEST(StatsStream, NeedsTheApiKey) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--api-key", "sesame"}), "");
  {
    StatsSubscriber without(server.port());
    EXPECT_EQ(without.status(), 401);
  }
  StatsSubscriber sub(server.port(), {{"Authorization", "Bearer sesame"}});
  ASSERT_EQ(sub.status(), 200);
  ASSERT_TRUE(sub.next());
  // The page itself is outside /v1: it loads without the key and asks for it.
  EXPECT_EQ(get_status(*server.client(), "/"), 200);
}

// In process, because close() is what a stopping server calls: every subscriber's
// response ends as HTTP allows (the last chunk), not cut, and the server can stop.
TEST(StatsStream, CloseEndsEverySubscriberCleanly) {
  REQUIRE_MODEL(path, kStories);
  auto model = Model::load(path);
  ModelRunner runner(*model, plan_kv_geometry(model->config(), {0, 0, 16, 1}, nullptr), 1);
  Engine engine(runner, EngineConfig{});
  LiveStats live(0, 0);
  StatsStream stream(engine, live, 0.05);
  httplib::Server http;
  http.Get("/v1/stats/stream", [&](const httplib::Request&, httplib::Response& res) { stream.subscribe(res); });
  const int port = http.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { http.listen_after_bind(); });
  {
    StatsSubscriber a(port), b(port);
    ASSERT_TRUE(a.next());
    ASSERT_TRUE(b.next());
    stream.close();
    EXPECT_TRUE(a.wait_end());
    EXPECT_TRUE(b.wait_end());
    StatsSubscriber late(port);
    EXPECT_TRUE(late.wait_end());
    EXPECT_FALSE(late.next());
  }
  http.stop();
  serving.join();
}

// The real server on SIGTERM: open live pages do not hold its exit up; each stream ends
// as HTTP allows and the process exits 0.
TEST(StatsStream, SigtermWithSubscribersExitsZero) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  StatsSubscriber a(server.port()), b(server.port());
  ASSERT_TRUE(a.next());
  ASSERT_TRUE(b.next());
  const double t = now_seconds();
  EXPECT_EQ(server.signal_and_wait(SIGTERM, 10), 0);
  EXPECT_LT(now_seconds() - t, 5.0);
  EXPECT_TRUE(a.wait_end());
  EXPECT_TRUE(b.wait_end());
}

TEST(WebApp, RootIsTheSelfContainedPage) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  auto c = server.client();
  auto res = c->Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(res->get_header_value("Content-Security-Policy").find("connect-src 'self'"), std::string::npos);
  const std::string& page = res->body;
  EXPECT_NE(page.find("<title>tps serve</title>"), std::string::npos);
  EXPECT_NE(page.find("uPlot"), std::string::npos);           // the chart library, inline
  EXPECT_NE(page.find("/v1/stats/stream"), std::string::npos);  // the app's script, inline
  EXPECT_EQ(page.find("/*TPS_"), std::string::npos);           // every placeholder filled
  EXPECT_EQ(page.find("<script src"), std::string::npos);      // nothing fetched from elsewhere
  EXPECT_EQ(page.find("<link rel=\"stylesheet\""), std::string::npos);
}

}  // namespace
}  // namespace tps::testing
