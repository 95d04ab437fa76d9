#include "server/api_server.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <limits>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "core/error.h"
#include "core/timer.h"
#include "engine/text_output.h"
#include "server/client_connection.h"
#include "server/openai_response.h"
#include "server/sse.h"
#include "server/web_app.h"

namespace tps {

using nlohmann::json;

namespace {

// nginx's status for a client that closed the connection before the answer: written
// to the access log, never sent.
constexpr int kClientClosedRequest = 499;
// How often a non-streaming handler looks whether its client is still there while no
// token arrives (queued, or a long prefill).
constexpr double kClientCheckSeconds = 0.1;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 429) res.set_header("Retry-After", "1");
  send_json(res, e.status, error_json(e));
}

json parse_body(const std::string& body) {
  try {
    json j = json::parse(body);
    if (!j.is_object()) throw ApiError(400, "", "the body must be a JSON object");
    return j;
  } catch (const json::parse_error& e) {
    throw ApiError(400, "", fmt::format("malformed JSON body: {}", e.what()), "invalid_json");
  }
}

// OpenAI's answer to a model it does not serve.
ApiError unknown_model(const std::string& name, const std::string& served) {
  return ApiError(404, "model", fmt::format("the model '{}' does not exist: this server serves '{}'", name, served),
                  "model_not_found");
}

std::string new_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  return fmt::format("{}-{:016x}", prefix, salt ^ (++counter * 0x9E3779B97F4A7C15ull));
}

// application/json, with or without parameters (charset=utf-8).
bool is_json(const std::string& content_type) {
  std::string type = content_type.substr(0, content_type.find(';'));
  type.erase(type.find_last_not_of(" \t") + 1);
  type.erase(0, type.find_first_not_of(" \t"));
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  return type == "application/json";
}

bool key_matches(const std::string& given, const std::string& key) {
  // Constant-time over the key's length: no early exit that would leak a prefix.
  unsigned diff = given.size() != key.size();
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(key[i]) ^
                                                  static_cast<unsigned char>(i < given.size() ? given[i] : 0);
  return diff == 0;
}

}  // namespace

// One generation request as its handler sees it: tokens come from the engine and
// leave as text with stop strings applied.
struct ApiServer::Generation {
  Generation(const Tokenizer& tokenizer, ApiRequest request, int32_t last_prompt_token)
      : tokenizer(tokenizer), api(std::move(request)), output(tokenizer, api.stop, last_prompt_token) {}

  // Takes what the engine has produced by `until`; returns the new text for the client
  // and adds the log-probabilities of the new tokens to `lps` when asked for.
  std::string pull(double until, std::vector<TokenLogprob>& lps) {
    std::vector<GeneratedToken> tokens;
    std::string out;
    if (reason != FinishReason::kNone || !stream->wait(tokens, until)) return out;
    for (auto& t : tokens) {
      ++completion_tokens;
      std::string piece = output.push(t.id);
      if (api.top_logprobs >= 0) {
        TokenLogprob lp{token_name(t.id), t.logprob, {}, text.size() + out.size()};
        for (auto [id, p] : t.top) lp.top.emplace_back(token_name(id), p);
        lps.push_back(std::move(lp));
      }
      out += piece;
      if (output.stopped()) {
        stream->cancel();  // frees the sequence's blocks at the engine's next step
        reason = FinishReason::kStop;
        break;
      }
    }
    if (reason == FinishReason::kNone && stream->finished()) {
      out += output.finish();
      reason = output.stopped() ? FinishReason::kStop : stream->finish_reason();
    }
    text += out;
    return out;
  }
  bool done() const { return reason != FinishReason::kNone; }
  std::string token_name(int32_t id) const {
    return api.tokens_as_ids ? fmt::format("token_id:{}", id) : tokenizer.token_to_piece(id);
  }
  Usage usage() const { return {stream->prompt_tokens(), completion_tokens, stream->cached_tokens()}; }
  RequestTimes times() const {
    RequestTimes t = stream->times();
    if (t.finished == 0) t.finished = now_seconds();
    return t;
  }

