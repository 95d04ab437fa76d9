#pragma once
// The server's port while the model loads: it listens from the start, so that a health
// check sees the server coming up instead of a refused connection. /health answers 503
// {"status": "loading"} and every other route a 503 error, until the API server takes
// the listening socket over.
#include <atomic>
#include <string>
#include <thread>

#include "server/http_server.h"

namespace tps {

class LoadingServer {
 public:
  // Listens on host:port (0: any free port) and answers on a thread of its own.
  // Throws tps::Error when it cannot listen.
  LoadingServer(const std::string& host, int port, const ConnectionLimits& limits);
  // Stops answering. Where its socket was taken over (HttpServer::take_listener), the
  // connections it accepted before get their answer first, within a grace.
  ~LoadingServer();
  LoadingServer(const LoadingServer&) = delete;
  LoadingServer& operator=(const LoadingServer&) = delete;

  int port() const { return port_; }
  HttpServer& http() { return http_; }

 private:
  HttpServer http_;
  int port_;
  std::thread thread_;
  std::atomic<bool> done_{false};  // run() has returned
};

}  // namespace tps
