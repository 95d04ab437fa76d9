// Integration tests: the real `tps serve` on loopback, spoken to over HTTP.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include <cmath>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "serve_helpers.h"

namespace tps::testing {
namespace {

json completion(const std::string& prompt, int max_tokens) {
  return {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

json chat(const std::string& content, int max_tokens) {
  return {{"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

const std::vector<std::string> kPrompts = {
    "Once upon a time",    "Tom had a big",       "The little dog",      "Lily wanted to",
    "One day, a bird",     "The sun was",         "Sam and his mom",     "There was a tree",
    "A girl named Sue",    "The boy saw a",       "In the park",         "Max liked to",
    "The cat was sad",     "Ben found a box",     "It was a cold day",   "Mia and Tim went"};

// Sends a completion request on a raw socket and returns the socket (-1 on failure),
// so the test can hang up whenever it likes.
int send_raw_request(int port, const json& body) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  std::string b = body.dump();
  std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(b.size()) + "\r\n\r\n" + b;
  send(fd, req.data(), req.size(), 0);
  return fd;
}

// Opens a streaming request, reads a little of the answer and hangs up.
bool stream_then_disconnect(int port, const json& body) {
  int fd = send_raw_request(port, body);
  if (fd < 0) return false;
  std::string got;
  char buf[4096];
  while (std::count(got.begin(), got.end(), '\n') < 20) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, n);
  }
  close(fd);
  return got.find("data: ") != std::string::npos;
}

}  // namespace

TEST(Serve, GreedyOutputEqualsTpsRunOnBothEndpointsStreamingOrNot) {
  REQUIRE_MODEL(model, kStories);
  auto run = run_json(std::string(TPS_BINARY) + " run -m " + model + " -p 'Once upon a time' -n 24 --temp 0 -t 1 --json");
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  auto c = server.client();

  Reply r = post(*c, "/v1/completions", completion("Once upon a time", 24));
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["object"], "text_completion");
  EXPECT_EQ(r.body["choices"][0]["text"], run["text"]);
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r.body["usage"]["prompt_tokens"], run["prompt_tokens"]);
  EXPECT_EQ(r.body["usage"]["completion_tokens"], 24);
  EXPECT_EQ(r.body["usage"]["total_tokens"], r.body["usage"]["prompt_tokens"].get<int>() + 24);
  EXPECT_TRUE(r.body["usage"]["prompt_tokens_details"].contains("cached_tokens"));
  for (const char* k : {"queue_ms", "prefill_ms", "decode_ms", "prompt_per_second", "predicted_per_second"})
    EXPECT_TRUE(r.body["timings"][k].is_number()) << k;

  json sreq = completion("Once upon a time", 24);
  sreq["stream"] = true;
  sreq["stream_options"] = {{"include_usage", true}};
  StreamResult s = post_stream(*c, "/v1/completions", sreq);
  ASSERT_EQ(s.status, 200);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.text, run["text"]);
  ASSERT_GE(s.chunks.size(), 3u);
  const json& usage = s.chunks.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 24);
  const json& last = s.chunks[s.chunks.size() - 2];
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(last.contains("timings"));

  Reply cr = post(*c, "/v1/chat/completions", chat("Tell me a story", 16));
  ASSERT_EQ(cr.status, 200) << cr.raw;
  EXPECT_EQ(cr.body["object"], "chat.completion");
  EXPECT_EQ(cr.body["choices"][0]["message"]["role"], "assistant");
  json creq = chat("Tell me a story", 16);
  creq["stream"] = true;
  StreamResult cs = post_stream(*c, "/v1/chat/completions", creq);
  ASSERT_EQ(cs.status, 200);
  EXPECT_TRUE(cs.done);
  EXPECT_EQ(cs.chunks.front()["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(cs.chunks.front()["object"], "chat.completion.chunk");
  EXPECT_EQ(cs.text, cr.body["choices"][0]["message"]["content"]);
  EXPECT_FALSE(cs.chunks.back().contains("usage"));  // not asked for
}

TEST(Serve, SameOutputAloneAndAmongSixteenConcurrentRequests) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--max-seqs", "16", "--batch-tokens", "48"}), "");
  std::vector<std::string> alone(kPrompts.size());
  {
    auto c = server.client();
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      Reply r = post(*c, "/v1/completions", completion(kPrompts[i], 20));
      ASSERT_EQ(r.status, 200) << r.raw;
      alone[i] = r.body["choices"][0]["text"];
    }
  }
  // The same prompts again with the prefix cache cold: a fresh server, alongside.
  ServeProcess server2;
  ASSERT_EQ(server2.start(model, {"--max-seqs", "16", "--batch-tokens", "48"}), "");
  std::vector<std::string> together(kPrompts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kPrompts.size(); ++i)
    threads.emplace_back([&, i] {
      auto c = server2.client();
      Reply r = post(*c, "/v1/completions", completion(kPrompts[i], 20));
      together[i] = r.status == 200 ? r.body["choices"][0]["text"].get<std::string>() : std::to_string(r.status) + r.raw;
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < kPrompts.size(); ++i) EXPECT_EQ(together[i], alone[i]) << kPrompts[i];
  auto c = server2.client();
  auto m = get_metrics(*c);
  EXPECT_EQ(m["tps_requests_total"], 16);
  // Some steps carried several sequences.
  EXPECT_LT(m["tps_steps_total"], 16 * 20);
}

