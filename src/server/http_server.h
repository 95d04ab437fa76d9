#pragma once
// cpp-httplib's server, with connections that cannot starve each other. cpp-httplib 0.11
// gives each connection one thread of a fixed pool for as long as it lives, and its
// timeouts are per read, so clients that send nothing, or a byte a second, hold every
// thread while /health waits. Here every connection gets a thread of its own up to a
// cap (beyond it: 503 at once), a request's headers and body must arrive within one
// total deadline (beyond it: 408), and waiting connections end as soon as the server
// stops. Routes are recorded, so that a known path asked with another method can get
// 405. The listening socket can pass from one server to the next (loading, then ready).
#include <atomic>
#include <regex>
#include <string>
#include <vector>

#include <httplib.h>

namespace tps {

struct ConnectionLimits {
  int max_connections = 512;           // open at once; the next ones get 503 and are closed
  double request_read_timeout_s = 10;  // one request's headers and body, from its first byte
  double idle_timeout_s = 5;           // between requests; then the connection is closed
};

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(const ConnectionLimits& limits);
  ~HttpServer() override;
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Listens on host:port (0: any free port); returns the port. Throws tps::Error.
  int bind(const std::string& host, int port);
  // Serves, from run(), on the socket `other` listens on; `other` stops accepting and
  // its run() returns once its connections have ended.
  void take_listener(HttpServer& other);
  // Whether it still has a socket to accept on (not taken, not stopped).
  bool listening() const { return svr_sock_ != INVALID_SOCKET; }
  void run();   // accepts until stop()
  // Closes the listening socket and every connection between requests; a request being
  // read is dropped. A response being written is cut: stop once they are done.
  void stop();

  // As httplib's, and recorded for allowed_methods(). (These and the two setters below
  // hide the base class's functions: set a server up through an HttpServer&, not an
  // httplib::Server&.)
  HttpServer& Get(const std::string& pattern, Handler handler);
  HttpServer& Post(const std::string& pattern, Handler handler);
  // As httplib's; a request whose headers or body did not arrive in time gets 408 instead.
  HttpServer& set_error_handler(Handler handler);
  // As httplib's; a POST without Content-Length (nor chunks) gets 411 first: httplib
  // would read its body until the client closes, which it does not while it waits.
  HttpServer& set_pre_routing_handler(HandlerWithResponse handler);
  // The methods with a route for `path`, as an Allow header lists them ("GET, POST");
  // empty when no route matches it.
  std::string allowed_methods(const std::string& path) const;

  // On a handler's thread: the connection closes after this response, as a request
  // answered before its body was read must (the body would be read as the next request).
  static void close_after_response(httplib::Response& res);
  // On a handler's thread: the socket of the connection it answers (httplib 0.11 does
  // not hand it to handlers).
  static socket_t current_socket();

 private:
  class Connection;
  class Threads;
  bool process_and_close_socket(socket_t sock) override;
  void serve(Connection& c);
  // On a handler's thread: the request's headers or body did not arrive in time.
  static bool request_read_timed_out();
  std::string read_timeout_body() const;
  // A response written here, not by httplib, to a connection about to be closed.
  static void answer(socket_t sock, int status, const std::string& body);

  static thread_local Connection* current_;  // the connection this thread serves
  static thread_local bool dropping_;        // set by Threads: close the next connection at once

  ConnectionLimits limits_;
  int stop_fd_ = -1;  // an eventfd, readable once stop() was called
  std::atomic<bool> stopped_{false};
  std::atomic<int> connections_{0};
  std::vector<std::pair<std::string, std::regex>> routes_;  // (method, pattern)
};

}  // namespace tps
