#include <gtest/gtest.h>

#include <random>

#include "loadgen/compare.h"
#include "loadgen/html_report.h"
#include "loadgen/prometheus_text.h"

namespace tps::loadgen {
namespace {

TEST(HtmlReport, EmbedsEverythingAndCannotBeBrokenOutOfByData) {
  nlohmann::json results = {{"format", "tps-load-results/1"},
                            {"stopped_early", "</script><script>alert(1)</script>"},
                            {"points", nlohmann::json::array()}};
  std::string page = render_html_report(results);
  EXPECT_EQ(page.find("/*TPS_"), std::string::npos);
  EXPECT_NE(page.find("uPlot"), std::string::npos);
  EXPECT_EQ(page.find("alert(1)</script>"), std::string::npos);
  EXPECT_NE(page.find("\\u003c/script>"), std::string::npos);
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org"));  // nothing fetched from a network
}

TEST(Compare, TellsNoiseFromRealChange) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> base(0.100, 0.010), slower(0.130, 0.010);
  std::vector<double> a, a2, b;
  for (int i = 0; i < 200; ++i) {
    a.push_back(base(rng));
    a2.push_back(base(rng));
    b.push_back(slower(rng));
  }
  EXPECT_FALSE(compare_means(a, a2).significant());
  EXPECT_TRUE(compare_means(a, b).significant());
  EXPECT_NEAR(compare_means(a, b).difference, 0.030, 0.004);
  EXPECT_FALSE(compare_percentiles(a, a2, 50, 1).significant());
  EXPECT_TRUE(compare_percentiles(a, b, 50, 1).significant());
  EXPECT_TRUE(compare_percentiles(a, b, 99, 1).significant());
}

TEST(Prometheus, ReadsSeriesWithLabelsAndDeltas) {
  auto before = parse_prometheus_text(
      "# HELP x y\n# TYPE vllm:num_requests counter\nvllm:num_requests{model=\"a b\"} 3\nplain 1.5e3\nbad line\n");
  EXPECT_EQ(before["vllm:num_requests{model=\"a b\"}"], 3.0);
  EXPECT_EQ(before["plain"], 1500.0);
  EXPECT_EQ(before.size(), 2u);
  auto after = parse_prometheus_text("vllm:num_requests{model=\"a b\"} 10 1700000000\nplain 1500\nnew 1\n");
  auto delta = prometheus_delta(before, after);
  EXPECT_EQ(delta["vllm:num_requests{model=\"a b\"}"], 7.0);
  EXPECT_EQ(delta["plain"], 0.0);
  EXPECT_FALSE(delta.contains("new"));
}

}  // namespace
}  // namespace tps::loadgen
