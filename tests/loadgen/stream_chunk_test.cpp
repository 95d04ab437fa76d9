#include "loadgen/stream_chunk.h"

#include <gtest/gtest.h>

namespace tps::loadgen {
namespace {

TEST(StreamChunk, ReadsCompletionText) {
  auto c = parse_stream_chunk(R"({"choices":[{"index":0,"text":" hi","finish_reason":null}]})");
  EXPECT_EQ(c.text, " hi");
  EXPECT_FALSE(c.completion_tokens);
  EXPECT_TRUE(c.finish_reason.empty());
}

TEST(StreamChunk, ReadsChatDeltaAndRoleOnlyChunks) {
  auto role = parse_stream_chunk(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})");
  EXPECT_TRUE(role.text.empty());
  auto content = parse_stream_chunk(R"({"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]})");
  EXPECT_EQ(content.text, "x");
  EXPECT_EQ(content.finish_reason, "stop");
  auto reasoning = parse_stream_chunk(R"({"choices":[{"delta":{"reasoning_content":"think"}}]})");
  EXPECT_EQ(reasoning.text, "think");
}

TEST(StreamChunk, ReadsUsageAndLogprobCounts) {
  auto c = parse_stream_chunk(
      R"({"choices":[{"text":"ab","logprobs":{"tokens":["a","b"]}}],"usage":{"prompt_tokens":5,"completion_tokens":9}})");
  EXPECT_EQ(c.completion_tokens, 9);
  EXPECT_EQ(c.prompt_tokens, 5);
  EXPECT_EQ(c.logprob_tokens, 2);
  auto chat = parse_stream_chunk(R"({"choices":[{"delta":{"content":"ab"},"logprobs":{"content":[{},{},{}]}}]})");
  EXPECT_EQ(chat.logprob_tokens, 3);
  auto final_usage = parse_stream_chunk(R"({"choices":[],"usage":{"completion_tokens":12}})");
  EXPECT_TRUE(final_usage.text.empty());
  EXPECT_EQ(final_usage.completion_tokens, 12);
}

TEST(StreamChunk, ReportsDoneErrorsAndGarbage) {
  EXPECT_TRUE(parse_stream_chunk("[DONE]").done);
  EXPECT_EQ(parse_stream_chunk(R"({"error":{"message":"overloaded"}})").error, "overloaded");
  EXPECT_NE(parse_stream_chunk("not json").error.find("not JSON"), std::string::npos);
}

}  // namespace
}  // namespace tps::loadgen
