#include "server/http_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <regex>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/timer.h"
#include "server/openai_response.h"

namespace tps {

namespace {

// Connections beyond max_connections still get a thread for their 503, up to this many
// at once; past that they are closed without an answer.
constexpr int kSheddingThreads = 64;
// How long a refused connection is read from after its answer, so that closing it does
// not reset the connection before the client has read the answer.
constexpr double kLingerSeconds = 1.0;

int poll_ms(double seconds) { return static_cast<int>(std::clamp(seconds * 1000.0 + 1.0, 0.0, 1e9)); }

}  // namespace

// One client connection as httplib reads and writes it: the socket, the bytes read ahead,
// and the deadline of the request being read.
class HttpServer::Connection : public httplib::Stream {
 public:
  Connection(socket_t sock, int stop_fd, double write_timeout_s)
      : sock_(sock), stop_fd_(stop_fd), write_timeout_s_(write_timeout_s) {}

  // Waits up to `seconds` for the first byte of the next request; false when none came
  // or the server is stopping.
  bool wait_request(double seconds) { return filled_ > taken_ || wait_readable(now_seconds() + seconds, false); }
  void begin_request(double deadline) {
    deadline_ = deadline;
    timed_out_ = false;
    written_ = 0;
  }
  bool timed_out() const { return timed_out_; }
  size_t written() const { return written_; }
  bool close_requested = false;

  bool is_readable() const override { return filled_ > taken_ || wait_readable(deadline_, true); }
  bool is_writable() const override {
    pollfd p{sock_, POLLOUT, 0};
    int n;
    do n = poll(&p, 1, poll_ms(write_timeout_s_));
    while (n < 0 && errno == EINTR);
    return n > 0 && (p.revents & POLLOUT) != 0;
  }
  ssize_t read(char* ptr, size_t size) override {
    if (filled_ == taken_) {
      if (!wait_readable(deadline_, true)) return -1;
      ssize_t n;
      do n = recv(sock_, buffer_, sizeof buffer_, 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      filled_ = static_cast<size_t>(n);
      taken_ = 0;
    }
    const size_t n = std::min(size, filled_ - taken_);
    std::memcpy(ptr, buffer_ + taken_, n);
    taken_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do n = send(sock_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n > 0) written_ += static_cast<size_t>(n);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(false, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  // True once the socket has bytes (or an end) before `deadline`; past the deadline
  // marks the request as timed out. A stopping server ends every wait.
  bool wait_readable(double deadline, bool reading) const {
    for (;;) {
      const double left = deadline - now_seconds();
      if (left <= 0) {
        timed_out_ = reading;
        return false;
      }
      pollfd p[2] = {{sock_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      const int n = poll(p, 2, poll_ms(left));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || p[1].revents != 0) return false;
      if (p[0].revents != 0) return true;
    }
  }
  void address(bool peer, std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    auto* a = reinterpret_cast<sockaddr*>(&addr);
    if ((peer ? getpeername(sock_, a, &len) : getsockname(sock_, a, &len)) != 0) return;
    char host[NI_MAXHOST], service[NI_MAXSERV];
    if (getnameinfo(a, len, host, sizeof host, service, sizeof service, NI_NUMERICHOST | NI_NUMERICSERV) != 0) return;
    ip = host;
    port = std::atoi(service);
  }

  socket_t sock_;
  int stop_fd_;
  double write_timeout_s_;
  double deadline_ = 0;
  mutable bool timed_out_ = false;
  size_t written_ = 0;
  char buffer_[4096];
  size_t filled_ = 0, taken_ = 0;
};

// httplib's task queue: a thread for every connection, reusing idle ones, up to
// `capacity` busy at once; beyond it a connection is closed on the accepting thread.
class HttpServer::Threads : public httplib::TaskQueue {
 public:
  explicit Threads(int capacity) : capacity_(capacity) {}

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(mutex_);
      if (busy_ < capacity_) {
        try {
          if (idle_ <= jobs_.size()) threads_.emplace_back([this] { work(); });
          ++busy_;
          jobs_.push_back(std::move(fn));
          cv_.notify_one();
          return;
        } catch (const std::system_error&) {
          // No thread to be had: closed below, as when every thread is busy.
        }
      }
    }
    dropping_ = true;
    fn();
    dropping_ = false;
  }

  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
      --idle_;
      if (jobs_.empty()) return;
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
      --busy_;
    }
  }

