#pragma once
// An OpenAI-compatible server that streams exactly what a script says, when it says:
// known delays, multi-token events, empty role chunks, HTTP errors, dropped connections.
// It is the reference the load generator's numbers are tested against, and the fast
// server its client overhead is measured against.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace httplib {
class Server;
}

namespace tps::loadgen {

struct ScriptedEvent {
  double delay_s = 0;  // after the previous event; the first one's after the request arrived
  std::string text;    // empty: a role-only chunk (chat) or an empty text chunk (completions)
  int64_t tokens = 1;  // tokens the event carries, as per-event usage reports them
};

struct ScriptedResponse {
  int status = 200;                // anything else answers a JSON error with this status
  std::vector<ScriptedEvent> events;
  bool drop = false;               // close the connection after the events, unfinished
  bool close_after = false;        // close it after a finished stream, as llama-server
                                   // does though its response says keep-alive
  bool per_event_usage = false;    // cumulative usage on every event (vLLM continuous usage)
  bool final_usage = true;         // a usage-only event before [DONE]
  int64_t prompt_tokens = 0;
};

class ScriptedServer {
 public:
  // Called once per completion request with its body and its 0-based arrival index.
  using Script = std::function<ScriptedResponse(const nlohmann::json& body, int64_t index)>;

  // Listens on 127.0.0.1 at a free port. With `tokenize`, POST /tokenize counts one
  // token per whitespace-separated word.
  explicit ScriptedServer(Script script, bool tokenize = true);
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  std::string url() const;
  int port() const { return port_; }
  int64_t requests() const { return requests_.load(); }
  // When each request reached its handler, in now_seconds(), by arrival index: the
  // schedule's zero, which a client sees later by the connection and transfer time.
  std::vector<double> arrival_times() const;
  // When each event of each request was written, in now_seconds(), by arrival index:
  // the schedule as it really happened, late by however the OS woke the server.
  std::vector<std::vector<double>> event_times() const;
  void stop();  // stops listening; a later connection is refused

 private:
  Script script_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int64_t> requests_{0};
  mutable std::mutex mutex_;
  std::vector<double> arrivals_;
  std::vector<std::vector<double>> event_times_;
};

}  // namespace tps::loadgen