  const Tokenizer& tokenizer;
  ApiRequest api;
  int32_t index = 0;  // which of the request's choices
  ResponseMeta meta;
  std::shared_ptr<RequestStream> stream;
  TextOutput output;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  int32_t completion_tokens = 0;
  FinishReason reason = FinishReason::kNone;
  double deadline = 0;
  std::string remote;
  bool recorded = false;
  std::optional<InFlight::Ticket> in_flight;  // until the response is written
};

namespace {

// A request's usage: its prompt once, the tokens of all its choices (ApiServer::Choices,
// a type private to the class, hence the template).
template <typename Choices>
Usage request_usage(const Choices& choices) {
  Usage usage = choices[0]->usage();
  usage.completion_tokens = 0;
  for (const auto& g : choices) usage.completion_tokens += g->completion_tokens;
  return usage;
}

ApiError timeout_error(double timeout_s) {
  return ApiError(408, "", fmt::format("the request took longer than {} s", timeout_s), "request_timeout",
                  "timeout_error");
}

}  // namespace

ApiServer::ApiServer(const Tokenizer& tokenizer, Engine& engine, ServerMetrics& metrics, AccessLog& log,
                     ChatFamily chat, const ServerOptions& options)
    : tokenizer_(tokenizer), engine_(engine), metrics_(metrics), log_(log), chat_(chat), options_(options),
      http_(std::make_unique<HttpServer>(options.connections)) {
  setup_routes();
}

ApiServer::~ApiServer() = default;

void ApiServer::take_listener(HttpServer& other) { http_->take_listener(other); }

void ApiServer::run() { http_->run(); }

void ApiServer::stop() {
  stats_->close();  // its subscribers would otherwise hold their threads forever
  http_->stop();
}

void ApiServer::refuse_new_requests() { refusing_ = true; }

std::string ApiServer::outcome_of(const Generation& g) const {
  // A generation cancelled while the server drains was ended by the shutdown ("abort",
  // its finish_reason); otherwise its client went away first.
  if (g.reason == FinishReason::kCancelled && !refusing_) return "cancelled";
  return finish_reason_name(g.reason);
}

