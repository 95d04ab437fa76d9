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
