#pragma once
// The OpenAI-compatible HTTP front: routes, API key, errors as OpenAI JSON, streaming
// (SSE) and plain responses. Each request's handler thread waits on its request's
// stream while the engine's scheduler thread batches every running request.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/access_log.h"
#include "server/chat_template.h"
#include "server/http_server.h"
#include "server/in_flight.h"
#include "server/openai_request.h"
#include "server/server_metrics.h"
#include "server/stats_stream.h"
#include "tokenizer/tokenizer.h"

namespace tps {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  // 0: any free port
  std::string api_key;              // empty: no key needed
  size_t max_body_bytes = 1 << 20;  // larger bodies get 413
  double request_timeout_s = 600;   // 0: no limit
  std::string model_name;                  // reported by the API
  std::vector<std::string> model_aliases;  // further names a request's "model" may give
  ConnectionLimits connections;
};

class ApiServer {
 public:
  ApiServer(const Tokenizer& tokenizer, Engine& engine, ServerMetrics& metrics, AccessLog& log, ChatFamily chat,
            const ServerOptions& options);
  ~ApiServer();
  // Serves, from run(), on the socket another server listens on (the loading server's).
  void take_listener(HttpServer& other);
  void run();   // serves until stop()
  void stop();  // cuts whatever is still being answered: call it once nothing is in flight

  // Shutting down: new requests get 503 (and their connections close), the generations
  // in flight run on until they end or are aborted (finish_reason "abort").
  void refuse_new_requests();
  // True once no generation is in flight; false when `deadline` (now_seconds()) came first.
  bool wait_in_flight(double deadline) { return in_flight_.wait_empty(deadline); }
  size_t abort_in_flight() { return in_flight_.cancel_all(); }

 private:
  struct Generation;
  // A request's choices (`n`), each its own sequence in the engine.
  using Choices = std::vector<std::shared_ptr<Generation>>;
  void setup_routes();
  void handle_generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res);
  void respond_plain(const Choices& choices, httplib::Response& res);
  void respond_stream(const Choices& choices, httplib::Response& res);
  // The access log's and the metrics' outcome: the finish reason, or "cancelled".
  std::string outcome_of(const Generation& g) const;
  void record(Generation& g, const std::string& outcome, int status);
  bool serves_model(const std::string& name) const;

  const Tokenizer& tokenizer_;
  Engine& engine_;
  ServerMetrics& metrics_;
  AccessLog& log_;
  ChatFamily chat_;
  ServerOptions options_;
  std::unique_ptr<HttpServer> http_;
  InFlight in_flight_;
  std::atomic<bool> refusing_{false};
  std::unique_ptr<StatsStream> stats_;  // GET /v1/stats/stream
};

}  // namespace tps