void ApiServer::record(Generation& g, const std::string& outcome, int status) {
  if (g.recorded) return;
  g.recorded = true;
  Usage u = g.usage();
  RequestTimes t = g.times();
  metrics_.record_request({outcome, u.prompt_tokens, u.cached_tokens, u.completion_tokens, t});
  auto ms = [](double a, double b) { return a > 0 && b > 0 ? (b - a) * 1000.0 : 0.0; };
  json entry = {{"remote", g.remote},
                {"method", "POST"},
                {"path", g.meta.endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions"},
                {"status", status},
                {"id", g.meta.id},
                {"stream", g.api.stream},
                {"finish", outcome},
                {"prompt_tokens", u.prompt_tokens},
                {"cached_tokens", u.cached_tokens},
                {"completion_tokens", u.completion_tokens},
                {"queue_ms", ms(t.arrived, t.scheduled)},
                {"ttft_ms", ms(t.arrived, t.first_token)},
                {"e2e_ms", ms(t.arrived, t.finished)}};
  if (g.api.n > 1) entry["choice"] = g.index;  // each choice is logged, and counted, as its own line
  log_.write(entry);
}

bool ApiServer::serves_model(const std::string& name) const {
  return name == options_.model_name ||
         std::find(options_.model_aliases.begin(), options_.model_aliases.end(), name) != options_.model_aliases.end();
}

void ApiServer::setup_routes() {
  HttpServer& s = *http_;
  s.set_payload_max_length(options_.max_body_bytes);
  // Answered before the body is read: the connection closes after the answer.
  auto refuse = [](httplib::Response& res, const ApiError& e) {
    send_error(res, e);
    HttpServer::close_after_response(res);
    return httplib::Server::HandlerResponse::Handled;
  };
  s.set_pre_routing_handler([this, refuse](const httplib::Request& req, httplib::Response& res) {
    if (refusing_) {
      if (req.path != "/health")
        return refuse(res, ApiError(503, "", "the server is shutting down", "server_shutting_down", "server_error"));
      send_json(res, 503, {{"status", "shutting down"}});
      HttpServer::close_after_response(res);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!options_.api_key.empty() && req.path.rfind("/v1", 0) == 0) {
      std::string auth = req.get_header_value("Authorization");
      std::string given = auth.rfind("Bearer ", 0) == 0 ? auth.substr(7) : req.get_header_value("x-api-key");
      if (!key_matches(given, options_.api_key))
        return refuse(res, ApiError(401, "", "invalid or missing API key (send 'Authorization: Bearer KEY')",
                                    "invalid_api_key", "authentication_error"));
    }
    if (req.method == "POST" && req.has_header("Content-Type") && !is_json(req.get_header_value("Content-Type")))
      return refuse(res, ApiError(415, "",
                                  fmt::format("the body must be JSON, sent as Content-Type: application/json (got "
                                              "'{}')",
                                              req.get_header_value("Content-Type")),
                                  "unsupported_media_type"));
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_) return;
    if (res.status == 413) {
      send_error(res, ApiError(413, "", fmt::format("request body exceeds {} bytes", options_.max_body_bytes),
                               "body_too_large"));
    } else if (res.status == 404 && !http_->allowed_methods(req.path).empty()) {
      const std::string allowed = http_->allowed_methods(req.path);
      res.set_header("Allow", allowed);
      send_error(res, ApiError(405, "", fmt::format("{} is not allowed on {}: it takes {}", req.method, req.path, allowed),
                               "method_not_allowed"));
    } else if (res.status == 404) {
      send_error(res, ApiError(404, "", fmt::format("no route for {} {}", req.method, req.path), "not_found"));
    } else {
      send_error(res, ApiError(res.status, "", fmt::format("HTTP error {}", res.status)));
    }
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, ApiError(500, "", what, "internal_error", "server_error"));
  });
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    bool generation = req.path == "/v1/completions" || req.path == "/v1/chat/completions";
    // Logged with its details when it ends.
    if (generation && (res.status == 200 || res.status == kClientClosedRequest)) return;
    if (res.status >= 400) metrics_.record_error(res.status);
    log_.write({{"remote", req.remote_addr}, {"method", req.method}, {"path", req.path}, {"status", res.status}});
  });

  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generate(Endpoint::kCompletions, req, res);
  });
  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generate(Endpoint::kChat, req, res);
  });
  auto model_object = [this](const std::string& id) {
    return json{{"id", id},
                {"object", "model"},
                {"created", 0},
                {"owned_by", "tps"},
                {"meta", {{"n_ctx", engine_.context()}, {"n_vocab", tokenizer_.vocab_size()}}}};
  };
  s.Get("/v1/models", [model_object, this](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"object", "list"}, {"data", json::array({model_object(options_.model_name)})}});
  });
  s.Get("/v1/models/(.+)", [model_object, this](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (!serves_model(id)) return send_error(res, unknown_model(id, options_.model_name));
    send_json(res, 200, model_object(id));
  });
  s.Get("/health", [](const httplib::Request&, httplib::Response& res) { send_json(res, 200, {{"status", "ok"}}); });
  s.Get("/", [](const httplib::Request&, httplib::Response& res) { serve_web_app(res); });
  stats_ = std::make_unique<StatsStream>(engine_, metrics_.live());
  s.Get("/v1/stats/stream", [this](const httplib::Request&, httplib::Response& res) { stats_->subscribe(res); });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(engine_.stats()), "text/plain; version=0.0.4");
  });
  s.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      json j = parse_body(req.body);
      if (!j.contains("content") || !j["content"].is_string())
        throw ApiError(400, "content", "'content' must be a string");
      bool add_special = j.value("add_special", false);
      send_json(res, 200, {{"tokens", tokenizer_.encode(j["content"].get<std::string>(), add_special, true)}});
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const json::exception& e) {
      send_error(res, ApiError(400, "", e.what()));
    }
  });
  s.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      json j = parse_body(req.body);
      if (!j.contains("tokens") || !j["tokens"].is_array())
        throw ApiError(400, "tokens", "'tokens' must be an array of token ids");
      std::vector<int32_t> ids;
      for (const auto& t : j["tokens"]) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tokenizer_.vocab_size())
          throw ApiError(400, "tokens",
                         fmt::format("'tokens' must hold integers in [0, {})", tokenizer_.vocab_size()));
        ids.push_back(t.get<int32_t>());
      }
      send_json(res, 200, {{"content", tokenizer_.decode(ids)}});
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  });
}

