#include "server/loading_server.h"

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
  thread_ = std::thread([this] { http_.run(); });
}

LoadingServer::~LoadingServer() {
  http_.stop();
  thread_.join();
}

}  // namespace tps
