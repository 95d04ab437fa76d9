#pragma once
// Lets a handler that answers only at the end (a non-streaming completion) notice that
// its client has gone, so the generation stops and frees its KV blocks instead of
// running to max_tokens for nobody. cpp-httplib 0.11 does not hand the socket to
// handlers; it is found as the one socket of this process whose two ends are the
// request's addresses (unique while the request's connection is open).
#include <httplib.h>

namespace tps {

class ClientConnection {
 public:
  explicit ClientConnection(const httplib::Request& req);
  // True once the client has closed or reset the connection (or only shut down its
  // sending side, which HTTP clients do not do while waiting for an answer). False
  // while it is open, also when it has sent a further pipelined request, and when the
  // socket could not be found.
  bool closed() const;

 private:
  int fd_ = -1;
};

}  // namespace tps
