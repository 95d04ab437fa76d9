// The edges of OpenAI's API against the real `tps serve`: model names, null fields,
// GET /v1/models/{id}, 405 for a wrong method, 415 for a body that is not JSON.
#include <gtest/gtest.h>

#include "serve_helpers.h"

namespace tps::testing {
namespace {

void expect_openai_error(const Reply& r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.raw;
  ASSERT_TRUE(r.body.is_object() && r.body.contains("error")) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], code) << r.raw;
  EXPECT_TRUE(r.body["error"]["message"].is_string()) << r.raw;
  EXPECT_TRUE(r.body["error"].contains("type") && r.body["error"].contains("param")) << r.raw;
}

Reply get(httplib::Client& c, const std::string& path) {
  Reply r;
  auto res = c.Get(path);
  if (!res) return r;
  r.status = res->status;
  r.raw = res->body;
  r.body = json::parse(res->body, nullptr, false);
  return r;
}

TEST(ServeOpenAi, AnUnknownModelIs404ModelNotFoundAndEveryAliasIsServed) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--alias", "tiny", "--alias", "org/tiny-2"}), "");
  auto c = server.client();
  const json ask = {{"prompt", "Once"}, {"max_tokens", 2}};
  for (const std::string name : {"tiny", "org/tiny-2", "stories260K.gguf"}) {
    json body = ask;
    body["model"] = name;
    const Reply r = post(*c, "/v1/completions", body);
    EXPECT_EQ(r.status, 200) << name << ": " << r.raw;
    EXPECT_EQ(r.body["model"], name);
    const Reply m = get(*c, "/v1/models/" + name);
    EXPECT_EQ(m.status, 200) << name << ": " << m.raw;
    EXPECT_EQ(m.body["id"], name);
    EXPECT_EQ(m.body["object"], "model");
  }
  EXPECT_EQ(post(*c, "/v1/completions", ask).status, 200);  // no "model": the one served
  json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 2}, {"model", "gpt-4o"}};
  expect_openai_error(post(*c, "/v1/chat/completions", chat), 404, "model_not_found");
  chat["stream"] = true;
  const Reply streamed = post(*c, "/v1/chat/completions", chat);
  expect_openai_error(streamed, 404, "model_not_found");
  EXPECT_EQ(streamed.body["error"]["param"], "model");
  expect_openai_error(get(*c, "/v1/models/gpt-4o"), 404, "model_not_found");
  const Reply list = get(*c, "/v1/models");
  ASSERT_EQ(list.body["data"].size(), 1u) << list.raw;
  EXPECT_EQ(list.body["data"][0]["id"], "tiny");  // the first alias is the name reported
}

TEST(ServeOpenAi, NullIsNotGiven) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--ctx-size", "128"}), "");
  auto c = server.client();
  for (const char* field : {"temperature", "top_p", "top_k", "stop", "seed", "logprobs", "stream", "stream_options",
                            "presence_penalty", "n", "model", "user"}) {
    json body = {{"prompt", "Once"}, {"max_tokens", 3}, {field, nullptr}};
    const Reply r = post(*c, "/v1/completions", body);
    EXPECT_EQ(r.status, 200) << field << ": " << r.raw;
  }
  // max_tokens null: as if absent (chat: up to the context, here ended by the model).
  const json chat = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", nullptr},
                     {"temperature", nullptr}, {"top_logprobs", nullptr}, {"stop", nullptr}};
  const Reply r = post(*c, "/v1/chat/completions", chat);
  EXPECT_EQ(r.status, 200) << r.raw;
  // And temperature null samples as temperature absent (1), seeded alike.
  const json seeded = {{"prompt", "Once"}, {"max_tokens", 12}, {"seed", 7}};
  json with_null = seeded;
  with_null["temperature"] = nullptr;
  EXPECT_EQ(post(*c, "/v1/completions", with_null).body["choices"][0]["text"],
            post(*c, "/v1/completions", seeded).body["choices"][0]["text"]);
}

TEST(ServeOpenAi, AWrongMethodOnAKnownPathIs405WithAllow) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  auto c = server.client();
  struct Case {
    const char* method;
    const char* path;
    const char* allow;
  };
  for (const Case& t : {Case{"GET", "/v1/completions", "POST"}, Case{"GET", "/v1/chat/completions", "POST"},
                        Case{"POST", "/v1/models", "GET"}, Case{"DELETE", "/v1/models/x", "GET"},
                        Case{"PUT", "/health", "GET"}, Case{"GET", "/tokenize", "POST"}}) {
    httplib::Request req;
    req.method = t.method;
    req.path = t.path;
    if (std::string(t.method) != "GET") {
      req.body = "{}";
      req.set_header("Content-Type", "application/json");
    }
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    ASSERT_TRUE(c->send(req, res, error)) << t.method << " " << t.path;
    EXPECT_EQ(res.status, 405) << t.method << " " << t.path << ": " << res.body;
    EXPECT_EQ(res.get_header_value("Allow"), t.allow) << t.method << " " << t.path;
    EXPECT_EQ(json::parse(res.body, nullptr, false)["error"]["code"], "method_not_allowed") << res.body;
  }
  expect_openai_error(get(*c, "/v1/nothing"), 404, "not_found");
}

TEST(ServeOpenAi, ABodyThatIsNotJsonIs415AndJsonWithACharsetIsServed) {
  REQUIRE_MODEL(model, kStories);
  ServeProcess server;
  ASSERT_EQ(server.start(model), "");
  auto c = server.client();
  const std::string body = json{{"prompt", "Once"}, {"max_tokens", 2}}.dump();
  // A form body over 8 KiB used to get 413 from cpp-httplib's form parsing.
  const std::string big_form = "prompt=" + std::string(10000, 'a');
  for (const auto& [content_type, text] : std::vector<std::pair<std::string, std::string>>{
           {"text/plain", body}, {"application/x-www-form-urlencoded", big_form}, {"multipart/form-data", body}}) {
    auto res = c->Post("/v1/completions", text, content_type.c_str());
    ASSERT_TRUE(res) << content_type;
    EXPECT_EQ(res->status, 415) << content_type << ": " << res->body;
    EXPECT_EQ(json::parse(res->body, nullptr, false)["error"]["code"], "unsupported_media_type") << res->body;
  }
  for (const char* content_type : {"application/json; charset=utf-8", "Application/JSON"}) {
    auto res = c->Post("/v1/completions", body, content_type);
    ASSERT_TRUE(res) << content_type;
    EXPECT_EQ(res->status, 200) << content_type << ": " << res->body;
  }
  // No Content-Type at all is read as JSON; a POST without Content-Length gets 411.
  RawConnection bare(server.port());
  ASSERT_TRUE(bare.send(fmt::format("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n"
                                    "Connection: close\r\n\r\n{}",
                                    body.size(), body)));
  EXPECT_EQ(bare.receive(10).rfind("HTTP/1.1 200", 0), 0u);
  RawConnection unsized(server.port());
  ASSERT_TRUE(unsized.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\r\n"));
  const std::string answer = unsized.receive(10);
  EXPECT_EQ(answer.rfind("HTTP/1.1 411", 0), 0u) << answer;
  EXPECT_NE(answer.find("length_required"), std::string::npos) << answer;
}

}  // namespace
}  // namespace tps::testing