TEST(Serve, PrefixCacheHitsAreCountedAndGiveTheSameOutput) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  auto c = server.client();
  std::string prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends. One day, she saw a big red ball";
  Reply a = post(*c, "/v1/completions", completion(prompt, 16));
  Reply b = post(*c, "/v1/completions", completion(prompt, 16));
  ASSERT_EQ(a.status, 200);
  ASSERT_EQ(b.status, 200);
  int prompt_tokens = a.body["usage"]["prompt_tokens"];
  EXPECT_EQ(a.body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  int cached = b.body["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GE(cached, prompt_tokens / 16 * 16 - 1);
  EXPECT_GT(cached, 0);
  EXPECT_EQ(b.body["choices"][0]["text"], a.body["choices"][0]["text"]);
  auto m = get_metrics(*c);
  EXPECT_EQ(m["tps_prompt_cached_tokens_total"], cached);
  EXPECT_GE(m["tps_prefix_cache_hit_tokens_total"], cached);
  EXPECT_GT(m["tps_prefix_cache_hit_rate"], 0);
}

TEST(Serve, StopStringsAndLogprobs) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  auto c = server.client();
  Reply full = post(*c, "/v1/completions", completion("Once upon a time", 24));
  std::string text = full.body["choices"][0]["text"];
  ASSERT_NE(text.find("Lily"), std::string::npos) << text;
  json req = completion("Once upon a time", 24);
  req["stop"] = {"Lily", "zzz"};
  Reply r = post(*c, "/v1/completions", req);
  EXPECT_EQ(r.body["choices"][0]["text"], text.substr(0, text.find("Lily")));
  EXPECT_EQ(r.body["choices"][0]["finish_reason"], "stop");
  req["stream"] = true;
  StreamResult s = post_stream(*c, "/v1/completions", req);
  EXPECT_EQ(s.text, text.substr(0, text.find("Lily")));

  json lreq = completion("Once upon a time", 5);
  lreq["logprobs"] = 3;
  Reply l = post(*c, "/v1/completions", lreq);
  const json& lp = l.body["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    // Greedy: the chosen token is the most likely one, and its log-probability is the
    // best of its alternatives (which engine_test checks against log_softmax).
    const json& top = lp["top_logprobs"][i];
    ASSERT_EQ(top.size(), 3u);
    const std::string token = lp["tokens"][i].get<std::string>();
    ASSERT_TRUE(top.contains(token)) << top.dump();
    const double chosen = lp["token_logprobs"][i].get<double>();
    EXPECT_DOUBLE_EQ(top[token].get<double>(), chosen);
    double mass = 0;
    for (const auto& [t, v] : top.items()) {
      EXPECT_LE(v.get<double>(), chosen) << t;
      mass += std::exp(v.get<double>());
    }
    EXPECT_LE(mass, 1.0 + 1e-6);
    EXPECT_LE(chosen, 0.0);
  }
  json creq = chat("Hi", 4);
  creq["logprobs"] = true;
  creq["top_logprobs"] = 2;
  Reply cl = post(*c, "/v1/chat/completions", creq);
  ASSERT_EQ(cl.status, 200) << cl.raw;
  const json& content = cl.body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 4u);
  EXPECT_EQ(content[0]["top_logprobs"].size(), 2u);
}

