#include "engine/stop_strings.h"

#include <gtest/gtest.h>

namespace tps {

TEST(StopStringFilter, PassesTextThroughWithoutStops) {
  StopStringFilter f({});
  EXPECT_EQ(f.push("hello"), "hello");
  EXPECT_EQ(f.push(" world"), " world");
  EXPECT_EQ(f.finish(), "");
  EXPECT_FALSE(f.stopped());
}

TEST(StopStringFilter, HoldsBackAPossibleStartOfAStopString) {
  StopStringFilter f({"</s>", "END"});
  EXPECT_EQ(f.push("abc<"), "abc");   // "<" may start "</s>"
  EXPECT_EQ(f.push("/"), "");         // "</" still may
  EXPECT_EQ(f.push("x E"), "</x ");   // ruled out; "E" may start "END"
  EXPECT_EQ(f.push("Nd"), "ENd");
  EXPECT_EQ(f.finish(), "");
}

TEST(StopStringFilter, StopsBeforeTheFirstStopStringAcrossPushes) {
  StopStringFilter f({"world", "lo w"});
  EXPECT_EQ(f.push("hel"), "he");     // "l" may start "lo w"
  EXPECT_EQ(f.push("lo wor"), "l");   // "lo w" is found, before "world" could complete
  EXPECT_TRUE(f.stopped());
  EXPECT_EQ(f.push("more"), "");
  EXPECT_EQ(f.finish(), "");
}

TEST(StopStringFilter, EarliestStopWins) {
  StopStringFilter f({"cd", "b"});
  EXPECT_EQ(f.push("abcd"), "a");
  EXPECT_TRUE(f.stopped());
}

TEST(StopStringFilter, HeldTextThatIsNoStopIsReleasedOnTheNextPush) {
  StopStringFilter f({"END", "\n\n"});
  EXPECT_EQ(f.push("EN"), "");
  EXPECT_EQ(f.push("X"), "ENX");
  EXPECT_EQ(f.push("a\n"), "a");
  EXPECT_EQ(f.push("b"), "\nb");
}

TEST(StopStringFilter, FinishReleasesHeldText) {
  StopStringFilter f({"STOP"});
  EXPECT_EQ(f.push("go ST"), "go ");
  EXPECT_EQ(f.finish(), "ST");
  EXPECT_FALSE(f.stopped());
}

}  // namespace tps
