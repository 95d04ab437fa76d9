// The contract for greedy decoding of stories260K: the real binary prints exactly what
// llama2.c's run.c printed for 200 steps from the empty prompt (BOS alone).
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "test_fixtures.h"

namespace tps {

TEST(GoldenGreedy, Stories260KMatchesLlama2c) {
  TPS_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  TPS_REQUIRE_FIXTURE(golden, "golden/llama2c/greedy_n200.txt");
  std::ifstream in(golden, std::ios::binary);
  std::stringstream expected;
  expected << in.rdbuf();
  auto r = testing::run_command(std::string(TPS_BINARY) + " run -m " + model + " --temp 0 -n 200 -p '' -t 2 2>/dev/null");
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, expected.str());
}

}  // namespace tps
