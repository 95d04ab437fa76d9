#include "server/openai_request.h"

#include <algorithm>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tps {

static const ApiLimits kLimits{512, 256};

static ApiError error_of(Endpoint e, const std::string& body) {
  try {
    parse_api_request(e, body, kLimits);
  } catch (const ApiError& err) {
    return err;
  }
  ADD_FAILURE() << "no error for " << body;
  return ApiError(0, "", "");
}

TEST(OpenAiRequest, ParsesACompletion) {
  ApiRequest r = parse_api_request(Endpoint::kCompletions,
                                   R"({"model":"m","prompt":"Once","max_tokens":8,"temperature":0,"top_p":0.5,
                                       "top_k":3,"min_p":0.1,"seed":7,"stop":["a","b"],"presence_penalty":0.5,
                                       "frequency_penalty":-1,"repetition_penalty":1.1,"logprobs":2,"n":1,
                                       "ignore_eos":true,"stream":true,
                                       "stream_options":{"include_usage":true,"continuous_usage_stats":true},
                                       "user":"x","echo":false})",
                                   kLimits);
  EXPECT_EQ(r.prompt_text, "Once");
  EXPECT_EQ(r.max_tokens, 8);
  EXPECT_EQ(r.sampling.temperature, 0);
  EXPECT_EQ(r.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.5f);
  EXPECT_EQ(r.sampling.seed, 7u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_FLOAT_EQ(r.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_TRUE(r.ignore_eos && r.stream && r.include_usage && r.continuous_usage);
}

TEST(OpenAiRequest, ParsesLogitBias) {
  ApiRequest r = parse_api_request(Endpoint::kChat,
                                   R"({"messages":[{"role":"user","content":"a"}],"logit_bias":{"5":-100,"511":2.5}})",
                                   kLimits);
  ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
  std::sort(r.sampling.logit_bias.begin(), r.sampling.logit_bias.end());
  EXPECT_EQ(r.sampling.logit_bias[0], (std::pair<int32_t, float>{5, -100.0f}));
  EXPECT_EQ(r.sampling.logit_bias[1], (std::pair<int32_t, float>{511, 2.5f}));
  EXPECT_TRUE(parse_api_request(Endpoint::kCompletions, R"({"prompt":"a","logit_bias":{}})", kLimits)
                  .sampling.logit_bias.empty());
}

TEST(OpenAiRequest, ParsesTokenPromptsAndChat) {
  ApiRequest t = parse_api_request(Endpoint::kCompletions, R"({"prompt":[1,2,3]})", kLimits);
  EXPECT_TRUE(t.prompt_is_tokens);
  EXPECT_EQ(t.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  ApiRequest c = parse_api_request(
      Endpoint::kChat,
      R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}],
          "logprobs":true,"top_logprobs":3,"max_completion_tokens":5})",
      kLimits);
  ASSERT_EQ(c.messages.size(), 2u);
  EXPECT_EQ(c.messages[1].content, "hi");
  EXPECT_EQ(c.top_logprobs, 3);
  EXPECT_EQ(c.max_tokens, 5);
}