  const int capacity_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  int busy_ = 0;
  bool stopping_ = false;
};

thread_local HttpServer::Connection* HttpServer::current_ = nullptr;
thread_local bool HttpServer::dropping_ = false;

HttpServer::HttpServer(const ConnectionLimits& limits) : limits_(limits), stop_fd_(eventfd(0, EFD_CLOEXEC)) {
  if (stop_fd_ < 0) fail("cannot create an eventfd: {}", std::strerror(errno));
  new_task_queue = [n = limits_.max_connections] { return new Threads(n + kSheddingThreads); };
  // The accept loop looks up every 100 ms whether its socket was taken or closed.
  set_idle_interval(0, 100000);
  set_keep_alive_timeout(static_cast<time_t>(std::ceil(limits_.idle_timeout_s)));  // as the Keep-Alive header says
  // httplib's default adds SO_REUSEPORT, which lets a second server (or a port-0 bind)
  // share a port already in use and silently split its connections.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof yes);
  });
  set_error_handler([](const httplib::Request&, httplib::Response&) {});
  set_pre_routing_handler([](const httplib::Request&, httplib::Response&) { return HandlerResponse::Unhandled; });
}

HttpServer::~HttpServer() {
  socket_t s = svr_sock_.exchange(INVALID_SOCKET);
  if (s != INVALID_SOCKET) ::close(s);
  ::close(stop_fd_);
}

int HttpServer::bind(const std::string& host, int port) {
  const int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (bound < 0) fail("cannot listen on {}:{}", host, port);
  // httplib listens with a backlog of 5: a burst of clients connecting at once would
  // overflow it and some would fail. Listening again only enlarges the queue.
  ::listen(svr_sock_, SOMAXCONN);
  return bound;
}

void HttpServer::take_listener(HttpServer& other) {
  // `other` is not stopped: a connection its accept loop took just before this still
  // gets its answer there (serve()), rather than being closed unanswered.
  svr_sock_ = other.svr_sock_.exchange(INVALID_SOCKET);
}

void HttpServer::run() { listen_after_bind(); }

void HttpServer::stop() {
  stopped_ = true;
  const uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof one) < 0) {
    // An eventfd's counter takes 2^64 - 2 writes before it would block.
  }
  socket_t s = svr_sock_.exchange(INVALID_SOCKET);
  if (s != INVALID_SOCKET) {
    ::shutdown(s, SHUT_RDWR);
    ::close(s);
  }
}

HttpServer& HttpServer::Get(const std::string& pattern, Handler handler) {
  routes_.push_back({"GET", std::regex(pattern)});
  httplib::Server::Get(pattern, std::move(handler));
  return *this;
}

HttpServer& HttpServer::Post(const std::string& pattern, Handler handler) {
  routes_.push_back({"POST", std::regex(pattern)});
  httplib::Server::Post(pattern, std::move(handler));
  return *this;
}

HttpServer& HttpServer::set_error_handler(Handler handler) {
  httplib::Server::set_error_handler([this, handler = std::move(handler)](const httplib::Request& req,
                                                                          httplib::Response& res) {
    if (request_read_timed_out()) {
      res.status = 408;
      res.set_content(read_timeout_body(), "application/json");
      res.set_header("Connection", "close");
      return;
    }
    handler(req, res);
  });
  return *this;
}