TEST(Serve, LogitBiasBansAndForcesTokensOnBothEndpoints) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  auto c = server.client();
  json req = completion("Once upon a time", 6);
  req["logprobs"] = 1;
  req["return_tokens_as_token_ids"] = true;  // tokens named "token_id:N"
  Reply plain = post(*c, "/v1/completions", req);
  ASSERT_EQ(plain.status, 200) << plain.raw;
  const std::string first = plain.body["choices"][0]["logprobs"]["tokens"][0];
  ASSERT_EQ(first.rfind("token_id:", 0), 0u) << first;
  // Banned, the greedy first token gives way.
  req["logit_bias"] = {{first.substr(9), -100}};
  Reply banned = post(*c, "/v1/completions", req);
  ASSERT_EQ(banned.status, 200) << banned.raw;
  EXPECT_NE(banned.body["choices"][0]["logprobs"]["tokens"][0], first) << banned.raw;
  req["stream"] = true;
  EXPECT_EQ(post_stream(*c, "/v1/completions", req).text, banned.body["choices"][0]["text"]);
  // Forced: +100 on one token makes every step pick it, in chat too.
  json creq = chat("Hi", 3);
  creq["logprobs"] = true;
  creq["return_tokens_as_token_ids"] = true;
  creq["logit_bias"] = {{"300", 100}};
  Reply forced = post(*c, "/v1/chat/completions", creq);
  ASSERT_EQ(forced.status, 200) << forced.raw;
  const json& steps = forced.body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(steps.size(), 3u) << forced.raw;
  for (const json& step : steps) EXPECT_EQ(step["token"], "token_id:300") << forced.raw;
  creq["logit_bias"] = {{"100000", 1}};
  Reply bad = post(*c, "/v1/chat/completions", creq);
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["param"], "logit_bias") << bad.raw;
}

// n choices are n sequences of the one prompt, choice i drawn with seed + i: each is
// what a request of n = 1 with that seed gets, streamed or not, on both endpoints.
TEST(Serve, ChoicesAreTheSequencesOfTheirSeeds) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  auto c = server.client();
  auto sampled = [](json req, uint64_t seed, int n) {
    req["temperature"] = 1.0;
    req["seed"] = seed;
    req["ignore_eos"] = true;
    req["n"] = n;
    return req;
  };
  auto text_of = [](const json& choice) {
    return choice.contains("message") ? choice["message"]["content"].get<std::string>() : choice["text"].get<std::string>();
  };
  for (const auto& [path, base] : {std::pair{"/v1/completions", completion("Once upon a time", 12)},
                                   std::pair{"/v1/chat/completions", chat("Tell me a story", 12)}}) {
    SCOPED_TRACE(path);
    Reply three = post(*c, path, sampled(base, 41, 3));
    ASSERT_EQ(three.status, 200) << three.raw;
    const json& choices = three.body["choices"];
    ASSERT_EQ(choices.size(), 3u) << three.raw;
    std::set<std::string> texts;
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(choices[i]["index"], i);
      EXPECT_EQ(choices[i]["finish_reason"], "length");
      Reply one = post(*c, path, sampled(base, 41 + i, 1));
      EXPECT_EQ(text_of(choices[i]), text_of(one.body["choices"][0])) << "choice " << i;
      texts.insert(text_of(choices[i]));
    }
    EXPECT_GT(texts.size(), 1u) << "the choices drew the same tokens";
    EXPECT_EQ(three.body["usage"]["completion_tokens"], 36) << three.raw;
    EXPECT_EQ(three.body["usage"]["total_tokens"],
              three.body["usage"]["prompt_tokens"].get<int>() + 36);

    // Streamed: each choice's chunks carry its index and end with its finish_reason;
    // one [DONE], after the usage of all of them.
    json req = sampled(base, 41, 3);
    req["stream"] = true;
    req["stream_options"] = {{"include_usage", true}};
    StreamResult s = post_stream(*c, path, req);
    ASSERT_TRUE(s.done);
    std::map<int, std::string> streamed;
    std::map<int, int> finishes;
    for (const json& chunk : s.chunks) {
      if (chunk.contains("usage") && chunk["choices"].empty()) {
        EXPECT_EQ(chunk["usage"]["completion_tokens"], 36);
        continue;
      }
      for (const json& ch : chunk["choices"]) {
        const int i = ch["index"];
        if (ch.contains("delta") && ch["delta"].contains("content")) streamed[i] += ch["delta"]["content"].get<std::string>();
        if (ch.contains("text")) streamed[i] += ch["text"].get<std::string>();
        if (!ch["finish_reason"].is_null()) ++finishes[i];
      }
    }
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(streamed[i], text_of(choices[i])) << "choice " << i;
      EXPECT_EQ(finishes[i], 1) << "choice " << i;
    }
  }
  // More choices than the queue can hold could never be served: a 400, not a 429 to retry.
  ServeProcess small;
  ASSERT_EQ(small.start(model, {"--max-queue", "2"}), "");
  json many = completion("Once upon a time", 4);
  many["n"] = 3;
  Reply refused = post(*small.client(), "/v1/completions", many);
  EXPECT_EQ(refused.status, 400) << refused.raw;
  EXPECT_EQ(refused.body["error"]["param"], "n") << refused.raw;
  many["n"] = 2;
  EXPECT_EQ(post(*small.client(), "/v1/completions", many).status, 200);
  // Greedy choices are all the same.
  json greedy = completion("Once upon a time", 10);
  greedy["n"] = 2;
  Reply g = post(*c, "/v1/completions", greedy);
  ASSERT_EQ(g.body["choices"].size(), 2u) << g.raw;
  EXPECT_EQ(g.body["choices"][0]["text"], g.body["choices"][1]["text"]);
}

