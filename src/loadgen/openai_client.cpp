#include "loadgen/openai_client.h"

#include <httplib.h>

#include "core/error.h"
#include "core/timer.h"
#include "loadgen/sse_parser.h"
#include "loadgen/stream_chunk.h"

namespace tps::loadgen {

Endpoint parse_endpoint_url(const std::string& url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos || (url.substr(0, scheme_end) != "http" &&
                                          url.substr(0, scheme_end) != "https"))
    fail("--url '{}': expected http://host:port or https://host[/v1]", url);
  size_t path_start = url.find('/', scheme_end + 3);
  Endpoint e;
  e.origin = url.substr(0, path_start);
  if (e.origin.size() <= scheme_end + 3) fail("--url '{}': no host", url);
  std::string path = path_start == std::string::npos ? "" : url.substr(path_start);
  while (!path.empty() && path.back() == '/') path.pop_back();
  e.api_base = path.size() >= 3 && path.substr(path.size() - 3) == "/v1" ? path : path + "/v1";
  return e;
}

OpenAiClient::OpenAiClient(Endpoint endpoint)
    : endpoint_(std::move(endpoint)), http_(std::make_unique<httplib::Client>(endpoint_.origin)) {
  http_->set_keep_alive(true);
  // Without it Nagle's algorithm holds the request body back until the headers are
  // acknowledged, adding delayed-ACK milliseconds to every measured TTFT.
  http_->set_tcp_nodelay(true);
  http_->set_connection_timeout(10);
  auto seconds = std::chrono::duration<double>(endpoint_.timeout_s);
  http_->set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(seconds));
  http_->set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(seconds));
  if (!endpoint_.api_key.empty()) http_->set_bearer_token_auth(endpoint_.api_key);
}

OpenAiClient::~OpenAiClient() = default;

// httplib 0.11 reuses a kept-alive connection without checking that the server still
// holds it open, and llama-server closes it after every stream though its response says
// keep-alive: the next request then fails at once, before any byte of a response. Only
// such a failure on a reused connection is tried once more, on a new one (httplib has
// closed the dead one), as curl does; a server that fails a fresh connection fails the
// request.
bool OpenAiClient::send(httplib::Request& req, httplib::Response& res, httplib::Error& error) {
  const bool reused = kept_alive_;
  bool sent = http_->send(req, res, error);
  const bool died_unanswered = !sent && res.status == -1 && (error == httplib::Error::Read || error == httplib::Error::Write);
  if (reused && died_unanswered) {
    res = httplib::Response();
    error = httplib::Error::Success;
    sent = http_->send(req, res, error);
  }
  kept_alive_ = sent && res.get_header_value("Connection") != "close";
  return sent;
}

nlohmann::json OpenAiClient::request_body(const Prompt& prompt) const {
  nlohmann::json body = {{"stream", true},
                         {"max_tokens", prompt.output_tokens},
                         // Per-event usage (vLLM, SGLang) gives exact tokens per event;
                         // servers that do not know the option ignore it.
                         {"stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}}}};
  if (!endpoint_.model.empty()) body["model"] = endpoint_.model;
  if (endpoint_.ignore_eos) body["ignore_eos"] = true;
  if (endpoint_.kind == "chat") {
    body["messages"] = prompt.messages.is_null()
                           ? nlohmann::json::array({{{"role", "user"}, {"content", prompt.text}}})
                           : prompt.messages;
  } else {
    body["prompt"] = prompt.text;
  }
  body.merge_patch(endpoint_.extra_body);
  return body;
}

namespace {

// Turns the per-event observations into token counts once the stream is over: exact
// per-event counts need every text event to carry them, else one token per event.
void settle_token_counts(RequestRecord& r, const std::vector<std::optional<int64_t>>& cumulative,
                         const std::vector<std::optional<int64_t>>& logprobs,
                         std::optional<int64_t> final_usage) {
  auto all = [](const auto& v) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [](const auto& x) { return x.has_value(); });
  };
  if (all(cumulative)) {
    int64_t previous = 0;
    for (size_t i = 0; i < r.arrivals.size(); ++i) {
      r.arrivals[i].tokens = std::max<int64_t>(*cumulative[i] - previous, 0);
      previous = std::max(previous, *cumulative[i]);
    }
    r.event_tokens_source = "usage";
  } else if (all(logprobs)) {
    for (size_t i = 0; i < r.arrivals.size(); ++i) r.arrivals[i].tokens = *logprobs[i];
    r.event_tokens_source = "logprobs";
  } else {
    r.event_tokens_source = "events";
  }
  if (final_usage) {
    r.output_tokens = *final_usage;
    r.output_tokens_source = "usage";
  } else {
    r.output_tokens = 0;
    for (const auto& a : r.arrivals) r.output_tokens += a.tokens;
    r.output_tokens_source = r.event_tokens_source;
  }
}

}  // namespace

