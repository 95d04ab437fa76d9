#include "roofline/report.h"

#include <gtest/gtest.h>

namespace tps {

TEST(RooflineReport, CarriesEveryFigureOfTheIssue) {
  Estimator est(find_roofline_preset("mixtral-8x7b"), find_hardware("h100-sxm"),
                make_deployment("fp8", "f16", 8, 2), Efficiency{});
  Workload w;
  w.batches = {1, 32};
  SpeculativeSetup spec;
  spec.draft_name = "given";
  spec.cost_ratio = 0.05;
  nlohmann::json r = roofline_report(est, w, spec, {"bf16", "q4_0"}, {"f16", "fp8"});
  EXPECT_LT(r["model"]["params_active"].get<double>(), r["model"]["params_total"].get<double>());
  EXPECT_TRUE(r["model"]["moe"].get<bool>());
  EXPECT_EQ(r["deployment"]["replicas"], 4);
  EXPECT_EQ(r["phases"].size(), 3u);  // prefill + two decode batches
  for (const auto& p : r["phases"]) {
    for (const char* part : {"attention", "mlp", "head"}) {
      EXPECT_GT(p[part]["flops"].get<double>(), 0) << part;
      EXPECT_GE(p[part]["bytes"].get<double>(), 0) << part;
    }
    EXPECT_GT(p["intensity"].get<double>(), 0);
    EXPECT_TRUE(p["bound"] == "memory" || p["bound"] == "compute" || p["bound"] == "latency");
  }
  EXPECT_GT(r["latency"]["ttft_s"].get<double>(), 0);
  EXPECT_GT(r["latency"]["single_user_tokens_per_s"].get<double>(), 0);
  // Aggregate throughput counts every replica's batch.
  const auto& t32 = r["throughput"][1];
  EXPECT_NEAR(t32["aggregate_tokens_per_s"].get<double>(), 4 * 32 / t32["step_s"].get<double>(), 1e-6);
  EXPECT_GT(r["tensor_parallel"]["allreduce_s_per_token"].get<double>(), 0);
  EXPECT_NEAR(r["speculative"]["speedup"].get<double>(), speculative_speedup(0.7, 4, 0.05), 1e-12);
  EXPECT_EQ(r["formats"].size(), 4u);
  EXPECT_GT(r["memory"]["max_batch"].get<int64_t>(), 0);
  std::string table = render_report_table(r);
  EXPECT_NE(table.find("tensor parallel 2"), std::string::npos);
  EXPECT_NE(render_roofline_svg(r).find("</svg>"), std::string::npos);
}

}  // namespace tps

namespace tps {

// One figure worked by hand, so a change to any term of the model shows: Llama-2-7B in
// f16 on an H100 SXM, one user, 1024 prompt and 256 output tokens (mean context 1152).
// Per decode step every part is memory-bound (its flops take microseconds):
//   attention: 32 x 4 x 4096^2 weights x 2 B + 32 x 2 x 4096 norm weights x 4 B
//              + (1152 read + 1 written) x 524288 B of KV = 4,900,519,936 B
//   MLP:       32 x 3 x 4096 x 11008 x 2 B = 8,657,043,456 B
//   head:      32000 x 4096 x 2 B + 4096 x 4 B = 262,160,384 B
// over 3.35 TB/s x 0.8, plus 32 layers x 10 us.
TEST(RooflineReport, MatchesAFigureWorkedByHand) {
  Estimator est(find_roofline_preset("llama-2-7b"), find_hardware("h100-sxm"), make_deployment("f16", "f16", 1, 1),
                Efficiency{});
  Workload w;
  w.batches = {1};
  nlohmann::json r = roofline_report(est, w, std::nullopt, {"f16"}, {"f16"});
  const double bytes = 4900519936.0 + 8657043456.0 + 262160384.0;
  const double tpot = bytes / (3350e9 * 0.8) + 32 * 10e-6;
  EXPECT_NEAR(r["latency"]["tpot_s"].get<double>(), tpot, 1e-9 * tpot);
  EXPECT_NEAR(r["latency"]["single_user_tokens_per_s"].get<double>(), 1 / tpot, 1e-6 / tpot);
  EXPECT_EQ(r["phases"][1]["bound"], "memory");
}

}  // namespace tps
