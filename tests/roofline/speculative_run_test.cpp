#include "roofline/speculative_run.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "roofline/estimator.h"

namespace tps {
namespace {

// 2 repetitions of 64 tokens: 20 verify steps drafted 60 tokens and kept 30, so 98 steps
// made the 128 tokens; verifying took half the decode time and drafting 5 %.
nlohmann::json spec_row() {
  return {{"speculative",
           {{"drafter", "ngram"},
            {"verify_steps", 20},
            {"drafted_tokens", 60},
            {"accepted_tokens", 30},
            {"verify_cost_ratio", 1.2},
            {"verify_share", 0.5},
            {"draft_share", 0.05},
            {"speedup", 1.3}}}};
}

TEST(SpeculativeRun, FiguresFollowFromTheCounts) {
  std::optional<SpeculativeRun> r = parse_speculative_run(spec_row(), 128, "row");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->drafter, "ngram");
  EXPECT_DOUBLE_EQ(r->mean_draft_length, 3);
  EXPECT_DOUBLE_EQ(r->acceptance_rate, 0.5);
  EXPECT_DOUBLE_EQ(r->mean_accepted_length, 1.5);
  EXPECT_DOUBLE_EQ(r->verify_step_share, 20.0 / 98);
  EXPECT_DOUBLE_EQ(r->draft_cost, 0.05 / 0.5 * 1.2);
  // (1 + f L) / (1 + f (r - 1 + d)) = (98 + 30) / (98 + 20 x 0.32).
  EXPECT_NEAR(r->predicted_speedup(), 128 / 104.4, 1e-12);
  // Every draft kept: L = k = 3.
  EXPECT_NEAR(r->predicted_speedup(1.0), 158 / 104.4, 1e-12);
  // Its own per-token acceptance gives back its own mean accepted length.
  EXPECT_NEAR(r->predicted_speedup(r->per_token_acceptance()), r->predicted_speedup(), 1e-9);
  EXPECT_NEAR(speculative_tokens_per_step(r->per_token_acceptance(), 3) - 1, 1.5, 1e-9);
}

TEST(SpeculativeRun, RowsWithoutOneAndMalformedOnes) {
  EXPECT_FALSE(parse_speculative_run({{"test", "tg64"}}, 128, "row").has_value());
  nlohmann::json more_kept = spec_row();
  more_kept["speculative"]["accepted_tokens"] = 61;
  EXPECT_THROW(parse_speculative_run(more_kept, 128, "row"), Error);
  nlohmann::json too_many = spec_row();
  too_many["speculative"]["verify_steps"] = 120;  // 128 - 30 = 98 steps at most
  EXPECT_THROW(parse_speculative_run(too_many, 128, "row"), Error);
  nlohmann::json missing = spec_row();
  missing["speculative"].erase("verify_cost_ratio");
  try {
    parse_speculative_run(missing, 128, "results[1]");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("results[1].speculative: needs the number 'verify_cost_ratio'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tps