// OpenAI's API reads null as "not given": every optional field at null parses as if absent.
TEST(OpenAiRequest, NullIsNotGivenForEveryOptionalField) {
  const char* fields[] = {"model", "max_tokens", "max_completion_tokens", "n_predict", "temperature", "top_p", "top_k",
                          "min_p", "seed", "stop", "presence_penalty", "frequency_penalty", "repetition_penalty",
                          "repeat_penalty", "logprobs", "n", "return_tokens_as_token_ids", "speculative", "ignore_eos",
                          "stream", "stream_options", "user", "echo", "best_of", "suffix", "logit_bias",
                          "response_format", "tools", "tool_choice", "metadata"};
  const ApiRequest completion = parse_api_request(Endpoint::kCompletions, R"({"prompt":"a","seed":1})", kLimits);
  const ApiRequest chat =
      parse_api_request(Endpoint::kChat, R"({"messages":[{"role":"user","content":"a"}],"seed":1})", kLimits);
  for (const char* f : fields) {
    for (bool is_chat : {false, true}) {
      nlohmann::json body = is_chat ? nlohmann::json::parse(R"({"messages":[{"role":"user","content":"a"}]})")
                                    : nlohmann::json{{"prompt", "a"}};
      body["seed"] = 1;
      body[f] = nullptr;
      ApiRequest r;
      ASSERT_NO_THROW(r = parse_api_request(is_chat ? Endpoint::kChat : Endpoint::kCompletions, body.dump(), kLimits))
          << body.dump();
      const ApiRequest& want = is_chat ? chat : completion;
      EXPECT_EQ(r.max_tokens, want.max_tokens) << f;
      EXPECT_EQ(r.sampling.temperature, want.sampling.temperature) << f;
      EXPECT_EQ(r.sampling.top_p, want.sampling.top_p) << f;
      EXPECT_EQ(r.sampling.top_k, want.sampling.top_k) << f;
      if (std::string(f) != "seed") {
        EXPECT_EQ(r.sampling.seed, want.sampling.seed) << f;
      }
      EXPECT_EQ(r.stop, want.stop) << f;
      EXPECT_EQ(r.top_logprobs, want.top_logprobs) << f;
      EXPECT_EQ(r.stream, want.stream) << f;
      EXPECT_EQ(r.speculative, want.speculative) << f;
      EXPECT_EQ(r.model, want.model) << f;
    }
  }
  const ApiRequest c = parse_api_request(
      Endpoint::kChat, R"({"messages":[{"role":"user","content":"a","name":null}],"top_logprobs":null,"logprobs":null})",
      kLimits);
  EXPECT_EQ(c.top_logprobs, -1);
  const ApiRequest s = parse_api_request(
      Endpoint::kCompletions, R"({"prompt":"a","stream":true,"stream_options":{"include_usage":null}})", kLimits);
  EXPECT_FALSE(s.include_usage);
  // A required field at null is missing, and says so.
  EXPECT_EQ(error_of(Endpoint::kCompletions, R"({"prompt":null})").param, "prompt");
  EXPECT_EQ(error_of(Endpoint::kChat, R"({"messages":null})").param, "messages");
}