TEST(Serve, PreemptionUnderTinyKvCacheCompletesEveryRequestCorrectly) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  // 8 blocks of 16 = 128 positions for four sequences of about 70 each.
  ASSERT_EQ(server.start(model, {"--kv-blocks", "8", "--max-seqs", "4", "--no-prefix-cache"}), "");
  std::vector<std::string> alone(4), together(4);
  auto req = [&](size_t i) {
    json r = completion(kPrompts[i], 60);
    r["ignore_eos"] = true;
    return r;
  };
  {
    auto c = server.client();
    for (size_t i = 0; i < 4; ++i) alone[i] = post(*c, "/v1/completions", req(i)).body["choices"][0]["text"];
  }
  // The four must overlap in time to run out of blocks; on a busy machine one round may
  // not, so rounds repeat (each checked) until the server reports a preemption.
  auto c = server.client();
  std::map<std::string, double> m;
  for (int round = 0; round < 5; ++round) {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < 4; ++i)
      threads.emplace_back([&, i] {
        auto ci = server.client();
        Reply r = post(*ci, "/v1/completions", req(i));
        together[i] = r.status == 200 ? r.body["choices"][0]["text"].get<std::string>() : r.raw;
      });
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(together[i], alone[i]) << "round " << round << " request " << i;
    m = wait_metrics(*c, [](auto& m) { return m["tps_kv_blocks_used"] == 0; });
    if (m["tps_preemptions_total"] > 0) break;
  }
  EXPECT_GT(m["tps_preemptions_total"], 0);
  EXPECT_EQ(m["tps_kv_blocks_used"], 0);
}

TEST(Serve, ClientDisconnectCancelsTheRequestAndFreesItsBlocks) {
  REQUIRE_MODEL(model, kSynthetic);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--ctx-size", "2048"}), "");
  json req = {{"prompt", "Once upon a time"}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}};
  ASSERT_TRUE(stream_then_disconnect(server.port(), req));
  auto c = server.client();
  auto m = wait_metrics(*c, [](auto& m) {
    return m["tps_requests_finished_total{reason=\"cancelled\"}"] == 1 && m["tps_kv_blocks_used"] == 0;
  });
  EXPECT_EQ(m["tps_requests_finished_total{reason=\"cancelled\"}"], 1);
  EXPECT_LT(m["tps_generated_tokens_total"], 2000);
  EXPECT_EQ(m["tps_requests_running"], 0);
  EXPECT_EQ(m["tps_kv_blocks_used"], 0);
}

