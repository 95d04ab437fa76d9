#pragma once
// Lets a handler that answers only at the end (a non-streaming completion) notice that
// its client has gone, so the generation stops and frees its KV blocks instead of
// running to max_tokens for nobody.
#include <httplib.h>

namespace tps {

class ClientConnection {
 public:
  // The connection's socket (HttpServer::current_socket()); INVALID_SOCKET: not known.
  explicit ClientConnection(socket_t fd) : fd_(fd) {}
  // True once the client has closed or reset the connection (or only shut down its
  // sending side, which HTTP clients do not do while waiting for an answer). False
  // while it is open, also when it has sent a further pipelined request, and when the
  // socket is not known.
  bool closed() const;

 private:
  socket_t fd_;
};

}  // namespace tps
