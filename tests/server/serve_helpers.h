#pragma once
// HTTP helpers for the `tps serve` integration tests.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve_process.h"

namespace tps::testing {

using nlohmann::json;

struct Reply {
  int status = 0;
  json body;
  std::string raw;
  std::string retry_after;
};

inline Reply post(httplib::Client& c, const std::string& path, const std::string& body,
                  const httplib::Headers& headers = {}) {
  Reply r;
  auto res = c.Post(path, headers, body, "application/json");
  if (!res) {
    r.raw = "transport error: " + httplib::to_string(res.error());
    return r;
  }
  r.status = res->status;
  r.raw = res->body;
  r.retry_after = res->get_header_value("Retry-After");
  r.body = json::parse(res->body, nullptr, false);
  return r;
}

inline Reply post(httplib::Client& c, const std::string& path, const json& body) { return post(c, path, body.dump()); }

// The status of a GET (0: no response).
inline int get_status(httplib::Client& c, const std::string& path) {
  auto res = c.Get(path);
  return res ? res->status : 0;
}

// The `data:` payloads of an SSE body, [DONE] included as a string.
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  return out;
}

struct StreamResult {
  int status = 0;
  std::string text;            // concatenated deltas
  std::vector<json> chunks;    // parsed events before [DONE]
  bool done = false;           // ended with [DONE]
};

inline StreamResult post_stream(httplib::Client& c, const std::string& path, const json& body) {
  StreamResult r;
  auto res = c.Post(path, body.dump(), "application/json");
  if (!res) return r;
  r.status = res->status;
  auto events = sse_data(res->body);
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i] == "[DONE]") {
      r.done = i + 1 == events.size();
      break;
    }
    json j = json::parse(events[i]);
    r.chunks.push_back(j);
    for (const auto& ch : j["choices"]) {
      if (ch.contains("text")) r.text += ch["text"].get<std::string>();
      if (ch.contains("delta") && ch["delta"].contains("content")) r.text += ch["delta"]["content"].get<std::string>();
    }
  }
  return r;
}

// Prometheus samples by full name with labels, e.g. `tps_requests_total` or
// `tps_requests_finished_total{reason="stop"}`; checks every line's syntax on the way.
inline std::map<std::string, double> parse_metrics(const std::string& text) {
  std::map<std::string, double> out;
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})?) ([-+]?([0-9.]+([eE][-+]?[0-9]+)?|Inf|NaN))$)");
  static const std::regex kComment(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::smatch m;
    if (line[0] == '#') {
      EXPECT_TRUE(std::regex_match(line, kComment)) << line;
    } else if (std::regex_match(line, m, kSample)) {
      out[m[1]] = std::stod(m[4]);
    } else {
      ADD_FAILURE() << "not Prometheus text: " << line;
    }
  }
  return out;
}

inline std::map<std::string, double> get_metrics(httplib::Client& c) {
  auto res = c.Get("/metrics");
  if (!res || res->status != 200) {
    ADD_FAILURE() << "GET /metrics failed";
    return {};
  }
  return parse_metrics(res->body);
}

// Runs a command and parses its standard output as JSON.
inline json run_json(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return json();
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return json::parse(out, nullptr, false);
}

// Metrics once `ready` holds for them (gauges and the access log trail a response by
// a moment), or the last ones read after a few seconds.
inline std::map<std::string, double> wait_metrics(httplib::Client& c,
                                                   const std::function<bool(std::map<std::string, double>&)>& ready) {
  std::map<std::string, double> m;
  for (int i = 0; i < 250; ++i) {
    m = get_metrics(c);
    if (ready(m)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return m;
}

// Writes a made-up hardware profile (`tps probe`'s format) whose one measured buffer,
// larger than any test model, reads at `gbps`; returns its path (the caller removes it).
inline std::string write_test_profile(double gbps) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tps_test_profile_" + std::to_string(getpid()) + ".json"))
                               .string();
  std::ofstream(path) << json{{"schema", "tps.profile/1"},
                              {"threads", 1},
                              {"cpu", {{"model", "made up"}, {"logical_cpus", 1}}},
                              {"memory_bytes", int64_t{1} << 33},
                              {"dram_read_gbps", gbps},
                              {"bandwidth", {{{"bytes", 1 << 30}, {"threads", 1}, {"gbps", gbps}}}},
                              {"peaks", json::object()}}
                             .dump();
  return path;
}

// Skips the test when the fixture model is absent (a clone without ../shared).
#define REQUIRE_MODEL(var, relative)                   \
  const std::string var = server_fixture(relative);    \
  if (var.empty()) GTEST_SKIP() << "fixture " << (relative) << " is absent (../shared/fixtures)"

inline constexpr const char* kStories = "models/stories260K.gguf";
inline constexpr const char* kSynthetic = "models/synthetic/llama-gqa-f32.gguf";

}  // namespace tps::testing
