#include "server/client_connection.h"

#include <sys/socket.h>

#include <cerrno>

namespace tps {

bool ClientConnection::closed() const {
  if (fd_ == INVALID_SOCKET) return false;
  char c;
  ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // bytes of a next request: still there
  if (n == 0) return true;  // the client closed its end
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace tps
