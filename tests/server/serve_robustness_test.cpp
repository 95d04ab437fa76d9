// Integration tests of bad input, limits and authentication against the real `tps serve`.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "serve_helpers.h"

namespace tps::testing {
namespace {

void expect_error(const Reply& r, int status, const std::string& param, const std::string& what) {
  EXPECT_EQ(r.status, status) << what << ": " << r.raw;
  ASSERT_TRUE(r.body.is_object() && r.body.contains("error")) << what << ": " << r.raw;
  const json& e = r.body["error"];
  EXPECT_TRUE(e["message"].is_string()) << what;
  EXPECT_TRUE(e.contains("type") && e.contains("param") && e.contains("code")) << what;
  if (!param.empty()) {
    EXPECT_EQ(e["param"], param) << what;
    EXPECT_NE(e["message"].get<std::string>().find(param), std::string::npos) << what << ": " << e["message"];
  }
}

}  // namespace

TEST(ServeErrors, EveryBadInputGetsItsFourHundredAndTheServerKeepsServing) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--ctx-size", "64", "--max-body", "65536"}), "");
  auto c = server.client();
  struct Case {
    const char* path;
    std::string body;
    int status;
    const char* param;
  };
  std::string long_prompt;
  for (int i = 0; i < 100; ++i) long_prompt += "once upon a time ";
  json many_tokens = json::array();
  for (int i = 0; i < 80; ++i) many_tokens.push_back(5);
  const std::vector<Case> cases = {
      {"/v1/completions", "{\"prompt\": \"a\",", 400, ""},
      {"/v1/completions", "not json at all", 400, ""},
      {"/v1/completions", "[]", 400, ""},
      {"/v1/completions", "", 400, ""},
      {"/v1/completions", R"({"prompt": 5})", 400, "prompt"},
      {"/v1/completions", R"({"prompt": ""})", 400, "prompt"},
      {"/v1/completions", R"({"prompt": [1, -3]})", 400, "prompt"},
      {"/v1/completions", json{{"prompt", long_prompt}}.dump(), 400, "prompt"},
      {"/v1/completions", json{{"prompt", many_tokens}}.dump(), 400, "prompt"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": -5})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": 99999999999})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": "ten"})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt": "a", "temperature": -1})", 400, "temperature"},
      {"/v1/completions", R"({"prompt": "a", "top_p": 0})", 400, "top_p"},
      {"/v1/completions", R"({"prompt": "a", "top_k": 1.5})", 400, "top_k"},
      {"/v1/completions", R"({"prompt": "a", "min_p": -0.5})", 400, "min_p"},
      {"/v1/completions", R"({"prompt": "a", "frequency_penalty": 9})", 400, "frequency_penalty"},
      {"/v1/completions", R"({"prompt": "a", "n": 17})", 400, "n"},
      {"/v1/completions", R"({"prompt": "a", "stop": [1]})", 400, "stop"},
      {"/v1/completions", R"({"prompt": "a", "logprobs": true})", 400, "logprobs"},
      {"/v1/completions", R"({"prompt": "a", "stream": 1})", 400, "stream"},
      {"/v1/completions", R"({"prompt": "a", "temprature": 0.5})", 400, "temprature"},
      {"/v1/completions", R"({"prompt": "a", "best_of": 4})", 400, "best_of"},
      {"/v1/chat/completions", R"({"messages": []})", 400, "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": 3}]})", 400, "messages[0].content"},
      {"/v1/chat/completions", R"({"messages": [{"role": "robot", "content": "a"}]})", 400, "messages[0].role"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "a", "mood": 1}]})", 400,
       "messages[0].mood"},
      {"/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", long_prompt}}}}}.dump(), 400,
       "messages"},
      {"/v1/completions", std::string(70000, ' '), 413, ""},
      {"/tokenize", R"({"content": 5})", 400, "content"},
      {"/detokenize", R"({"tokens": [100000]})", 400, "tokens"},
      {"/v1/nothing", "{}", 404, ""},
  };
  for (const auto& t : cases) expect_error(post(*c, t.path, t.body), t.status, t.param, t.body.substr(0, 80));
  EXPECT_EQ(post(*c, "/v1/completions", json{{"prompt", long_prompt}}).body["error"]["code"], "context_length_exceeded");
  Reply ok = post(*c, "/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 4}});
  EXPECT_EQ(ok.status, 200) << ok.raw;
  EXPECT_TRUE(server.alive());
}

