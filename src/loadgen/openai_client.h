#pragma once
// Talks to any OpenAI-compatible server: streams completions and chat completions, timing
// every event as it arrives, and asks the optional extras (/tokenize, /metrics, models).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "loadgen/request_record.h"

namespace httplib {
class Client;
struct Request;
struct Response;
enum class Error;
}

namespace tps::loadgen {

struct Endpoint {
  std::string origin;          // scheme://host:port
  std::string api_base = "/v1";  // path prefix of the OpenAI routes
  std::string kind = "completions";  // or "chat"
  std::string model;           // empty: the field is left out
  std::string api_key;
  double timeout_s = 600;      // a request taking longer fails as timed out
  bool ignore_eos = true;
  nlohmann::json extra_body = nlohmann::json::object();  // merged into every request body
};

// Splits "http://host:port[/prefix]" into origin and API base. A URL whose path ends with
// "/v1" is used as the base; otherwise "/v1" is appended to its path.
Endpoint parse_endpoint_url(const std::string& url);

// One prompt to send: plain text, or chat messages for the chat endpoint.
struct Prompt {
  std::string text;
  nlohmann::json messages;     // null unless the dataset gave chat messages
  int64_t input_tokens = -1;   // as counted by the workload's token counter
  int64_t output_tokens = 128; // max_tokens to request
};

class OpenAiClient {
 public:
  explicit OpenAiClient(Endpoint endpoint);
  ~OpenAiClient();
  OpenAiClient(const OpenAiClient&) = delete;
  OpenAiClient& operator=(const OpenAiClient&) = delete;

  // Sends one streaming request. Times are seconds on the monotonic clock minus `origin`.
  RequestRecord stream(const Prompt& prompt, double origin);

  // The request body `stream` sends, so the results file can show it.
  nlohmann::json request_body(const Prompt& prompt) const;

  // GET on the server (path from the origin); nullopt when it is missing or fails.
  std::optional<std::string> get(const std::string& path);
  // POST JSON on the server; nullopt when it is missing or fails.
  std::optional<nlohmann::json> post_json(const std::string& path, const nlohmann::json& body);

  const Endpoint& endpoint() const { return endpoint_; }

 private:
  // http_->send, once more where a kept-alive connection turned out closed (below).
  bool send(httplib::Request& req, httplib::Response& res, httplib::Error& error);
  // The body of a 200 answer to req; nullopt for any other outcome.
  std::optional<std::string> body_of(httplib::Request& req);

  Endpoint endpoint_;
  std::unique_ptr<httplib::Client> http_;
  bool kept_alive_ = false;  // the last exchange left a connection open to reuse
};

// The first model the server lists at {api_base}/models, if any.
std::optional<std::string> first_listed_model(OpenAiClient& client);

}  // namespace tps::loadgen