RequestRecord OpenAiClient::stream(const Prompt& prompt, double origin) {
  RequestRecord r;
  r.input_tokens = prompt.input_tokens;
  r.requested_output_tokens = prompt.output_tokens;

  httplib::Request req;
  req.method = "POST";
  req.path = endpoint_.api_base + (endpoint_.kind == "chat" ? "/chat/completions" : "/completions");
  req.body = request_body(prompt).dump();
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");

  SseParser parser;
  std::vector<std::string> events;
  std::vector<std::optional<int64_t>> cumulative, logprobs;
  std::optional<int64_t> final_usage;
  std::string error_body;
  bool done = false, timed_out = false;
  int status = 0;
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    double t = now_seconds() - origin;
    if (status != 200) {
      error_body.append(data, std::min<size_t>(size, 4096 - std::min<size_t>(error_body.size(), 4096)));
      return true;
    }
    events.clear();
    parser.feed(std::string_view(data, size), events);
    for (const auto& event : events) {
      StreamChunk chunk = parse_stream_chunk(event);
      if (!chunk.error.empty()) {
        r.error = chunk.error;
        return false;
      }
      if (chunk.done) done = true;
      if (chunk.prompt_tokens) r.prompt_tokens = *chunk.prompt_tokens;
      if (!chunk.finish_reason.empty()) r.finish_reason = chunk.finish_reason;
      if (chunk.completion_tokens) final_usage = *chunk.completion_tokens;
      if (chunk.text.empty()) continue;  // role-only, empty, finish or usage-only event
      r.output_text += chunk.text;
      r.arrivals.push_back({t, 1, r.output_text.size()});
      cumulative.push_back(chunk.completion_tokens);
      logprobs.push_back(chunk.logprob_tokens);
    }
    if (t - r.send_time > endpoint_.timeout_s) {
      timed_out = true;
      return false;
    }
    return true;
  };

  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  r.send_time = now_seconds() - origin;
  bool sent = send(req, res, error);
  r.end_time = now_seconds() - origin;
  r.http_status = status;

  if (timed_out || (error == httplib::Error::Read && r.end_time - r.send_time >= endpoint_.timeout_s)) {
    r.error = fmt::format("timed out after {:.0f} s", endpoint_.timeout_s);
  } else if (!r.error.empty()) {
    r.error = "server error in stream: " + r.error;
  } else if (status != 0 && status != 200) {
    r.error = fmt::format("HTTP {}: {}", status, error_body.substr(0, 300));
  } else if (!sent) {
    r.unreachable = error == httplib::Error::Connection;
    r.error = r.arrivals.empty() && !r.unreachable
                  ? fmt::format("connection error before any token: {}", httplib::to_string(error))
                  : fmt::format("connection error: {}", httplib::to_string(error));
  } else if (!done && r.finish_reason.empty()) {
    r.error = "stream ended before a finish_reason or [DONE]";
  } else if (r.arrivals.empty()) {
    r.error = "no generated text in the response";
  }
  r.ok = r.error.empty();
  settle_token_counts(r, cumulative, logprobs, final_usage);
  return r;
}

std::optional<std::string> OpenAiClient::body_of(httplib::Request& req) {
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  if (!send(req, res, error) || res.status != 200) return std::nullopt;
  return std::move(res.body);
}

std::optional<std::string> OpenAiClient::get(const std::string& path) {
  httplib::Request req;
  req.method = "GET";
  req.path = path;
  return body_of(req);
}

std::optional<nlohmann::json> OpenAiClient::post_json(const std::string& path,
                                                      const nlohmann::json& body) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  auto reply = body_of(req);
  if (!reply) return std::nullopt;
  auto json = nlohmann::json::parse(*reply, nullptr, false);
  if (json.is_discarded()) return std::nullopt;
  return json;
}

std::optional<std::string> first_listed_model(OpenAiClient& client) {
  auto body = client.get(client.endpoint().api_base + "/models");
  if (!body) return std::nullopt;
  auto json = nlohmann::json::parse(*body, nullptr, false);
  if (json.is_discarded() || !json.contains("data") || !json["data"].is_array() ||
      json["data"].empty() || !json["data"][0].contains("id") || !json["data"][0]["id"].is_string())
    return std::nullopt;
  return json["data"][0]["id"].get<std::string>();
}

}  // namespace tps::loadgen
