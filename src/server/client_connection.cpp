#include "server/client_connection.h"

#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <string>

namespace tps {

namespace {

// The numeric host and port of an IP address, as cpp-httplib writes them into Request.
// Other sockets of the process (a Unix socket's "service" is its path) never match.
bool host_and_port(const sockaddr_storage& addr, socklen_t len, std::string& host, int& port) {
  if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return false;
  char h[NI_MAXHOST], p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, p, sizeof p,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  const char* end = p + std::char_traits<char>::length(p);
  return std::from_chars(p, end, port).ec == std::errc() && port >= 0;
}

bool end_matches(int fd, bool peer, const std::string& host, int port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::string h;
  int p = -1;
  return rc == 0 && host_and_port(addr, len, h, p) && p == port && h == host;
}

}  // namespace

ClientConnection::ClientConnection(const httplib::Request& req) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string name = entry.path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    if (end_matches(fd, true, req.remote_addr, req.remote_port) &&
        end_matches(fd, false, req.local_addr, req.local_port)) {
      fd_ = fd;
      return;
    }
  }
}

bool ClientConnection::closed() const {
  if (fd_ < 0) return false;
  char c;
  ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // bytes of a next request: still there
  if (n == 0) return true;  // the client closed its end
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace tps
