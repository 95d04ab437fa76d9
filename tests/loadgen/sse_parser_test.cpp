#include "loadgen/sse_parser.h"

#include <gtest/gtest.h>

namespace tps::loadgen {
namespace {

std::vector<std::string> feed_in_pieces(const std::string& stream, size_t piece) {
  SseParser parser;
  std::vector<std::string> events;
  for (size_t i = 0; i < stream.size(); i += piece) parser.feed(std::string_view(stream).substr(i, piece), events);
  return events;
}

TEST(SseParser, SplitsEventsWhateverThePieces) {
  std::string stream = "data: {\"a\":1}\n\n: keep-alive comment\n\ndata:{\"b\":2}\r\n\r\ndata: [DONE]\n\n";
  for (size_t piece : {1, 2, 3, 7, 1000}) {
    auto events = feed_in_pieces(stream, piece);
    ASSERT_EQ(events.size(), 3u) << "piece " << piece;
    EXPECT_EQ(events[0], "{\"a\":1}");
    EXPECT_EQ(events[1], "{\"b\":2}");
    EXPECT_EQ(events[2], "[DONE]");
  }
}

TEST(SseParser, JoinsMultiLineDataAndSkipsOtherFields) {
  auto events = feed_in_pieces("event: message\nid: 7\ndata: one\ndata: two\n\nretry: 5\n\n", 4);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "one\ntwo");
}

TEST(SseParser, KeepsAnUnfinishedEventUntilItsBlankLine) {
  SseParser parser;
  std::vector<std::string> events;
  parser.feed("data: partial", events);
  EXPECT_TRUE(events.empty());
  parser.feed("\n", events);
  EXPECT_TRUE(events.empty());
  parser.feed("\r\n", events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "partial");
}

}  // namespace
}  // namespace tps::loadgen