HttpServer& HttpServer::set_pre_routing_handler(HandlerWithResponse handler) {
  httplib::Server::set_pre_routing_handler([handler = std::move(handler)](const httplib::Request& req,
                                                                          httplib::Response& res) {
    const bool has_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
    if (has_body && !req.has_header("Content-Length") && req.get_header_value("Transfer-Encoding") != "chunked") {
      res.status = 411;
      res.set_content(dump_json(error_json(ApiError(411, "", "the request needs a Content-Length header (or chunks)",
                                                    "length_required"))),
                      "application/json");
      close_after_response(res);
      return HandlerResponse::Handled;
    }
    return handler(req, res);
  });
  return *this;
}

std::string HttpServer::allowed_methods(const std::string& path) const {
  std::string allowed;
  for (const auto& [method, pattern] : routes_) {
    if (!std::regex_match(path, pattern) || allowed.find(method) != std::string::npos) continue;
    allowed += (allowed.empty() ? "" : ", ") + method;
  }
  return allowed;
}

bool HttpServer::request_read_timed_out() { return current_ != nullptr && current_->timed_out(); }

socket_t HttpServer::current_socket() { return current_ != nullptr ? current_->socket() : INVALID_SOCKET; }

void HttpServer::close_after_response(httplib::Response& res) {
  res.set_header("Connection", "close");
  if (current_ != nullptr) current_->close_requested = true;
}

std::string HttpServer::read_timeout_body() const {
  return dump_json(error_json(ApiError(
      408, "", fmt::format("the request's headers and body did not arrive within {} s", limits_.request_read_timeout_s),
      "request_read_timeout", "timeout_error")));
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  if (dropping_) {
    ::close(sock);
    return false;
  }
  // Streams write many small events: without TCP_NODELAY, Nagle's algorithm holds each
  // one back until the client's delayed ACK (40 ms), which would set TTFT and ITL.
  int yes = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, reinterpret_cast<const void*>(&yes), sizeof yes);
  if (connections_.fetch_add(1) >= limits_.max_connections) {
    connections_.fetch_sub(1);
    answer(sock, 503,
           dump_json(error_json(ApiError(
               503, "", fmt::format("the server has {} connections open; try again", limits_.max_connections),
               "server_overloaded", "server_error"))));
    ::close(sock);
    return false;
  }
  {
    Connection c(sock, stop_fd_, static_cast<double>(write_timeout_sec_) + write_timeout_usec_ / 1e6);
    current_ = &c;
    serve(c);
    current_ = nullptr;
  }
  connections_.fetch_sub(1);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return true;
}

void HttpServer::serve(Connection& c) {
  for (size_t served = 0; served < keep_alive_max_count_; ++served) {
    // Kept-alive connections end with the listener (stopped, or handed over); a new one
    // is answered unless the server stopped.
    if ((served > 0 && svr_sock_ == INVALID_SOCKET) || stopped_ || !c.wait_request(limits_.idle_timeout_s)) return;
    c.begin_request(now_seconds() + limits_.request_read_timeout_s);
    bool closed = false;
    const bool ok = process_request(c, served + 1 == keep_alive_max_count_, closed, nullptr);
    if (c.timed_out() && c.written() == 0) {
      // The request line did not arrive whole: httplib gives up without an answer.
      answer(c.socket(), 408, read_timeout_body());
      return;
    }
    if (!ok || closed || c.close_requested || c.timed_out()) return;
  }
}

void HttpServer::answer(socket_t sock, int status, const std::string& body) {
  const std::string response = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}", status,
      status == 503 ? "Service Unavailable" : "Request Timeout", body.size(), status == 503 ? "Retry-After: 1\r\n" : "",
      body);
  size_t sent = 0;
  while (sent < response.size()) {
    ssize_t n = send(sock, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  // Read what the client still sends until it closes, so that closing does not reset
  // the connection (and discard the answer) while its request is unread.
  ::shutdown(sock, SHUT_WR);
  const double until = now_seconds() + kLingerSeconds;
  char sink[4096];
  for (double left = kLingerSeconds; left > 0; left = until - now_seconds()) {
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, poll_ms(left)) <= 0) break;
    if (recv(sock, sink, sizeof sink, 0) <= 0) break;
  }
}

}  // namespace tps