void ApiServer::handle_generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  Choices choices;
  const int32_t ctx = engine_.context();
  try {
    ApiRequest api = parse_api_request(endpoint, req.body, {tokenizer_.vocab_size(), ctx});
    if (!api.model.empty() && !serves_model(api.model)) throw unknown_model(api.model, options_.model_name);
    std::vector<int32_t> prompt;
    const char* prompt_field = endpoint == Endpoint::kChat ? "messages" : "prompt";
    if (endpoint == Endpoint::kChat) {
      prompt = tokenizer_.encode(render_chat(chat_, api.messages), true, true);
    } else if (api.prompt_is_tokens) {
      prompt = api.prompt_tokens;
    } else {
      prompt = tokenizer_.encode(api.prompt_text, true, true);
    }
    if (prompt.empty()) throw ApiError(400, prompt_field, fmt::format("'{}' gives no tokens", prompt_field));
    if (static_cast<int32_t>(prompt.size()) >= ctx)
      throw ApiError(400, prompt_field,
                     fmt::format("'{}' is {} tokens; the context holds {}, so it must be shorter", prompt_field,
                                 prompt.size(), ctx),
                     "context_length_exceeded");
    if (api.n > engine_.config().max_queue)
      throw ApiError(400, "n", fmt::format("'n' is {}; this server queues at most {} sequences (--max-queue)", api.n,
                                           engine_.config().max_queue));
    for (int32_t i = 0; i < api.n; ++i) {
      auto g = std::make_shared<Generation>(tokenizer_, api, prompt.back());
      g->index = i;
      GenerationRequest gen;
      gen.max_tokens = api.max_tokens.value_or(endpoint == Endpoint::kChat ? ctx : 16);
      gen.prompt = prompt;
      gen.sampling = api.sampling;
      gen.sampling.seed += static_cast<uint64_t>(i);  // each choice its own draws, all from the request's seed
      gen.ignore_eos = api.ignore_eos;
      gen.speculative = api.speculative;
      gen.top_logprobs = api.top_logprobs;
      g->stream = engine_.submit(std::move(gen));
      if (!g->stream) {
        for (auto& c : choices) c->stream->cancel();  // none of the request runs
        throw ApiError(429, "", "the server is busy: too many requests are waiting", "queue_full", "rate_limit_error");
      }
      g->in_flight.emplace(in_flight_, g->stream);
      choices.push_back(std::move(g));
    }
  } catch (const ApiError& e) {
    send_error(res, e);
    return;
  }
  const ResponseMeta meta{
      new_id(endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl"),
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
      choices[0]->api.model.empty() ? options_.model_name : choices[0]->api.model, endpoint};
  const double deadline = options_.request_timeout_s > 0 ? now_seconds() + options_.request_timeout_s
                                                         : std::numeric_limits<double>::infinity();
  for (auto& g : choices) {
    g->meta = meta;
    g->deadline = deadline;
    g->remote = req.remote_addr;
  }
  if (choices[0]->api.stream) {
    respond_stream(choices, res);
  } else {
    respond_plain(choices, res);
  }
}