TEST(Serve, NonStreamingClientDisconnectCancelsTheRequestAndFreesItsBlocks) {
  REQUIRE_MODEL(model, kSynthetic);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--ctx-size", "2048"}), "");
  json req = {{"prompt", "Once upon a time"}, {"max_tokens", 2000}, {"ignore_eos", true}};
  int fd = send_raw_request(server.port(), req);
  ASSERT_GE(fd, 0);
  auto c = server.client();
  // Hang up only once the sequence holds blocks: then they must come back.
  auto running = wait_metrics(*c, [](auto& m) { return m["tps_requests_running"] == 1 && m["tps_kv_blocks_used"] > 0; });
  EXPECT_GT(running["tps_kv_blocks_used"], 0);
  close(fd);
  auto m = wait_metrics(*c, [](auto& m) {
    return m["tps_requests_finished_total{reason=\"cancelled\"}"] == 1 && m["tps_kv_blocks_used"] == 0;
  });
  EXPECT_EQ(m["tps_requests_finished_total{reason=\"cancelled\"}"], 1);
  EXPECT_EQ(m["tps_requests_finished_total{reason=\"length\"}"], 0);
  EXPECT_LT(m["tps_generated_tokens_total"], 2000);
  EXPECT_EQ(m["tps_requests_running"], 0);
  EXPECT_EQ(m["tps_kv_blocks_used"], 0);
  // The server goes on serving.
  Reply ok = post(*c, "/v1/completions", completion("Once upon a time", 2));
  EXPECT_EQ(ok.status, 200) << ok.raw;
}

TEST(Serve, MetricsParseAndCountersAddUp) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  auto c = server.client();
  int prompt = 0, generated = 0;
  for (int i = 0; i < 3; ++i) {
    Reply r = post(*c, "/v1/completions", completion(kPrompts[i], 5 + i));
    prompt += r.body["usage"]["prompt_tokens"].get<int>();
    generated += r.body["usage"]["completion_tokens"].get<int>();
  }
  json s = chat("Hello", 4);
  s["stream"] = true;
  s["stream_options"] = {{"include_usage", true}};
  StreamResult sr = post_stream(*c, "/v1/chat/completions", s);
  prompt += sr.chunks.back()["usage"]["prompt_tokens"].get<int>();
  generated += sr.chunks.back()["usage"]["completion_tokens"].get<int>();
  post(*c, "/v1/completions", std::string(R"({"prompt": 5})"));  // an error: counted apart
  auto m = wait_metrics(*c, [](auto& m) {
    return m["tps_request_errors_total{status=\"400\"}"] == 1 && m["tps_requests_running"] == 0;
  });
  EXPECT_EQ(m["tps_requests_total"], 4);
  EXPECT_EQ(m["tps_prompt_tokens_total"], prompt);
  EXPECT_EQ(m["tps_generated_tokens_total"], generated);
  EXPECT_EQ(m["tps_e2e_seconds_count"], 4);
  EXPECT_EQ(m["tps_ttft_seconds_count"], 4);
  EXPECT_EQ(m["tps_queue_seconds_count"], 4);
  EXPECT_EQ(m["tps_itl_seconds_count"], generated - 4);
  EXPECT_EQ(m["tps_e2e_seconds_bucket{le=\"+Inf\"}"], 4);
  EXPECT_EQ(m["tps_request_errors_total{status=\"400\"}"], 1);
  EXPECT_GT(m["tps_batch_size_count"], 0);
  EXPECT_EQ(m["tps_requests_running"], 0);
  EXPECT_EQ(m["tps_requests_waiting"], 0);
  EXPECT_GT(m["tps_kv_blocks_free"], 0);
  double by_reason = 0;
  for (const auto& [k, v] : m)
    if (k.rfind("tps_requests_finished_total{", 0) == 0) by_reason += v;
  EXPECT_EQ(by_reason, 4);
  // The access log has one JSON line per request.
  std::ifstream log(server.log_path());
  int lines = 0;
  for (std::string line; std::getline(log, line); ++lines) EXPECT_FALSE(json::parse(line, nullptr, false).is_discarded()) << line;
  EXPECT_GE(lines, 5);
}

