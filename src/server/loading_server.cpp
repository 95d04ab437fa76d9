#include "server/loading_server.h"

#include <chrono>

#include "core/timer.h"
#include "server/openai_response.h"

namespace tps {

LoadingServer::LoadingServer(const std::string& host, int port, const ConnectionLimits& limits)
    : http_(limits), port_(http_.bind(host, port)) {
  http_.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    res.status = 503;
    res.set_header("Retry-After", "1");
    if (req.path == "/health") {
      res.set_content(R"({"status":"loading"})", "application/json");
    } else {
      res.set_content(dump_json(error_json(ApiError(503, "", "the model is still loading; try again shortly",
                                                    "model_loading", "server_error"))),
                      "application/json");
    }
    HttpServer::close_after_response(res);
    return httplib::Server::HandlerResponse::Handled;
  });
  thread_ = std::thread([this] {
    http_.run();
    done_ = true;
  });
}

LoadingServer::~LoadingServer() {
  // Taken over: the accept loop ends by itself within its 100 ms look at the socket, and
  // a connection it accepted just before gets its 503 (one answer, then it closes) rather
  // than being cut unanswered, which a prober would read as the server being down. One
  // that sends nothing within the grace is cut. Not taken over (the model did not
  // load): stop at once.
  constexpr double kHandoverGraceS = 2.0;
  const double give_up = now_seconds() + kHandoverGraceS;
  while (!http_.listening() && !done_ && now_seconds() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  http_.stop();
  thread_.join();
}

}  // namespace tps
