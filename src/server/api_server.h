#pragma once
// The OpenAI-compatible HTTP front: routes, API key, errors as OpenAI JSON, streaming
// (SSE) and plain responses. Each request's handler thread waits on its request's
// stream while the engine's scheduler thread batches every running request.
#include <memory>
#include <string>

#include <httplib.h>

#include "engine/engine.h"
#include "server/access_log.h"
#include "server/chat_template.h"
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
  double request_timeout_s = 600;
  std::string model_name;
  int http_threads = 64;
};

class ApiServer {
 public:
  ApiServer(const Tokenizer& tokenizer, Engine& engine, ServerMetrics& metrics, AccessLog& log, ChatFamily chat,
            const ServerOptions& options);
  ~ApiServer();
  // Binds the socket; returns the port (the chosen one when options.port is 0).
  int bind();
  void run();   // serves until stop()
  void stop();

 private:
  struct Generation;
  void setup_routes();
  void handle_generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res);
  void respond_plain(const std::shared_ptr<Generation>& g, const httplib::Request& req, httplib::Response& res);
  void respond_stream(const std::shared_ptr<Generation>& g, httplib::Response& res);
  void record(Generation& g, const std::string& outcome, int status);

  const Tokenizer& tokenizer_;
  Engine& engine_;
  ServerMetrics& metrics_;
  AccessLog& log_;
  ChatFamily chat_;
  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  socket_t listen_socket_ = INVALID_SOCKET;
  std::unique_ptr<StatsStream> stats_;  // GET /v1/stats/stream
};

}  // namespace tps