TEST(Serve, ModelsHealthTokenizeDetokenize) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--alias", "stories"}), "");
  auto c = server.client();
  auto models = c->Get("/v1/models");
  ASSERT_TRUE(models);
  json mj = json::parse(models->body);
  EXPECT_EQ(mj["object"], "list");
  EXPECT_EQ(mj["data"][0]["id"], "stories");
  auto health = c->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  Reply t = post(*c, "/tokenize", json{{"content", "Once upon a time"}, {"add_special", true}});
  ASSERT_EQ(t.status, 200);
  ASSERT_FALSE(t.body["tokens"].empty());
  Reply d = post(*c, "/detokenize", json{{"tokens", t.body["tokens"]}});
  ASSERT_EQ(d.status, 200);
  EXPECT_EQ(d.body["content"], "Once upon a time");
  // Token-id prompts give the same continuation as the text.
  Reply a = post(*c, "/v1/completions", completion("Once upon a time", 8));
  Reply b = post(*c, "/v1/completions", json{{"prompt", post(*c, "/tokenize", json{{"content", "Once upon a time"}, {"add_special", true}}).body["tokens"]},
                                             {"max_tokens", 8}, {"temperature", 0}});
  EXPECT_EQ(b.body["choices"][0]["text"], a.body["choices"][0]["text"]);
}

}  // namespace tps::testing

namespace tps::testing {
namespace {

// --spec ngram: the same text as a server without it, batched requests included, with
// vLLM-style counters in /metrics; "speculative": false turns it off for one request.
TEST(Serve, SpeculativeNgramGivesTheSameTextAndCountsItsDrafts) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess plain, spec;
  ASSERT_EQ(plain.start(model), "");
  ASSERT_EQ(spec.start(model, {"--spec", "ngram", "--draft-max", "4"}), "");
  json req = {{"prompt", "Once upon a time, there was a little girl named Lily. She loved to play outside"},
              {"max_tokens", 96}, {"temperature", 0}, {"ignore_eos", true}};
  const Reply want = post(*plain.client(), "/v1/completions", req);
  ASSERT_EQ(want.status, 200) << want.raw;
  std::vector<std::thread> clients;
  std::vector<Reply> got(3);
  for (int i = 0; i < 3; ++i) clients.emplace_back([&, i] { got[i] = post(*spec.client(), "/v1/completions", req); });
  for (auto& t : clients) t.join();
  for (const Reply& r : got) EXPECT_EQ(r.body["choices"][0]["text"], want.body["choices"][0]["text"]) << r.raw;
  auto m = get_metrics(*spec.client());
  const double drafted = m["tps_spec_decode_num_draft_tokens_total"];
  EXPECT_GT(m["tps_spec_decode_num_drafts_total"], 0);
  EXPECT_GT(drafted, 0);
  EXPECT_LE(m["tps_spec_decode_num_accepted_tokens_total"], drafted);
  EXPECT_EQ(m["tps_spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"}"] >= 0, true);

  req["speculative"] = false;
  const Reply off = post(*spec.client(), "/v1/completions", req);
  EXPECT_EQ(off.body["choices"][0]["text"], want.body["choices"][0]["text"]);
  EXPECT_EQ(get_metrics(*spec.client())["tps_spec_decode_num_draft_tokens_total"], drafted);
  req["speculative"] = "yes";
  EXPECT_EQ(post(*spec.client(), "/v1/completions", req).status, 400);
}

TEST(Serve, BadSpeculativeFlagsAreOneLineErrors) {
  REQUIRE_MODEL(model, kStories);
  for (const std::string flags : {"--spec bogus", "--spec ngram --draft-max 0", "--draft-model /nonexistent.gguf"}) {
    const CommandResult r =
        run_command(std::string(TPS_BINARY) + " serve -m " + model + " --port 0 " + flags + " 2>&1 >/dev/null");
    EXPECT_EQ(r.status, 2) << flags << ": " << r.output;
    // The error is the last line; before it only serve's progress ("listening on ...").
    const size_t error = r.output.find("tps: error: ");
    EXPECT_NE(error, std::string::npos) << flags << ": " << r.output;
    EXPECT_EQ(r.output.find('\n', error), r.output.size() - 1) << flags << ": " << r.output;
    EXPECT_TRUE(error == 0 || r.output.rfind("tps serve: listening on ", 0) == 0) << flags << ": " << r.output;
  }
}

}  // namespace
}  // namespace tps::testing
