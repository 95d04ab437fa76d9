#include "server/stop_matcher.h"

#include <gtest/gtest.h>

namespace tps {

TEST(StopMatcher, PassesTextWithoutStops) {
  StopMatcher m({});
  EXPECT_EQ(m.push("hello "), "hello ");
  EXPECT_EQ(m.push("world"), "world");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, HoldsBackAPossibleStartAndCutsAtTheStop) {
  StopMatcher m({"END", "\n\n"});
  EXPECT_EQ(m.push("abc E"), "abc ");
  EXPECT_EQ(m.push("N"), "");
  EXPECT_EQ(m.push("D and more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("x"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, ReleasesHeldTextWhenItTurnsOutNotToBeAStop) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("EN"), "");
  EXPECT_EQ(m.push("X"), "ENX");
  EXPECT_EQ(m.push("E"), "");
  EXPECT_EQ(m.flush(), "E");
}

TEST(StopMatcher, EarliestStopWins) {
  StopMatcher m({"cd", "b"});
  EXPECT_EQ(m.push("abcd"), "a");
}

}  // namespace tps