TEST(OpenAiRequest, RejectsBadInputNamingTheField) {
  struct Case {
    Endpoint e;
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {Endpoint::kCompletions, "{not json", ""},
      {Endpoint::kCompletions, "[1,2]", ""},
      {Endpoint::kCompletions, R"({})", "prompt"},
      {Endpoint::kCompletions, R"({"prompt":""})", "prompt"},
      {Endpoint::kCompletions, R"({"prompt":[]})", "prompt"},
      {Endpoint::kCompletions, R"({"prompt":[1,9999]})", "prompt"},
      {Endpoint::kCompletions, R"({"prompt":7})", "prompt"},
      {Endpoint::kCompletions, R"({"prompt":"a","max_tokens":-1})", "max_tokens"},
      {Endpoint::kCompletions, R"({"prompt":"a","max_tokens":0})", "max_tokens"},
      {Endpoint::kCompletions, R"({"prompt":"a","max_tokens":1000000000000})", "max_tokens"},
      {Endpoint::kCompletions, R"({"prompt":"a","max_tokens":"5"})", "max_tokens"},
      {Endpoint::kCompletions, R"({"prompt":"a","max_tokens":2.5})", "max_tokens"},
      {Endpoint::kCompletions, R"({"prompt":"a","temperature":-0.1})", "temperature"},
      {Endpoint::kCompletions, R"({"prompt":"a","temperature":"hot"})", "temperature"},
      {Endpoint::kCompletions, R"({"prompt":"a","top_p":0})", "top_p"},
      {Endpoint::kCompletions, R"({"prompt":"a","top_p":1.5})", "top_p"},
      {Endpoint::kCompletions, R"({"prompt":"a","top_k":-2})", "top_k"},
      {Endpoint::kCompletions, R"({"prompt":"a","min_p":2})", "min_p"},
      {Endpoint::kCompletions, R"({"prompt":"a","presence_penalty":3})", "presence_penalty"},
      {Endpoint::kCompletions, R"({"prompt":"a","repetition_penalty":0})", "repetition_penalty"},
      {Endpoint::kCompletions, R"({"prompt":"a","n":17})", "n"},
      {Endpoint::kCompletions, R"({"prompt":"a","n":0})", "n"},
      {Endpoint::kCompletions, R"({"prompt":"a","stop":[""]})", "stop"},
      {Endpoint::kCompletions, R"({"prompt":"a","stop":5})", "stop"},
      {Endpoint::kCompletions, R"({"prompt":"a","logprobs":50})", "logprobs"},
      {Endpoint::kCompletions, R"({"prompt":"a","stream":"yes"})", "stream"},
      {Endpoint::kCompletions, R"({"prompt":"a","stream_options":{"include_usage":true}})", "stream_options"},
      {Endpoint::kCompletions, R"({"prompt":"a","max_token":5})", "max_token"},
      {Endpoint::kCompletions, R"({"prompt":"a","stream":true,"stream_options":{"x":1}})", "stream_options.x"},
      {Endpoint::kCompletions, R"({"prompt":"a","echo":true})", "echo"},
      {Endpoint::kCompletions, R"({"prompt":"a","seed":"x"})", "seed"},
      {Endpoint::kCompletions, R"({"prompt":"a","logit_bias":[1]})", "logit_bias"},
      {Endpoint::kCompletions, R"({"prompt":"a","logit_bias":{"x":1}})", "logit_bias"},
      {Endpoint::kCompletions, R"({"prompt":"a","logit_bias":{"-1":1}})", "logit_bias"},
      {Endpoint::kCompletions, R"({"prompt":"a","logit_bias":{"512":1}})", "logit_bias"},
      {Endpoint::kCompletions, R"({"prompt":"a","logit_bias":{"5 ":1}})", "logit_bias"},
      {Endpoint::kCompletions, R"({"prompt":"a","logit_bias":{"007":1}})", "logit_bias"},
      {Endpoint::kCompletions, R"({"prompt":"a","logit_bias":{"5":101}})", "logit_bias.5"},
      {Endpoint::kCompletions, R"({"prompt":"a","logit_bias":{"5":"up"}})", "logit_bias.5"},
      {Endpoint::kCompletions, R"({"messages":[{"role":"user","content":"a"}]})", "messages"},
      {Endpoint::kChat, R"({"messages":[]})", "messages"},
      {Endpoint::kChat, R"({"messages":"hi"})", "messages"},
      {Endpoint::kChat, R"({"messages":[{"role":"wizard","content":"a"}]})", "messages[0].role"},
      {Endpoint::kChat, R"({"messages":[{"content":"a"}]})", "messages[0].role"},
      {Endpoint::kChat, R"({"messages":[{"role":"user"}]})", "messages[0].content"},
      {Endpoint::kChat, R"({"messages":[{"role":"user","content":5}]})", "messages[0].content"},
      {Endpoint::kChat, R"({"messages":[{"role":"user","content":"a"}],"top_logprobs":2})", "top_logprobs"},
      {Endpoint::kChat, R"({"prompt":"a"})", "prompt"},
  };
  for (const auto& c : cases) {
    ApiError e = error_of(c.e, c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << " -> " << e.what();
    EXPECT_EQ(e.type, "invalid_request_error");
    if (*c.param) {
      EXPECT_NE(std::string(e.what()).find(c.param), std::string::npos) << e.what();
    }
  }
}

}  // namespace tps
