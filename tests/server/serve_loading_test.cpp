// `tps serve` listens before it loads its model: from the first moment /health answers,
// 503 {"status": "loading"} while the model loads and 200 once it is ready, and the
// API answers 503 in OpenAI's shape until then. Never a refused connection.
#include <gtest/gtest.h>

#include "serve_helpers.h"

namespace tps::testing {
namespace {

TEST(ServeLoading, HealthIs503LoadingUntilTheModelIsReadyThen200) {
  // About a second to load here: long enough to be seen loading, polled every 10 ms.
  const std::string model = synthesized_model("smollm2-135m", "q8_0");
  ASSERT_FALSE(model.empty());
  ServeProcess server;
  ASSERT_EQ(server.start(model, {}, {.when_listening = true}), "");
  int loading = 0;
  bool ready = false, api_refused = false;
  const double give_up = now_seconds() + 120;
  while (!ready && now_seconds() < give_up) {
    // A new connection each time, as a prober makes: the API server takes over the
    // listening socket, not the loading server's kept-alive connections.
    auto c = server.client();
    auto res = c->Get("/health");
    ASSERT_TRUE(res) << "no answer from /health: " << httplib::to_string(res.error());
    if (res->status == 200) {
      EXPECT_EQ(json::parse(res->body)["status"], "ok");
      ready = true;
      break;
    }
    EXPECT_EQ(res->status, 503);
    EXPECT_EQ(json::parse(res->body, nullptr, false)["status"], "loading") << res->body;
    ++loading;
    if (!api_refused) {
      const Reply r = post(*c, "/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 2}});
      if (r.status == 503) {
        EXPECT_EQ(r.body["error"]["code"], "model_loading") << r.raw;
        api_refused = true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(ready);
  EXPECT_GT(loading, 0);
  EXPECT_TRUE(api_refused);
  const Reply r = post(*server.client(), "/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 2}});
  EXPECT_EQ(r.status, 200) << r.raw;
}

}  // namespace
}  // namespace tps::testing
