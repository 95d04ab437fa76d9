// docs/grafana-tps-serve.json: a dashboard Grafana can import (JSON, panels with unique
// ids, a data source and a place), whose queries name only metrics that a real
// `tps serve` exposes at /metrics.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "serve_helpers.h"

namespace tps::testing {
namespace {

// Every "expr" string anywhere in `j`.
void collect_queries(const json& j, std::vector<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [key, v] : j.items()) {
      if (key == "expr" && v.is_string()) out.push_back(v.get<std::string>());
      else collect_queries(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) collect_queries(v, out);
  }
}

TEST(GrafanaDashboard, EveryMetricItQueriesIsOneServeExposes) {
  REQUIRE_MODEL(model, kStories);
  std::ifstream in(TPS_SOURCE_DIR "/docs/grafana-tps-serve.json");
  ASSERT_TRUE(in) << "docs/grafana-tps-serve.json is missing";
  const json dash = json::parse(in, nullptr, false);
  ASSERT_FALSE(dash.is_discarded()) << "the dashboard is not valid JSON";
  ASSERT_TRUE(dash["panels"].is_array());
  std::set<int> ids;
  for (const json& p : dash["panels"]) {
    EXPECT_TRUE(ids.insert(p["id"].get<int>()).second) << "panel id " << p["id"] << " twice";
    for (const char* k : {"x", "y", "w", "h"}) EXPECT_TRUE(p["gridPos"][k].is_number_integer()) << p.dump();
    if (p["type"] == "row") continue;
    EXPECT_TRUE(p.contains("datasource")) << p["title"];
    EXPECT_FALSE(p["targets"].empty()) << p["title"];
  }

  std::vector<std::string> queries;
  collect_queries(dash, queries);
  std::set<std::string> named;
  static const std::regex kMetric("tps_[a-z0-9_]+");
  for (const std::string& q : queries)
    for (std::sregex_iterator it(q.begin(), q.end(), kMetric), end; it != end; ++it) named.insert(it->str());
  ASSERT_GT(named.size(), 20u);

  // Everything /metrics can show: a profile (bandwidth), speculation (its counters), a
  // finished request and a refused one (the labelled counters).
  const std::string profile = write_test_profile(20.0);
  ServeProcess server;
  ASSERT_EQ(server.start(model, {"--profile", profile, "--spec", "ngram"}), "");
  std::filesystem::remove(profile);
  auto c = server.client();
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 300}, {"ignore_eos", true}, {"temperature", 0}};
  ASSERT_EQ(post(*c, "/v1/completions", body).status, 200);
  ASSERT_EQ(post(*c, "/v1/completions", std::string("{not json")).status, 400);
  std::set<std::string> exposed;
  // The error counter trails its response by a moment (it is counted once the answer is sent).
  wait_metrics(*c, [&](std::map<std::string, double>& m) {
    exposed.clear();
    for (const auto& [sample, value] : m) exposed.insert(sample.substr(0, sample.find('{')));
    return std::includes(exposed.begin(), exposed.end(), named.begin(), named.end());
  });
  for (const std::string& name : named) EXPECT_TRUE(exposed.count(name)) << name << " is not in /metrics";
}

}  // namespace
}  // namespace tps::testing