TEST(ServeErrors, ApiKeyIsCheckedOnEveryV1Route) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--api-key", "sesame"}), "");
  auto c = server.client();
  auto models = c->Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 401);
  EXPECT_EQ(json::parse(models->body)["error"]["type"], "authentication_error");
  std::string body = json{{"prompt", "Once"}, {"max_tokens", 2}}.dump();
  EXPECT_EQ(post(*c, "/v1/completions", body, {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(post(*c, "/v1/chat/completions", body).status, 401);
  EXPECT_EQ(post(*c, "/v1/completions", body, {{"Authorization", "Bearer sesame"}}).status, 200);
  auto health = c->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(ServeErrors, FullQueueGets429WithRetryAfterAndSlowRequestsTimeOut) {
  REQUIRE_MODEL(model, kSynthetic);
  ServeProcess server;
  // 4000 tokens of this small model take longer than 0.1 s even on a fast, quiet machine.
  ASSERT_EQ(server.start(model, {"--ctx-size", "4096", "--max-seqs", "1", "--max-queue", "1", "--request-timeout",
                                 "0.1"}),
            "");
  json slow = {{"prompt", "Once upon a time"}, {"max_tokens", 4000}, {"ignore_eos", true}};
  std::vector<Reply> replies(5);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < replies.size(); ++i)
    threads.emplace_back([&, i] {
      auto c = server.client();
      replies[i] = post(*c, "/v1/completions", slow);
    });
  for (auto& t : threads) t.join();
  int busy = 0, timed_out = 0;
  for (const auto& r : replies) {
    if (r.status == 429) {
      ++busy;
      EXPECT_EQ(r.retry_after, "1");
      EXPECT_EQ(r.body["error"]["type"], "rate_limit_error");
    } else if (r.status == 408) {
      ++timed_out;
      EXPECT_EQ(r.body["error"]["code"], "request_timeout");
    } else {
      ADD_FAILURE() << r.status << " " << r.raw;
    }
  }
  EXPECT_GE(busy, 1);
  EXPECT_GE(timed_out, 1);
  auto c = server.client();
  auto m = wait_metrics(*c, [](auto& m) { return m["tps_kv_blocks_used"] == 0 && m["tps_requests_running"] == 0; });
  EXPECT_EQ(m["tps_kv_blocks_used"], 0);
  EXPECT_TRUE(server.alive());
}

// A bounded random-request loop: malformed and mutated bodies never take the server down
// and always get a JSON answer.
TEST(ServeErrors, RandomBodiesNeverBreakTheServer) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--ctx-size", "96", "--max-body", "4096"}), "");
  auto c = server.client();
  std::mt19937 rng(1234);
  const std::string base =
      R"({"prompt":"Once upon a time","max_tokens":3,"temperature":0.5,"top_p":0.9,"stop":["x"],"seed":1,)"
      R"("logprobs":2,"stream":false})";
  const std::string chat_base = R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"stream":true})";
  const std::vector<std::string> values = {"null", "-1", "0", "1e308", "\"\"", "[]", "{}", "true", "[1,2]",
                                           "\"\\ud800\"", "99999999999999999999", "0.5", "[\"a\"]"};
  const std::vector<std::string> keys = {"prompt",     "max_tokens", "temperature", "top_p",     "top_k",
                                         "min_p",      "stop",       "seed",        "logprobs",  "n",
                                         "stream",     "messages",   "ignore_eos",  "top_logprobs", "stream_options"};
  for (int i = 0; i < 150; ++i) {
    std::string body = (i % 3 == 0) ? chat_base : base;
    switch (rng() % 4) {
      case 0:  // flip bytes
        for (int k = 0; k < 3; ++k) body[rng() % body.size()] = static_cast<char>(rng() % 256);
        break;
      case 1:  // truncate
        body.resize(rng() % body.size());
        break;
      case 2:  // a field with a value of a random type
        body = "{\"" + keys[rng() % keys.size()] + "\":" + values[rng() % values.size()] + "," + body.substr(1);
        break;
      default:  // random bytes
        body.assign(rng() % 200, ' ');
        for (auto& ch : body) ch = static_cast<char>(rng() % 256);
    }
    const char* path = (i % 3 == 0) ? "/v1/chat/completions" : "/v1/completions";
    auto res = c->Post(path, body, "application/json");
    ASSERT_TRUE(res) << "no answer to " << body;
    EXPECT_TRUE(res->status == 200 || res->status == 400 || res->status == 413) << res->status << " " << body;
    if (res->status >= 400) {
      EXPECT_TRUE(json::parse(res->body, nullptr, false).contains("error")) << res->body;
    }
  }
  Reply ok = post(*c, "/v1/completions", json{{"prompt", "Once upon a time"}, {"max_tokens", 4}});
  EXPECT_EQ(ok.status, 200);
  EXPECT_TRUE(server.alive());
}

}  // namespace tps::testing
