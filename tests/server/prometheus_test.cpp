#include "server/prometheus.h"

#include <gtest/gtest.h>

#include "server/server_metrics.h"

namespace tps {

TEST(Prometheus, HistogramIsCumulativeWithSumAndCount) {
  PromHistogram h({0.1, 1, 10});
  for (double v : {0.05, 0.5, 0.7, 20.0}) h.observe(v);
  std::string out;
  h.render(out, "x_seconds", "help text");
  EXPECT_EQ(out,
            "# HELP x_seconds help text\n# TYPE x_seconds histogram\n"
            "x_seconds_bucket{le=\"0.1\"} 1\nx_seconds_bucket{le=\"1\"} 3\nx_seconds_bucket{le=\"10\"} 3\n"
            "x_seconds_bucket{le=\"+Inf\"} 4\nx_seconds_sum 21.25\nx_seconds_count 4\n");
}

TEST(Prometheus, CountersAndLabelledValues) {
  std::string out;
  prom_counter(out, "a_total", "A.", 3);
  prom_labelled(out, "b_total", "counter", "B.", "reason", {"stop", "length"}, {1, 2});
  EXPECT_EQ(out,
            "# HELP a_total A.\n# TYPE a_total counter\na_total 3\n"
            "# HELP b_total B.\n# TYPE b_total counter\nb_total{reason=\"stop\"} 1\nb_total{reason=\"length\"} 2\n");
}

TEST(ServerMetrics, CountsAddUp) {
  ServerMetrics m(1e9, 10);
  RequestTimes t;
  t.arrived = 1;
  t.scheduled = 1.5;
  t.first_token = 2;
  t.token_times = {2, 2.1, 2.3};
  t.finished = 2.3;
  m.record_request({"stop", 10, 4, 3, t});
  m.record_request({"length", 5, 0, 7, t});
  m.record_step({8, 8, 8, 0.2});  // decode-only: 1 GB in 0.2 s = 5 GB/s of 10
  std::string out = m.render({});
  EXPECT_NE(out.find("\ntps_requests_total 2\n"), std::string::npos);
  EXPECT_NE(out.find("\ntps_prompt_tokens_total 15\n"), std::string::npos);
  EXPECT_NE(out.find("\ntps_prompt_cached_tokens_total 4\n"), std::string::npos);
  EXPECT_NE(out.find("\ntps_generated_tokens_total 10\n"), std::string::npos);
  EXPECT_NE(out.find("\ntps_itl_seconds_count 4\n"), std::string::npos);
  EXPECT_NE(out.find("\ntps_decode_bandwidth_utilization 0.5\n"), std::string::npos);
}

}  // namespace tps
