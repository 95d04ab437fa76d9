#pragma once
// HTTP helpers for the `tps serve` integration tests.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <thread>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/timer.h"

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

// Splits an SSE body into its events: the text, the parsed chunks, whether [DONE] ended it.
inline StreamResult parse_stream(int status, const std::string& body) {
  StreamResult r;
  r.status = status;
  auto events = sse_data(body);
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

inline StreamResult post_stream(httplib::Client& c, const std::string& path, const json& body) {
  auto res = c.Post(path, body.dump(), "application/json");
  if (!res) return {};
  return parse_stream(res->status, res->body);
}

// A stream read as it arrives: `on_event` is called after each `data:` event, and the
// result says when (now_seconds()) the last one came.
struct TimedStream {
  StreamResult result;
  double last_event = 0;
};

inline TimedStream post_stream_timed(httplib::Client& c, const std::string& path, const json& body,
                                     const std::function<void()>& on_event) {
  TimedStream t;
  std::string received;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    const size_t before = std::count(received.begin(), received.end(), '\n');
    received.append(data, n);
    if (static_cast<size_t>(std::count(received.begin(), received.end(), '\n')) > before) {
      t.last_event = now_seconds();
      on_event();
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  if (!c.send(req, res, error)) return t;
  t.result = parse_stream(res.status, received);
  return t;
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

struct CommandResult {
  int status = -1;  // the exit status
  std::string output;
};

// Runs a shell command and keeps what it writes to its standard output.
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int rc = pclose(p);
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return r;
}

// Runs a command and parses its standard output as JSON.
inline json run_json(const std::string& command) {
  return json::parse(run_command(command).output, nullptr, false);
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

// A model with random weights and the shape of a `tps synth` preset, written once per
// test process and removed at its end: for tests that need a model slower to load and
// run than the fixtures.
inline std::string synthesized_model(const std::string& preset, const std::string& type) {
  struct Files {
    std::vector<std::string> paths;
    ~Files() {
      std::error_code ec;
      for (const auto& p : paths) std::filesystem::remove(p, ec);
    }
  };
  static Files files;
  const std::string path = std::filesystem::temp_directory_path() /
                           fmt::format("tps_test_{}_{}_{}.gguf", preset, type, getpid());
  if (std::find(files.paths.begin(), files.paths.end(), path) != files.paths.end()) return path;
  const CommandResult r = run_command(fmt::format("{} synth --preset {} --type {} -t 1 -o {} 2>&1", TPS_BINARY, preset,
                                                  type, path));
  if (r.status != 0) {
    ADD_FAILURE() << "tps synth failed: " << r.output;
    return "";
  }
  files.paths.push_back(path);
  return path;
}

// A bare TCP connection to the server, for what no HTTP client sends: idle connections,
// requests dripped a byte at a time, missing headers.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawConnection() {
    if (fd_ >= 0) close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return fd_ >= 0; }
  bool send(const std::string& bytes) {
    return fd_ >= 0 && ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // What the server sends until it closes the connection or `seconds` pass.
  std::string receive(double seconds) {
    std::string out;
    const double until = now_seconds() + seconds;
    for (double left = seconds; left > 0 && fd_ >= 0; left = until - now_seconds()) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) break;
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_;
};

// Skips the test when the fixture model is absent (a clone without ../shared).
#define REQUIRE_MODEL(var, relative)                   \
  const std::string var = server_fixture(relative);    \
  if (var.empty()) GTEST_SKIP() << "fixture " << (relative) << " is absent (../shared/fixtures)"

inline constexpr const char* kStories = "models/stories260K.gguf";
inline constexpr const char* kSynthetic = "models/synthetic/llama-gqa-f32.gguf";

}  // namespace tps::testing