void ApiServer::respond_plain(const Choices& choices, httplib::Response& res) {
  const ClientConnection client(HttpServer::current_socket());
  const double deadline = choices[0]->deadline;
  auto end_all = [&](const std::string& outcome, int status) {
    for (auto& g : choices) {
      g->stream->cancel();  // frees the sequence's blocks at the engine's next step
      record(*g, outcome, status);
    }
  };
  auto all_done = [&] { return std::all_of(choices.begin(), choices.end(), [](const auto& g) { return g->done(); }); };
  while (!all_done()) {
    if (client.closed()) {
      end_all("cancelled", kClientClosedRequest);
      res.status = kClientClosedRequest;
      return;
    }
    if (now_seconds() >= deadline) {
      end_all("timeout", 408);
      send_error(res, timeout_error(options_.request_timeout_s));
      return;
    }
    // Every choice each pass, so each meets its stop strings as its tokens come: the
    // first unfinished one waits for tokens, the others take what the same steps gave.
    double until = std::min(now_seconds() + kClientCheckSeconds, deadline);
    for (const auto& g : choices) {
      if (g->done()) continue;
      g->pull(until, g->logprobs);
      until = 0;
    }
  }
  std::vector<ChoiceBody> bodies;
  for (const auto& g : choices) {
    json lps = g->api.top_logprobs >= 0 ? logprobs_json(g->meta.endpoint, g->logprobs) : json(nullptr);
    bodies.push_back({g->text, g->reason, std::move(lps)});
  }
  send_json(res, 200, completion_body(choices[0]->meta, bodies, request_usage(choices),
                                      timings_json(choices[0]->times(), choices[0]->usage())));
  for (auto& g : choices) record(*g, outcome_of(*g), 200);
}

void ApiServer::respond_stream(const Choices& choices, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  auto started = std::make_shared<bool>(false);
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, choices, started, &meta = choices[0]->meta, &api = choices[0]->api](size_t, httplib::DataSink& sink) {
        auto send = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
        if (!*started) {
          *started = true;
          if (meta.endpoint == Endpoint::kChat)
            for (const auto& g : choices)
              if (!send(sse_event(role_chunk(meta, g->index)))) return false;
        }
        const double deadline = choices[0]->deadline;
        bool sent = false, ok = true;
        // The first unfinished choice waits for its tokens; the others take what the
        // same steps gave them. With several running, the wait is short, so a choice
        // held back (queued, preempted) does not make the others' tokens come in bursts.
        const auto running = std::count_if(choices.begin(), choices.end(), [](const auto& g) { return !g->recorded; });
        double until = std::min(now_seconds() + (running > 1 ? 0.02 : 0.25), deadline);
        for (const auto& g : choices) {
          if (g->recorded) continue;
          std::vector<TokenLogprob> lps;
          std::string text = g->pull(until, lps);
          until = 0;
          if (!text.empty() || !lps.empty()) {
            json lp = lps.empty() ? json(nullptr) : logprobs_json(meta.endpoint, lps);
            json chunk = stream_chunk(meta, g->index, text, FinishReason::kNone, lp);
            if (api.continuous_usage) chunk["usage"] = usage_json(g->usage());
            ok = ok && send(sse_event(chunk));
            sent = true;
          }
          if (g->done()) {
            json last = stream_chunk(meta, g->index, "", g->reason, nullptr);
            last["timings"] = timings_json(g->times(), g->usage());
            if (api.continuous_usage) last["usage"] = usage_json(g->usage());
            // Counted before the last events go out, so a client that reads [DONE] and
            // then scrapes /metrics sees this request.
            record(*g, outcome_of(*g), 200);
            ok = ok && send(sse_event(last));
            sent = true;
          }
        }
        const bool finished = std::all_of(choices.begin(), choices.end(), [](const auto& g) { return g->recorded; });
        if (!sent && !finished) {
          if (now_seconds() >= deadline) {
            for (const auto& g : choices) {
              g->stream->cancel();
              record(*g, "timeout", 200);
            }
            send(sse_event(error_json(timeout_error(options_.request_timeout_s))));
            send(sse_done());
            sink.done();
            return true;
          }
          // Nothing new: a comment line finds out whether the client is still there.
          ok = send(sse_keepalive());
        }
        if (!ok) {
          for (const auto& g : choices) g->stream->cancel();
          return false;
        }
        if (finished) {
          if (api.include_usage) send(sse_event(usage_chunk(meta, request_usage(choices))));
          send(sse_done());
          sink.done();
        }
        return true;
      },
      [this, choices](bool) {
        // The client went away before the end: stop the generations, free their blocks.
        for (const auto& g : choices) {
          if (g->recorded) continue;
          g->stream->cancel();
          record(*g, "cancelled", 200);
        }
      });
}

}  // namespace tps
